"""Per-world health: a broken world is flagged with its reason and frozen; no other world
notices; the env terminates and resets it. And the physics API's input gaps."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from orbitlab import OrbitInit, ReactionWheelCfg, SimSpec, SurfaceCfg
from orbitlab.sim import health
from orbitlab.testdata import FREE_BODY_XML

ORBIT = OrbitInit(R_eci=[6778.137, 0.0, 0.0], V_eci=[0.0, 7.6686, 0.0])


def model_with_drag_and_wheel(
    timestep: float = 0.1, wheel_inertia: float = 2e-3, max_speed: float = 600.0
):
    spec = SimSpec.from_xml_path(FREE_BODY_XML)
    spec.orbit.add_surface(
        SurfaceCfg(name="panel", body_name="spacecraft", normal_body=[0, 1, 0], area=2.0)
    )
    spec.orbit.add_reaction_wheel(
        ReactionWheelCfg(
            name="rw",
            body_name="spacecraft",
            axis_body=[0, 0, 1],
            inertia=wheel_inertia,
            max_speed=max_speed,
        )
    )
    return spec.compile(timestep=timestep)


def run(model, spoil=None, nworld: int = 5, steps: int = 40):
    data = model.make_data(nworld=nworld, orbit=ORBIT)
    data.bind("qvel")[:, 3:6] = [0.1, 0.05, -0.02]
    data.wheel_torque[:] = 1e-3
    data.forward()
    if spoil is not None:
        spoil(data)
    data.step(steps)
    return data


def test_broken_worlds_are_flagged_frozen_and_isolated():
    model = model_with_drag_and_wheel()

    def spoil(data):
        data.bind("qvel")[1, 0] = math.nan  # a NaN body velocity with drag surfaces
        data.R[2] = [6000.0, 0.0, 0.0]  # the chief inside the Earth
        data.wheel_torque[3] = math.nan  # a NaN command written straight to the data

    clean, broken = run(model), run(model, spoil)
    assert broken.unhealthy() == {
        1: health.describe(health.NONFINITE_STATE),
        2: health.describe(health.BELOW_SURFACE),
        3: health.describe(health.NONFINITE_COMMAND),
    }
    for name in ("qpos", "qvel"):
        for world in (0, 4):
            assert np.array_equal(broken.bind(name)[world], clean.bind(name)[world])
    for world in (0, 4):
        assert np.array_equal(broken.R[world], clean.R[world])
        assert np.array_equal(broken.wheel_momentum[world], clean.wheel_momentum[world])
    # frozen: the chief and clock did not move, the NaN stayed in its own world
    assert np.all(np.isfinite(broken.R))
    assert np.array_equal(broken.t[1:4], np.zeros(3) + ORBIT.resolved_time())
    assert np.all(np.isfinite(broken.wrench_buffer[[0, 4]]))
    # a reset clears the flag
    broken.reset([1, 2, 3], orbit=ORBIT)
    assert broken.unhealthy() == {}


def test_a_non_finite_central_body_flags_every_world():
    """gm=inf is refused at compile time (test_validation); written past the check into
    the compiled model, the kernel still flags it instead of spreading inf."""
    model = model_with_drag_and_wheel()
    model.central_body.gm = math.inf
    data = run(model, nworld=2, steps=3)
    assert set(data.unhealthy()) == {0, 1}
    assert np.all(np.isfinite(data.bind("qvel")))


def test_env_terminates_and_resets_a_broken_world():
    from orbitlab.envs.gym import load_cfg
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab_tasks import task_entry

    env = ManagerBasedRLEnv(load_cfg(task_entry("Detumble-RW").env_cfg, num_envs=3))
    try:
        env.reset(seed=0)
        env.scene.data.bind("qvel")[1, 3] = math.nan
        obs, reward, terminated, truncated, extras = env.step(torch.zeros((3, 3)))
        assert terminated.tolist() == [False, True, False]
        assert truncated.tolist() == [False, False, False]
        assert reward[1] == 0.0 and torch.all(torch.isfinite(reward))
        assert extras["log"]["Episode_Termination/sim_unhealthy"] == 1
        assert extras["unhealthy_reasons"] == {1: health.describe(health.NONFINITE_STATE)}
        assert torch.all(torch.isfinite(obs["policy"])) and env.unhealthy_count == 1
        assert env.scene.data.unhealthy() == {}  # reset with the others' episodes going on
        assert env.episode_length_buf.tolist() == [1, 0, 1]
    finally:
        env.close()


def test_mujoco_instability_is_flagged():
    """MuJoCo resets a world with a huge qvel by itself; that world is marked, not hidden."""
    model = model_with_drag_and_wheel(timestep=0.01)
    data = model.make_data(nworld=2, orbit=ORBIT)
    data.bind("qvel")[0, 0] = 1e11  # MuJoCo's own limit is 1e10
    data.step(1)
    assert data.unhealthy()[0] in (
        health.describe(health.MUJOCO_UNSTABLE),
        health.describe(health.DIVERGED),
    )
    assert 1 not in data.unhealthy()


def test_wheel_speed_limit_holds_for_a_tiny_rotor():
    model = model_with_drag_and_wheel(timestep=0.1, wheel_inertia=1e-8, max_speed=600.0)
    data = model.make_data(nworld=1, orbit=ORBIT)
    data.wheel_torque[:] = 0.1  # the max torque: 1e6 rad/s per step on this rotor
    data.step(20)
    assert abs(data.wheel_speed()[0, 0]) <= 600.0 * (1 + 1e-9)


@pytest.mark.parametrize(
    "nworld, message",
    [
        (2.7, "nworld must be an integer >= 1, got 2.7"),
        ("4", "nworld must be an integer >= 1, got '4'"),
        (0, "nworld must be >= 1 and < 2**31, got 0"),
        (2**31, "nworld must be >= 1 and < 2**31, got 2147483648"),
    ],
)
def test_nworld_is_checked(nworld, message):
    model = model_with_drag_and_wheel()
    with pytest.raises(ValueError, match=message.replace("*", r"\*").replace(".", r"\.")):
        model.make_data(nworld=nworld, orbit=ORBIT)


def test_step_count_and_timesteps_are_checked():
    model = model_with_drag_and_wheel()
    data = model.make_data(nworld=1, orbit=ORBIT)
    for bad in (-3, 1.5, True):
        with pytest.raises(ValueError, match=f"nstep must be an integer >= 0, got {bad!r}"):
            data.step(bad)
    xml = Path(FREE_BODY_XML).read_text().replace('timestep="0.01"', 'timestep="-0.01"')
    with pytest.raises(ValueError, match="the MJCF's option timestep must be > 0 s, got -0.01"):
        SimSpec.from_xml_string(xml).compile()
    with pytest.raises(ValueError, match="timestep must be a number of seconds > 0, got 'x'"):
        SimSpec.from_xml_path(FREE_BODY_XML).compile(timestep="x")


def test_a_diverging_chief_step_is_refused():
    model = model_with_drag_and_wheel(timestep=1e4)
    with pytest.raises(
        ValueError,
        match=r"world 0: the chief's RK4 step of 10000 s is too long "
        r"for its orbit \(period 5554 s\): at most 110\.5 s",
    ):
        model.make_data(nworld=1, orbit=ORBIT)


def test_on_a_gpu_a_non_finite_command_freezes_its_world_without_a_host_read(monkeypatch):
    """Built as on a GPU (`host_reads_are_free` False), `set_command` makes no host read: a
    world given a NaN command is frozen (NONFINITE_COMMAND) and reset by the env, holding a
    zero command; the other worlds step exactly as with a finite command."""
    from orbitlab.envs.gym import load_cfg
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab_tasks import task_entry

    monkeypatch.setattr("orbitlab.sync.host_reads_are_free", lambda device: False)

    def rollout(spoil: bool):
        env = ManagerBasedRLEnv(load_cfg(task_entry("Detumble-RW").env_cfg, num_envs=3))
        env.reset(seed=0)
        group = next(iter(env.scene.actuators.values()))
        command = torch.full((3, group.num), 1e-3, dtype=torch.float64)
        if spoil:
            command[1, 0] = math.nan
        group.set_command(command)
        assert torch.all(torch.isfinite(group.command))
        codes = env.scene.data.unhealthy()
        out = env.step(torch.zeros((3, 3)))
        return env, codes, out

    _, clean_codes, clean = rollout(False)
    env, codes, (obs, reward, terminated, _, extras) = rollout(True)
    assert clean_codes == {} and codes == {1: health.describe(health.NONFINITE_COMMAND)}
    assert terminated.tolist() == [False, True, False] and reward[1] == 0.0
    assert extras["unhealthy_reasons"] == {1: health.describe(health.NONFINITE_COMMAND)}
    for world in (0, 2):
        assert torch.equal(obs["policy"][world], clean[0]["policy"][world])
    assert env.scene.data.unhealthy() == {}


def test_on_a_gpu_a_non_finite_action_freezes_its_env_without_a_host_read(monkeypatch):
    """Built as on a GPU, a NaN in one env's action is not refused (that check would wait
    for the device): the env is frozen (NONFINITE_ACTION), ends with reward 0 and is
    reset; the others step exactly as with a zero action in that env."""
    from orbitlab.envs.gym import load_cfg
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab_tasks import task_entry

    monkeypatch.setattr("orbitlab.sync.host_reads_are_free", lambda device: False)
    runs = []
    for spoil in (False, True):
        env = ManagerBasedRLEnv(load_cfg(task_entry("Detumble-RW").env_cfg, num_envs=3))
        env.reset(seed=0)
        action = torch.full((3, 3), 0.5)
        action[1] = math.inf if spoil else 0.0
        runs.append(env.step(action))
    (clean_obs, *_), (obs, reward, terminated, _, extras) = runs
    assert terminated.tolist() == [False, True, False] and reward[1] == 0.0
    assert extras["unhealthy_reasons"] == {1: health.describe(health.NONFINITE_ACTION)}
    for world in (0, 2):
        assert torch.equal(obs["policy"][world], clean_obs["policy"][world])
