"""The fused actuator kernel (`orbitlab.actuators.fused`) against the torch groups it replaces.

Two scenes built alike, one with `fused_actuators=False` (each group's torch `apply`, the
reference), take the same commands, failures, partial resets and state loads side by side.
The kernel follows the torch models' float operations in the same order, so every output,
internal state and physics array must be equal bit for bit."""

from __future__ import annotations

import pytest
import torch

from orbitlab.actuators.base import FailureCfg
from orbitlab.actuators.momentum import (
    ControlMomentGyroGroupCfg,
    MagnetorquerGroupCfg,
    ReactionWheelGroupCfg,
)
from orbitlab.actuators.thrusters import ThrusterGroup, ThrusterGroupCfg
from orbitlab.scene.entities import SpacecraftCfg
from orbitlab.scene.scene import Scene, SceneCfg
from orbitlab.sim.elements import (
    ControlMomentGyroCfg,
    ElementSet,
    MagnetorquerCfg,
    ReactionWheelCfg,
    ThrusterCfg,
)

DIRECTIONS = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
FAILURES = FailureCfg(stuck_off_prob=0.1, stuck_on_prob=0.1, degraded_prob=0.2)


def groups() -> dict:
    """Every fused model (PWM with non-contiguous columns, Schmitt, continuous, lagged
    wheels, wheels with friction, magnetorquers, CMGs) with lags, gains and failures,
    beside groups that keep their torch `apply` (latency, misalignment)."""
    return {
        "pwm": ThrusterGroupCfg(
            elements=["t0", "t2"],
            pwm_period_s=0.05,
            min_on_time_s=0.012,
            gain_range=(0.8, 1.0),
            failures=FAILURES,
            seed=1,
        ),
        "schmitt": ThrusterGroupCfg(
            elements=["t1", "t3"], mode="schmitt", min_on_time_s=0.03, time_constant_s=0.02
        ),
        "continuous": ThrusterGroupCfg(elements=["t4"], mode="continuous", failures=FAILURES),
        "late": ThrusterGroupCfg(elements=["t5"], latency_steps=2),
        "wheels": ReactionWheelGroupCfg(
            elements=["w0"], time_constant_s=0.05, gain_range=(0.9, 1.1), seed=2
        ),
        "friction": ReactionWheelGroupCfg(elements=["w1"], viscous_nms=1e-4, coulomb_nm=1e-4),
        "mtq": MagnetorquerGroupCfg(elements=["m0"], failures=FAILURES, seed=3),
        "tilted": MagnetorquerGroupCfg(elements=["m1"], misalignment_std_rad=0.01),
        "cmg": ControlMomentGyroGroupCfg(time_constant_s=0.03),
    }


def make(fused: bool, num_envs: int = 8) -> Scene:
    elements = ElementSet(
        thrusters=[
            ThrusterCfg(
                name=f"t{i}",
                body_name="spacecraft",
                max_force=2.0,
                direction_body=d,
                position_body=(0.0, 0.2, 0.1),
            )
            for i, d in enumerate(DIRECTIONS)
        ],
        wheels=[
            ReactionWheelCfg(
                name=f"w{i}",
                body_name="spacecraft",
                axis_body=axis,
                inertia=1e-3,
                max_speed=50.0,
                max_torque=0.01,
            )
            for i, axis in enumerate([(0, 0, 1), (1, 0, 0)])
        ],
        magnetorquers=[
            MagnetorquerCfg(name=f"m{i}", body_name="spacecraft", max_dipole=0.2, axis_body=axis)
            for i, axis in enumerate([(1, 0, 0), (0, 1, 0)])
        ],
        cmgs=[ControlMomentGyroCfg(name="c", body_name="spacecraft", max_rate=0.5)],
    )
    sc = SpacecraftCfg(mjcf="free_body", elements=elements, actuators=groups())
    cfg = SceneCfg(num_envs=num_envs, entities={"sat": sc}, timestep_s=0.01)
    cfg.fused_actuators = fused
    return Scene(cfg)


STATE = ("command", "output", "gain", "failure", "lag_state", "low", "high")
THRUSTER_STATE = ("phase", "on_time", "valve_open", "open_steps")


def assert_same(reference: Scene, fused: Scene) -> None:
    for name, ref in reference.actuators.items():
        got = fused.actuators[name]
        attrs = STATE + (THRUSTER_STATE if isinstance(ref, ThrusterGroup) else ())
        for attr in attrs:
            assert torch.equal(getattr(got, attr), getattr(ref, attr)), (name, attr)
    for array in ("thruster_force", "wheel_torque", "mtq_dipole", "cmg_rate", "qvel"):
        assert torch.equal(fused.view.array(array), reference.view.array(array)), array


