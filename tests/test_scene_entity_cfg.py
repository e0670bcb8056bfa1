"""Scene references in term params: resolved once at construction, typos fail there."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from orbitlab.envs import mdp
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv, ManagerBasedRLEnvCfg
from orbitlab.managers import (
    CurriculumTermCfg,
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    SceneEntityCfg,
    TerminationTermCfg,
)
from orbitlab.managers.command_manager import CommandTerm, CommandTermCfg
from orbitlab.scene import spacecraft
from orbitlab.scene.scene import SceneCfg

SAT = SceneEntityCfg("sat")


def probe(env, ref: SceneEntityCfg) -> torch.Tensor:
    """A term that reads everything its reference resolved to."""
    assert ref.handle is env.scene.entities["sat"]
    return torch.zeros(env.num_envs, device=env.device)


def probe_event(env, env_ids, ref: SceneEntityCfg) -> None:
    probe(env, ref)


def probe_curriculum(env, env_ids, ref: SceneEntityCfg) -> float:
    probe(env, ref)
    return 0.0


class HoldCommand(CommandTerm):
    """A command that holds the entity's start attitude."""

    def __init__(self, cfg: HoldCommandCfg, env):
        super().__init__(cfg, env)
        self.target = cfg.entity.data.root_quat_w.clone()

    @property
    def command(self) -> torch.Tensor:
        return self.target

    def resample(self, env_ids: torch.Tensor) -> None:
        self.target[env_ids] = self.cfg.entity.data.root_quat_w[env_ids]


@dataclass(kw_only=True)
class HoldCommandCfg(CommandTermCfg):
    class_type: type = HoldCommand
    entity: SceneEntityCfg


def cfg_with(kind: str, ref: SceneEntityCfg) -> ManagerBasedRLEnvCfg:
    """A small env with one probing term of `kind` holding `ref`."""
    sat = spacecraft.cubesat_3u()
    sat.actuators = {"wheels": sat.actuators["wheels"]}
    sat.sensors = {k: v for k, v in sat.sensors.items() if k in ("gyro", "magnetometer")}
    cfg = ManagerBasedRLEnvCfg(
        scene=SceneCfg(num_envs=2, entities={"sat": sat}, timestep_s=0.1),
        decimation=1,
        observations={
            "policy": ObservationGroupCfg(terms={"rate": ObservationTermCfg(func=mdp.last_action)})
        },
    )
    params = {"ref": ref}
    if kind == "observation":
        cfg.observations["policy"].terms["probe"] = ObservationTermCfg(func=probe, params=params)
    elif kind == "reward":
        cfg.rewards["probe"] = RewardTermCfg(func=probe, params=params)
    elif kind == "termination":
        cfg.terminations["probe"] = TerminationTermCfg(func=probe, params=params)
    elif kind == "event":
        cfg.events["probe"] = EventTermCfg(func=probe_event, params=params)
    elif kind == "curriculum":
        cfg.curriculum["probe"] = CurriculumTermCfg(func=probe_curriculum, params=params)
    elif kind == "command":
        cfg.commands["probe"] = HoldCommandCfg(entity=ref)
    return cfg


KINDS = ("observation", "reward", "termination", "event", "curriculum", "command")
TYPOS = [
    (SceneEntityCfg("sta"), "no entity 'sta'; did you mean 'sat'? (have: sat)"),
    (
        SceneEntityCfg("sat", body_names=("bsu",)),
        "entity 'sat' has no body 'bsu'; did you mean 'bus'?",
    ),
    (
        SceneEntityCfg("sat", site_names=("imu", "star_trackr")),
        "entity 'sat' has no site 'star_trackr'; did you mean 'star_tracker'?",
    ),
    (
        SceneEntityCfg("sat", actuator_names=("wheel",)),
        "entity 'sat' has no actuator group 'wheel'; did you mean 'wheels'? (have: wheels)",
    ),
    (
        SceneEntityCfg("sat", sensor_names=("gyr",)),
        "entity 'sat' has no sensor 'gyr'; did you mean 'gyro'? (have: gyro, magnetometer)",
    ),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("ref", "message"), TYPOS, ids=lambda x: getattr(x, "name", ""))
