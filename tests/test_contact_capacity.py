"""Contact and constraint capacity: the scene's worst case, measured peaks, the capacity a
task sets, and the warp backend sized from it."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import circular_orbit

from orbitlab import SimSpec
from orbitlab.cli.args import ArgumentError
from orbitlab.registry import apply_env_overrides, make_env_cfg
from orbitlab.sim.contact_capacity import (
    ContactPeaks,
    PeakCounter,
    collidable_pairs,
    suggested_capacity,
    worst_case,
)

# Three spheres of radius 0.1 on the x axis: a and b overlap by 2 cm, c is 0.5 m from b.
# d is a child of a (filtered), e collides with nothing (contype and conaffinity 0).
THREE_SPHERES = """
<mujoco><option timestep="0.005"/><worldbody>
  <body name="a" pos="0 0 0"><freejoint/><geom type="sphere" size="0.1" mass="1"/>
    <body name="d" pos="0 0.3 0"><joint type="hinge"/><geom type="sphere" size="0.1" mass="1"/></body>
  </body>
  <body name="b" pos="0.18 0 0"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
  <body name="c" pos="0.78 0 0"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
  <body name="e" pos="0 0 3"><freejoint/><geom type="sphere" size="0.1" mass="1" contype="0" conaffinity="0"/></body>
</worldbody></mujoco>"""


def _model():
    spec = SimSpec.from_xml_string(THREE_SPHERES)
    return spec.compile()


def test_collidable_pairs_follow_mujocos_filters():
    """Parent-child (a, d) and e (contype and conaffinity 0) are filtered; the other pairs of a, b, c, d
    remain; the worst case is 8 points a pair at 4 rows a point (condim 3, pyramidal); the
    hinge has no limit, so there are no other rows."""
    model = _model()
    m = model.mj_model
    pairs = {
        tuple(sorted((m.geom(i).bodyid[0], m.geom(j).bodyid[0]))) for i, j in collidable_pairs(m)
    }
    name = {m.body(n).id: n for n in "abcde"}
    named = {(name[i], name[j]) for i, j in pairs}
    assert named == {("a", "b"), ("a", "c"), ("d", "b"), ("d", "c"), ("b", "c")}
    assert worst_case(m) == (5 * 8, 5 * 8 * 4)


def test_peak_counter_counts_contacts_candidates_and_rows():
    """One step from the initial poses: a and b touch (one sphere-sphere contact, 4 rows)
    and are the only pair whose bounding spheres overlap (d is 0.35 m from b, more than the
    0.2 m of their radii; c is 0.6 m from b)."""
    model = _model()
    data = model.make_data(nworld=3, orbit=circular_orbit())
    counter = PeakCounter(model.mj_model, data.backend.bind)
    data.step(1)
    counter.sample()
    peaks = counter.peaks()
    assert peaks == ContactPeaks(contacts=1, candidates=1, rows=4, samples=3)
    assert int(np.max(data.backend.bind("ncon"))) == 1


def test_suggested_capacity_margins_contacts_and_caps_candidates_at_the_pairs():
    model = _model()
    m = model.mj_model  # 5 collidable pairs, 4 rows per contact
    # contacts 2 -> 2 x 2 = 4 -> 8; candidates 17 -> 34 -> 40, capped at the 5 pairs; rows
    # for the 8 contacts: max(8 x 4, 2 x 8) = 32.
    assert suggested_capacity(ContactPeaks(2, 17, 8, 100), m) == (8, 32)
    # contacts 10 -> 20 -> 24 (more than the capped candidates); rows max(24 x 4, 2 x 70)
    # = 140 -> 144
    assert suggested_capacity(ContactPeaks(10, 3, 70, 100), m) == (24, 144)


def test_scene_capacity_is_validated_and_settable_from_the_command_line():
    cfg = make_env_cfg("Docking", 2)
    apply_env_overrides(
        cfg, {"scene": {"contacts_per_world": 48, "constraint_rows_per_world": None}}
    )
    assert cfg.scene.contacts_per_world == 48 and cfg.scene.constraint_rows_per_world is None
    for bad in (0, -1, 2.5, "many", True, 10**9):
        with pytest.raises(ArgumentError, match=r"env\.scene\.contacts_per_world=.* is invalid"):
            apply_env_overrides(cfg, {"scene": {"contacts_per_world": bad}})
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

    cfg = make_env_cfg("Docking", 1)
    cfg.scene.constraint_rows_per_world = 0
    with pytest.raises(ValueError, match="SceneCfg.constraint_rows_per_world must be an integer"):
        ManagerBasedRLEnv(cfg)


def test_warp_backend_takes_the_tasks_capacity(warp_device):
    """Docking on the warp backend: MuJoCo-Warp's pool holds num_envs x the task's
    contacts per world (not the scene's worst case) and njmax is its rows."""
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

    cfg = make_env_cfg("Docking", 2, backend="warp", device=warp_device)
    contacts, rows = cfg.scene.contacts_per_world, cfg.scene.constraint_rows_per_world
    assert contacts is not None and rows is not None
    env = ManagerBasedRLEnv(cfg)
    d = env.scene.data.backend.d
    assert (d.naconmax, d.njmax) == (2 * contacts, rows)
    assert contacts < worst_case(env.scene.mj_model)[0]


@pytest.mark.slow
@pytest.mark.parametrize("task", ["Docking", "Formation", "Reach"])
def test_task_capacity_holds_its_measured_peaks(task):
    """A whole episode of the baseline and of random actions (16 worlds): the task's
    configured capacity is at least what `suggested_capacity` asks for the peaks."""
    from orbitlab.bench.contacts import ContactBenchCfg, measure_task

    row = measure_task(task, 16, ContactBenchCfg(tasks=(task,)))
    assert row["peak_candidates"] <= row["contacts_per_world"]
    assert row["suggested_contacts"] <= row["contacts_per_world"]
    assert row["suggested_rows"] <= row["constraint_rows_per_world"]
