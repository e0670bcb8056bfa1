"""The fused sensor kernel (`orbitlab.sensors.fused`) against the torch sensors it replaces.

Two scenes built alike, one with `fused_sensors=False` (each sensor's torch `update`, the
reference), step, reset part of their worlds and reseed side by side. Noise, bias walks and
counters must be equal bit for bit; truths and measurements to a few ulp of their size
(the kernel follows the torch formulas in the same order; matrix products may round
differently)."""

from __future__ import annotations

import pytest
import torch

from orbitlab.orbit.constants import OrbitInit
from orbitlab.scene.entities import PassiveObjectCfg, SpacecraftCfg
from orbitlab.scene.scene import Scene, SceneCfg
from orbitlab.sensors.inertial import GyroCfg, MagnetometerCfg, StarTrackerCfg
from orbitlab.sensors.navigation import DockingLatchCfg, GnssCfg, RelativeNavCfg

ULP = 2.0**-52


def sensors() -> dict:
    """Every fused kind (GNSS at a site and at the body's centre of mass included), with
    sites (rotated, offset mounts), periods, latency, white noise, per-world and constant
    bias, bias walks and a star tracker misalignment."""
    return {
        "gyro": GyroCfg(std=1e-3, bias_std=2e-3, bias_walk_std=1e-4, period_s=0.02),
        "gyro_site": GyroCfg(site="rcs_04", std=1e-3, bias=(1e-3, 0.0, -2e-3), latency_s=0.03),
        "star": StarTrackerCfg(
            std=1e-4, bias_std=5e-5, misalignment_rad=(1e-3, -2e-3, 5e-4), period_s=0.03
        ),
        "mag": MagnetometerCfg(site="rcs_09", std=1e-7, bias_walk_std=1e-8, period_s=0.01),
        "gnss": GnssCfg(site="rcs_05", std=(5.0, 5.0, 5.0, 0.05, 0.05, 0.05), period_s=0.02),
        "gnss_body": GnssCfg(std=2.0, bias_std=1.0, bias_walk_std=0.1, latency_s=0.02),
        "rel": RelativeNavCfg(
            target="target",
            site="rcs_02",
            std=0.01,
            bias_walk_std=1e-3,
            range_noise_per_m=0.02,
            period_s=0.02,
            latency_s=0.01,
        ),
        # limits wide enough that some tumbling worlds latch 9 m out and others do not
        "latch": DockingLatchCfg(
            site="probe_tip",
            target="target",
            target_site="target/port",
            contact_distance_m=20.0,
            max_closing_speed_mps=0.05,
            max_lateral_m=3.0,
            max_misalignment_rad=2.9,
            std=(0.01, 0.02, 0.01, 0.001),
            bias_walk_std=1e-3,
        ),
    }


def make(fused: bool, num_envs: int = 6) -> Scene:
    cfg = SceneCfg(
        num_envs=num_envs,
        timestep_s=0.01,
        fused_sensors=fused,
        orbit_init=OrbitInit(R_eci=[6778.137, 0.0, 0.0], V_eci=[0.0, 7.0, 3.0]),
        entities={
            "chaser": SpacecraftCfg(mjcf="docking_chaser", sensors=sensors()),
            "target": PassiveObjectCfg(mjcf="docking_target", pos_m=(8.0, -3.0, 1.0)),
        },
    )
    scene = Scene(cfg)
    gen = torch.Generator().manual_seed(3)
    for entity in scene.entities.values():  # tumbling, drifting bodies
        entity.data.root_ang_vel_b[:] = 0.2 * torch.randn(num_envs, 3, generator=gen)
        entity.data.root_lin_vel_w[:] = 0.1 * torch.randn(num_envs, 3, generator=gen)
    scene.data.forward()
    scene.view.invalidate()
    return scene


def assert_same(reference: Scene, fused: Scene) -> None:
    for name, ref in reference.sensors.items():
        got = fused.sensors[name]
        for attr in ("samples", "world_bias", "noise_key"):
            assert torch.equal(getattr(got, attr), getattr(ref, attr)), (name, attr)
        for attr in ("value", "held", "truth_value"):
            a, b = getattr(got, attr), getattr(ref, attr)
            assert a.shape == b.shape and a.dtype == b.dtype
            tol = 8 * ULP * b.abs().amax(dim=1, keepdim=True).clamp_min(1.0)
            assert ((a - b).abs() <= tol).all(), (name, attr, (a - b).abs().max())


def test_the_kernel_runs_every_supported_sensor_and_matches_the_torch_reference():
    reference, fused = make(False), make(True)
    assert reference.sensor_stage.fused == []
    assert [s.name for s in fused.sensor_stage.fused] == list(fused.sensors)
    assert fused.sensor_stage.others == []
    for step in range(1, 61):
        for scene in (reference, fused):
            scene.step()
            if step == 20:  # a partial reset puts the worlds' timers out of phase
                scene.reset(torch.tensor([1, 4]))
            if step == 40:
                for sensor in scene.sensors.values():
                    sensor.reseed(5)
        assert_same(reference, fused)
    # the noise really is there: measurements differ from truths
    rel = fused.sensors["chaser/rel"]
    assert (rel.held[:, :6] - rel.truth_value[:, :6]).abs().amin() > 0
    latch = fused.sensors["chaser/latch"]
    assert torch.equal(latch.held[:, :2], latch.truth_value[:, :2])  # flags are not noised
    assert (latch.held[:, 2:] != latch.truth_value[:, 2:]).all()
    assert 0 < int(latch.latched.sum()) < latch.latched.numel(), latch.latched


def test_a_subclass_keeps_its_torch_update():
    """A user's subclass may change the model: only the exact classes are fused."""
    from orbitlab.sensors.inertial import Gyro

    class ScaledGyro(Gyro):
        def truth(self):
            return 2.0 * super().truth()

    cfg = SceneCfg(
        num_envs=2,
        entities={
            "sat": SpacecraftCfg(
                mjcf="free_body",
                sensors={"g": GyroCfg(class_type=ScaledGyro), "h": GyroCfg()},
            )
        },
    )
    scene = Scene(cfg)
    assert [s.name for s in scene.sensor_stage.fused] == ["sat/h"]
    assert [s.name for s in scene.sensor_stage.others] == ["sat/g"]
    scene.entities["sat"].data.root_ang_vel_b[:] = torch.tensor([0.1, 0.0, 0.0])
    scene.data.forward()
    scene.step()
    g, h = scene.sensors["sat/g"].value, scene.sensors["sat/h"].value
    torch.testing.assert_close(g, 2.0 * h, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("task", ["Detumble-RW", "Pointing", "Docking", "Formation"])
def test_task_rollouts_are_the_reference_rollouts(task):
    """Every task's observations and rewards over 25 steps with random actions, fused and
    reference, agree to float32 rounding (the observations are float32)."""
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab.registry import make_env_cfg

    runs = []
    for fused in (False, True):
        cfg = make_env_cfg(task, 4, backend="cpu")
        cfg.scene.fused_sensors = fused
        env = ManagerBasedRLEnv(cfg)
        env.reset(seed=1)
        gen = torch.Generator().manual_seed(0)
        out = []
        for _ in range(25):
            action = 2 * torch.rand((4, env.action_manager.total_dim), generator=gen) - 1
            obs, reward, *_ = env.step(action)
            out.append(torch.cat([obs["policy"].flatten(), reward]))
        runs.append(torch.stack(out))
    reference, fused = runs
    torch.testing.assert_close(fused, reference, rtol=4 * 2.0**-23, atol=1e-6)
