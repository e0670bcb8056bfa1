"""The reference's complete CPU example runs with only its import lines changed."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np

DEMO = Path(__file__).resolve().parents[1] / "scripts" / "physics_demo.py"


def test_reference_example_runs_and_prints_the_environment(capsys):
    runpy.run_path(str(DEMO), run_name="__main__")
    out = capsys.readouterr().out
    density = float(re.search(r"density \[kg/m\^3\]: \[([0-9.e+-]+)\]", out).group(1))
    # 400 km circular orbit: the chief stays at h0 to ~1e-6 km over 1 s, so rho ~ rho0.
    np.testing.assert_allclose(density, 2.62e-13, rtol=1e-6)
    assert "Chief illumination factor: [1.]" in out
    assert "Chief magnetic field [T]:" in out


def test_example_differs_from_the_reference_only_in_its_imports():
    source = DEMO.read_text()
    imports = [line for line in source.splitlines() if line.startswith(("from ", "import "))]
    assert imports == [
        "import numpy as np",
        (
            "from orbitlab.compat import MagneticBodySpec, MjoSpec, OrbitInit, SurfaceSpec, "
            "mjo_forward, mjo_step"
        ),
        "from orbitlab.testdata import FREE_BODY_XML",
    ]