def test_the_kernel_runs_every_supported_group_and_matches_the_torch_reference():
    reference, fused = make(False), make(True)
    assert reference.actuator_stage.fused == []
    assert [g.name for g in fused.actuator_stage.fused] == [
        f"sat/{n}" for n in ("pwm", "schmitt", "continuous", "wheels", "friction", "mtq", "cmg")
    ]
    assert [g.name for g in fused.actuator_stage.others] == ["sat/late", "sat/tilted"]
    gen = torch.Generator().manual_seed(0)
    for step in range(1, 81):
        commands = {
            name: 2.4 * torch.rand((8, group.num), generator=gen, dtype=torch.float64) - 0.2
            for name, group in reference.actuators.items()
        }
        for scene in (reference, fused):
            for name, command in commands.items():
                group = scene.actuators[name]
                group.set_command(command * group.high[0])
            if step == 10:
                scene.actuators["sat/pwm"].set_failure(torch.tensor([0, 3]), 1, "on")
                scene.actuators["sat/schmitt"].set_failure(torch.tensor([2]), 0, "degraded", 0.5)
            if step == 30:  # a partial reset puts the worlds' PWM cycles out of phase
                scene.reset(torch.tensor([1, 4, 5]))
            scene.step()
        assert_same(reference, fused)
        if step == 50:  # the fused groups' state is loaded through their column views
            for name, group in fused.actuators.items():
                group.load_state_dict(reference.actuators[name].state_dict())
    # the models really act: PWM pulses, Schmitt valves and lags are all exercised
    pwm, schmitt = fused.actuators["sat/pwm"], fused.actuators["sat/schmitt"]
    assert (pwm.output > 0).any() and (pwm.output < pwm.high).any()
    assert schmitt.valve_open.any() and not schmitt.valve_open.all()
    assert (pwm.failure != 0).any()
    friction = fused.actuators["sat/friction"]  # the friction really acts (no lag, gain 1)
    assert ((friction.output - friction.command).abs() > 1e-6).all()


def test_a_subclass_keeps_its_torch_apply():
    """A user's subclass may change the model: only the exact classes are fused."""

    class Doubled(ThrusterGroup):
        def device_model(self, value):
            return 2.0 * super().device_model(value)

    sc = SpacecraftCfg(
        mjcf="free_body",
        elements=ElementSet(
            thrusters=[
                ThrusterCfg(name=f"t{i}", body_name="spacecraft", max_force=1.0) for i in range(2)
            ]
        ),
        actuators={
            "mine": ThrusterGroupCfg(class_type=Doubled, elements=["t0"], mode="continuous"),
            "plain": ThrusterGroupCfg(elements=["t1"], mode="continuous"),
        },
    )
    scene = Scene(SceneCfg(num_envs=2, entities={"sat": sc}))
    assert [g.name for g in scene.actuator_stage.fused] == ["sat/plain"]
    assert [g.name for g in scene.actuator_stage.others] == ["sat/mine"]
    for group in scene.actuators.values():
        group.set_command(torch.full((2, 1), 0.25, dtype=torch.float64))
    scene.step()
    assert scene.view.array("thruster_force").tolist() == [[0.5, 0.25]] * 2


@pytest.mark.parametrize("task", ["Detumble-MTQ", "Docking", "Formation"])
def test_task_rollouts_are_the_reference_rollouts(task):
    """Every task's observations and rewards over 25 steps with random actions, fused and
    reference, are equal bit for bit."""
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab.registry import make_env_cfg

    runs = []
    for fused in (False, True):
        cfg = make_env_cfg(task, 4, backend="cpu")
        cfg.scene.fused_actuators = fused
        env = ManagerBasedRLEnv(cfg)
        assert bool(env.scene.actuator_stage.fused) == fused
        env.reset(seed=1)
        gen = torch.Generator().manual_seed(0)
        out = []
        for _ in range(25):
            action = 2 * torch.rand((4, env.action_manager.total_dim), generator=gen) - 1
            obs, reward, *_ = env.step(action)
            out.append(torch.cat([obs["policy"].flatten(), reward]))
        runs.append(torch.stack(out))
    assert torch.equal(runs[1], runs[0])


def test_a_bad_allocation_solver_is_one_line_naming_the_group():
    sc = SpacecraftCfg(
        mjcf="free_body",
        elements=ElementSet(thrusters=[ThrusterCfg(name="t0", body_name="spacecraft")]),
        actuators={"rcs": ThrusterGroupCfg(allocation_solver="scipy")},  # type: ignore[arg-type]
    )
    with pytest.raises(ValueError, match="group 'sat/rcs': allocation_solver must be .*'scipy'"):
        Scene(SceneCfg(num_envs=1, entities={"sat": sc}))
