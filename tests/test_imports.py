"""Import weight and the public package APIs."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _loaded_after(statement: str) -> set[str]:
    """Top-level module names loaded by `statement` in a fresh interpreter."""
    code = f"import sys\n{statement}\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("statement", ["import orbitlab.orbit", "import orbitlab.orbit.frames"])
def test_orbit_math_loads_neither_mujoco_nor_torch(statement):
    loaded = _loaded_after(statement)
    assert "mujoco" not in loaded and "torch" not in loaded, sorted(loaded)
    assert "numpy" in loaded and "warp" in loaded  # the two it needs


def test_top_level_names_resolve_lazily_to_their_modules():
    import orbitlab
    from orbitlab.sim.spec import SimSpec

    assert orbitlab.SimSpec is SimSpec
    assert set(orbitlab.__all__) <= set(dir(orbitlab))
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        orbitlab.NoSuchName  # noqa: B018


@pytest.mark.parametrize(
    "package",
    [
        "orbitlab.orbit",
        "orbitlab.sim",
        "orbitlab.scene",
        "orbitlab.sensors",
        "orbitlab.actuators",
        "orbitlab.managers",
    ],
)
def test_every_public_name_of_a_package_exists(package):
    module = __import__(package, fromlist=["__all__"])
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert module.__all__ and not missing, missing
