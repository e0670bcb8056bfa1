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
    assert not {"mujoco", "torch", "warp"} & loaded, sorted(loaded)
    assert "numpy" in loaded  # the one it needs


@pytest.mark.parametrize(
    "statement",
    [
        "import orbitlab_tasks",
        "from orbitlab.registry import get_task; get_task('docking'); get_task('Formation')",
        "import orbitlab_tasks.formation",
    ],
)
def test_task_registration_loads_no_torch_mujoco_or_warp(statement):
    """Tasks register with factories imported on first call (`LazyFactory`), so a process
    that imports a task package for its numpy parts stays light."""
    loaded = _loaded_after(statement)
    assert not {"mujoco", "torch", "warp"} & loaded, sorted(loaded)


def test_lazily_registered_tasks_still_build_through_gymnasium():
    import gymnasium as gym

    env = gym.make("orbitlab_tasks:Orbitlab-Pointing-v0")
    assert env.observation_space.shape[0] > 0
    env.close()


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
        "orbitlab.envs",
    ],
)
def test_every_public_name_of_a_package_exists(package):
    module = __import__(package, fromlist=["__all__"])
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert module.__all__ and not missing, missing


def test_the_bridge_studys_controller_processes_need_no_torch_mujoco_or_warp():
    """The leader and followers of the formation bridge study (and the ROS-style nodes) build
    their controllers (CW-LQR design, NMPC solvers) on numpy and CasADi alone."""
    pytest.importorskip("casadi", reason="extra 'nmpc' not installed")
    loaded = _loaded_after(
        "from orbitlab_tasks.formation.bridge_study.leader import LeaderController\n"
        "from orbitlab_tasks.formation.bridge_study.followers import FollowerControllers\n"
        "import orbitlab_tasks.formation.ros_nodes\n"
        "LeaderController(); FollowerControllers()"
    )
    assert not {"mujoco", "torch", "warp"} & loaded, sorted(loaded)