def test_a_typo_in_any_term_fails_at_construction_with_did_you_mean(kind, ref, message):
    where = {
        "observation": "observation term 'policy/probe', param 'ref'",
        "command": "command term 'probe', param 'entity'",
    }.get(kind, f"{kind} term 'probe', param 'ref'")
    with pytest.raises(ValueError) as error:
        ManagerBasedRLEnv(cfg_with(kind, ref))
    text = str(error.value)
    assert text.startswith(f"{where}: {message}"), text
    assert "\n" not in text


@pytest.mark.parametrize("kind", KINDS)
def test_terms_receive_resolved_references_and_the_config_stays_unresolved(kind):
    ref = SceneEntityCfg(
        "sat",
        body_names="bus",
        site_names=("imu",),
        actuator_names=("wheels",),
        sensor_names=("gyro", "magnetometer"),
    )
    cfg = cfg_with(kind, ref)
    env = ManagerBasedRLEnv(cfg)  # every term asserts its handle
    env.step(torch.zeros((2, 0)))
    with pytest.raises(RuntimeError, match="is not resolved"):
        ref.handle  # noqa: B018 - the config's own copy is never bound
    resolved = ref.resolve(env.scene)
    model = env.scene.mj_model
    assert [model.body(b).name for b in resolved.body_ids] == ["sat/bus"]
    assert [model.site(s).name for s in resolved.site_ids] == ["sat/imu"]
    assert resolved.actuator is env.scene.actuators["sat/wheels"]
    assert list(resolved.sensors) == ["gyro", "magnetometer"]
    with pytest.raises(ValueError, match="exactly one sensor"):
        resolved.sensor  # noqa: B018


def test_a_curriculum_still_changes_params_beside_a_reference():
    cfg = cfg_with("event", SAT)
    cfg.events["rates"] = EventTermCfg(
        func=mdp.reset_root_rates, params={"entity": SAT, "max_rate_rad_s": 0.0}
    )
    env = ManagerBasedRLEnv(cfg)
    env.event_manager.terms["rates"].params["max_rate_rad_s"] = 0.5  # as a curriculum does
    env.event_manager.terms["rates"].params["min_rate_rad_s"] = 0.5
    env.reset()
    rate = torch.linalg.vector_norm(env.scene.entities["sat"].data.root_ang_vel_b, dim=-1)
    assert rate.tolist() == pytest.approx([0.5, 0.5])


def test_the_shipped_events_run_on_a_resolved_entity():
    cfg = cfg_with("event", SAT)
    cfg.events = {
        "mass": EventTermCfg(
            func=mdp.randomize_mass, mode="startup", params={"entity": SAT, "scale": (2.0, 2.0)}
        ),
        "pose": EventTermCfg(
            func=mdp.reset_root_pose_uniform,
            params={"entity": SAT, "pos_low_m": (1.0, 1.0, 1.0), "pos_high_m": (2.0, 2.0, 2.0)},
        ),
        "kick": EventTermCfg(
            func=mdp.apply_angular_impulse,
            mode="interval",
            interval_range_s=(0.1, 0.1),
            params={"entity": SAT, "max_impulse_nms": 1e-3},
        ),
    }
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    sat = env.scene.entities["sat"]
    pos = sat.data.root_pos_w
    assert bool(((pos >= 1.0) & (pos <= 2.0)).all())
    mass = env.scene.data.expand("body_mass")[:, sat.root_body]
    assert mass.tolist() == pytest.approx([2.0 * env.scene.mj_model.body_mass[sat.root_body]] * 2)
    before = sat.data.root_ang_vel_b.clone()
    env.step(torch.zeros((2, 0)))
    assert not torch.equal(sat.data.root_ang_vel_b, before)  # kicked
