"""orbitlab.registry: one task registry, forgiving names, one make_env."""

from __future__ import annotations

import pytest

from orbitlab.cli import ArgumentError
from orbitlab.registry import get_task, make_env_cfg, tasks


@pytest.mark.parametrize(
    "spelling", ["Docking", "docking", "DOCKING", "Orbitlab-Docking-v0", "orbitlab_docking"]
)
def test_every_spelling_names_one_task(spelling):
    assert get_task(spelling).name == "Docking"


def test_underscored_variant_names_resolve():
    assert get_task("docking_velocity").name == "Docking-Velocity"
    assert get_task("detumble_rw").config_name == "detumble_rw"


def test_unknown_task_suggests_the_closest_name():
    with pytest.raises(ArgumentError, match=r"unknown task 'Dockng': did you mean 'Docking'\?"):
        get_task("Dockng")


def test_each_task_has_a_success_criterion_and_docking_its_tuned_agent():
    assert all(spec.success for spec in tasks())
    assert get_task("docking").default_agent() == "rsl_rl_ppo_docking"
    assert get_task("Capture").default_agent() == "rsl_rl_ppo"  # no tuned agent: generic


def test_play_variant_drops_the_curriculum_and_env_overrides_apply():
    train = make_env_cfg("Docking", 2)
    play = make_env_cfg(
        "Docking",
        3,
        variant="play",
        seed=7,
        env={"episode_length_s": 120.0, "scene": {"nthread": 1}},
    )
    assert train.curriculum and not play.curriculum
    assert (play.scene.num_envs, play.seed, play.episode_length_s) == (3, 7, 120.0)
    assert play.scene.nthread == 1


def test_unknown_env_field_is_named():
    with pytest.raises(ArgumentError, match=r"env\.bogus=1: not settable"):
        make_env_cfg("Pointing", 1, env={"bogus": 1})


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            {"episode_length_s": -1.0},
            r"env\.episode_length_s=-1\.0 is invalid: must be in \(0, 1e\+06\] s",
        ),
        (
            {"episode_length_s": 0.0},
            r"env\.episode_length_s=0\.0 is invalid: must be in \(0, 1e\+06\] s",
        ),
        ({"decimation": 0}, r"env\.decimation=0 is invalid: must be in \[1, 10000\]"),
        ({"scene": {"timestep_s": -0.1}}, r"env\.scene\.timestep_s=-0\.1 is invalid"),
        ({"scene": {"nthread": -2}}, r"env\.scene\.nthread=-2 is invalid: must be in \[0, \d+\]"),
        (
            {"scene": {"torch_threads": 0}},
            r"env\.scene\.torch_threads=0 is invalid: must be in \[1, \d+\]",
        ),
        (
            {"scene": {"integrator": "euler"}},
            r"env\.scene\.integrator='euler' is invalid: must be one of RK4, Euler, implicit",
        ),
        ({"scene": {"integrator": 3}}, r"env\.scene\.integrator=3 is invalid"),
    ],
)
def test_env_values_out_of_range_are_named(override, message):
    with pytest.raises(ArgumentError, match=message):
        make_env_cfg("Pointing", 1, env=override)


def test_integrator_is_settable_and_names_match_mujocos():
    from orbitlab.registry import INTEGRATOR_NAMES
    from orbitlab.sim.spec import INTEGRATORS

    assert set(INTEGRATOR_NAMES) == set(INTEGRATORS)
    assert make_env_cfg("Pointing", 1).scene.integrator is None  # RK4 by default
    cfg = make_env_cfg("Pointing", 1, env={"scene": {"integrator": "Euler"}})
    assert cfg.scene.integrator == "Euler"


def test_coupling_is_settable_and_only_to_a_known_coupling():
    from orbitlab.registry import COUPLINGS
    from orbitlab.sim.orbit_layer import OrbitLayerCfg

    assert make_env_cfg("Pointing", 1).scene.orbit.coupling == OrbitLayerCfg().coupling == "stage"
    cfg = make_env_cfg("Pointing", 1, env={"scene": {"orbit": {"coupling": "held"}}})
    assert cfg.scene.orbit.coupling == "held" and set(COUPLINGS) == {"stage", "held"}
    for bad in ("fast", None, 1):
        with pytest.raises(ArgumentError, match=r"env\.scene\.orbit\.coupling=.*stage, held$"):
            make_env_cfg("Pointing", 1, env={"scene": {"orbit": {"coupling": bad}}})
    with pytest.raises(ArgumentError, match=r"env\.scene\.orbit\.timestep_s=1\.0: not settable"):
        make_env_cfg("Pointing", 1, env={"scene": {"orbit": {"timestep_s": 1.0}}})
