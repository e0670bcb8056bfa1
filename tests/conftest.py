"""Shared builders for the orbit-coupled simulation tests."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from orbitlab import OrbitInit, SimSpec

MU = 398600.4418
RE = 6378.137


def free_body_xml(
    integrator: str = "RK4", timestep: float = 0.01, inertial: str | None = None, extra: str = ""
) -> str:
    """A single free body named 'spacecraft' (100 kg box unless `inertial` is given)."""
    body = inertial or '<geom type="box" size="0.5 0.3 0.2" mass="100"/>'
    return f"""
<mujoco><option timestep="{timestep}" integrator="{integrator}"/>
  <worldbody><body name="spacecraft"><freejoint/>{body}</body>{extra}</worldbody>
</mujoco>"""


def only(spec: SimSpec, *switches: str) -> SimSpec:
    """Turn every orbit-layer switch off except those named."""
    for name in ("use_j2", "use_gravity_gradient", "use_drag", "use_srp", "use_magnetic"):
        setattr(spec.orbit, name, name in switches)
    return spec


def circular_orbit(alt_km: float = 400.0, t: float = 0.0, incl_rad: float = 0.0) -> OrbitInit:
    r = RE + alt_km
    v = np.sqrt(MU / r)
    return OrbitInit(
        R_eci=[r, 0.0, 0.0], V_eci=[0.0, v * np.cos(incl_rad), v * np.sin(incl_rad)], t=t
    )


def quat_to_mat(q: np.ndarray) -> np.ndarray:
    """World-from-body rotation of a unit quaternion (w, x, y, z), written out by hand."""
    w, x, y, z = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _warp_devices() -> list[str]:
    forced = os.environ.get("ORBITLAB_TEST_DEVICE")
    if forced:
        return [forced]
    import warp as wp

    return ["cuda:0"] if wp.get_cuda_device_count() > 0 else ["cpu"]


@pytest.fixture(scope="session", params=_warp_devices())
def warp_device(request) -> str:
    """Warp device of the tests that can run on a GPU: ORBITLAB_TEST_DEVICE when set (e.g.
    'cuda:0', 'cpu'), else CUDA when Warp sees a GPU, else Warp's CPU device. The id
    ([cpu], [cuda:0]) names the device in the test's name."""
    return request.param


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def ros_graph(monkeypatch):
    """`ros_standin`'s rclpy and ROS 2 message packages in sys.modules for the test; returns
    their graph of publishers and subscriptions (`RosGraph`), matched by DDS's QoS rules."""
    from ros_standin import RosGraph

    graph = RosGraph()
    for name, module in graph.modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    return graph


TRAIN_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "train.py"


@dataclass(frozen=True)
class TinyRun:
    """A finished scripts/train.py run: its directory and the finished process."""

    run: Path
    result: subprocess.CompletedProcess


@pytest.fixture(scope="session")
def tiny_rsl_rl_run(tmp_path_factory) -> TinyRun:
    """One tiny rsl-rl training run (Detumble-RW, 8 worlds, 4 iterations in segments of 2,
    checkpoint selection, a 4-world final evaluation, export), shared by the tests that need
    a run's artifacts or a checkpoint: each training process costs ~10 s of start-up."""
    pytest.importorskip("rsl_rl")
    pytest.importorskip("hydra")
    run = tmp_path_factory.mktemp("tiny_train") / "run"
    result = subprocess.run(
        [
            sys.executable,
            str(TRAIN_SCRIPT),
            "num_envs=8",
            "eval_num_envs=4",
            "agent.max_iterations=4",
            "agent.save_interval=2",
            "agent.num_steps_per_env=8",
            "select_best=true",
            "select_num_envs=2",
            f"hydra.run.dir={run}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return TinyRun(run, result)
