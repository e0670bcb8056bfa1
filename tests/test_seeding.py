"""One seed derivation: every random stream of an env, sensor noise included, follows its seed."""

from __future__ import annotations

import torch

from orbitlab.envs import mdp
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv, ManagerBasedRLEnvCfg
from orbitlab.managers import ObservationGroupCfg, ObservationTermCfg, SceneEntityCfg
from orbitlab.scene.entities import SpacecraftCfg
from orbitlab.scene.scene import SceneCfg
from orbitlab.seeding import stream_seed
from orbitlab.sensors.inertial import GyroCfg


def noisy_env(seed: int, num_envs: int = 4) -> ManagerBasedRLEnv:
    sat = SpacecraftCfg(mjcf="free_body", sensors={"gyro": GyroCfg(std=1e-3, bias_std=1e-4)})
    cfg = ManagerBasedRLEnvCfg(
        scene=SceneCfg(num_envs=num_envs, entities={"sat": sat}, timestep_s=0.1, nthread=1),
        decimation=2,
        observations={
            "policy": ObservationGroupCfg(
                terms={
                    "rate": ObservationTermCfg(
                        func=mdp.sensor_value,
                        params={"sensor_cfg": SceneEntityCfg("sat", sensor_names=("gyro",))},
                        noise_std=0.01,
                    )
                }
            )
        },
        seed=seed,
    )
    return ManagerBasedRLEnv(cfg)


def gyro_trace(env: ManagerBasedRLEnv, steps: int = 3) -> torch.Tensor:
    """The gyro's readings after each of `steps` env steps, (steps, num_envs, 3)."""
    out = []
    for _ in range(steps):
        env.step(torch.zeros((env.num_envs, 0)))
        out.append(env.scene.sensors["sat/gyro"].value.clone())
    return torch.stack(out)


def test_stream_seeds_differ_per_component_and_seed_and_repeat():
    seeds = {stream_seed(s, c, salt) for s in (0, 1) for c in ("a", "b") for salt in (0, 7)}
    assert len(seeds) == 8
    assert stream_seed(3, "sensors/sat/gyro") == stream_seed(3, "sensors/sat/gyro")
    assert all(0 <= s < 2**63 for s in seeds)


def test_sensor_noise_follows_the_env_seed():
    a, b, c = noisy_env(0), noisy_env(0), noisy_env(1)
    trace_a, trace_b, trace_c = gyro_trace(a), gyro_trace(b), gyro_trace(c)
    assert torch.equal(trace_a, trace_b)
    # At rest the readings are bias + noise only: another seed draws other numbers everywhere.
    assert (trace_a != trace_c).all()


def test_reset_with_a_seed_equals_building_with_it():
    """`reset(seed=s)` restarts every stream (sensor and observation noise) as a fresh env of
    seed s starts them."""
    fresh, reseeded = noisy_env(5), noisy_env(0)
    obs_fresh, _ = fresh.reset(seed=5)
    obs_reseeded, _ = reseeded.reset(seed=5)
    assert torch.equal(obs_fresh["policy"], obs_reseeded["policy"])
    assert torch.equal(gyro_trace(fresh), gyro_trace(reseeded))
