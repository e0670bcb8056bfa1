"""Scenes: compile, names, errors, shipped spacecraft configs, parts that change state."""

import numpy as np
import pytest
import torch

from orbitlab.actuators.thrusters import ThrusterGroupCfg
from orbitlab.scene import spacecraft as library
from orbitlab.scene.entities import MarkerCfg, PassiveObjectCfg, SpacecraftCfg
from orbitlab.scene.scene import Scene, SceneCfg
from orbitlab.sensors.camera import CameraCfg
from orbitlab.sensors.inertial import GyroCfg, StarTrackerCfg
from orbitlab.sensors.navigation import RelativeNavCfg
from orbitlab.sim.elements import ElementSet, SurfaceCfg, ThrusterCfg


def scene_of(entities, num_envs=2, **kw):
    return Scene(SceneCfg(num_envs=num_envs, entities=entities, **kw))


@pytest.mark.parametrize(
    "factory",
    ["cubesat_3u", "cubesat_6u", "formation_flyer", "station_module", "arm_bus", "solar_array_sat"],
)
def test_every_shipped_spacecraft_builds_and_steps(factory):
    scene = scene_of({"sc": getattr(library, factory)()})
    scene.step(20)
    assert torch.isfinite(scene.view.array("qpos")).all()
    for sensor in scene.sensors.values():
        assert torch.isfinite(sensor.value).all()


def test_a_reset_of_worlds_out_of_range_is_refused_with_their_range():
    scene = scene_of({"sc": library.cubesat_3u()}, num_envs=4)
    for ids, shown in (([1, 7], "1..7"), ([-1, 2], "-1..2")):
        with pytest.raises(ValueError, match=rf"world ids must be in \[0, 4\), got {shown}"):
            scene.reset(torch.tensor(ids))


def test_docking_pair_resolves_names_once():
    scene = scene_of(
        {
            "chaser": library.docking_chaser(pos_m=(10.0, 0.0, 0.0)),
            "target": library.docking_target(),
        },
        markers={"goal": MarkerCfg(shape="frame", pos_m=(1.0, 0.0, 0.0))},
    )
    assert set(scene.actuators) == {"chaser/rcs", "chaser/wheels"}
    assert scene.actuators["chaser/rcs"].num == 16
    rel = scene.sensors["chaser/relative_nav"]
    # The port (on the target's +x face, ~0.85 m out) is ~9.15 m from the chaser's imu,
    # along -x (radial at t=0) in the Hill frame; the default noise is ~1 cm.
    assert float(rel.value[0, 0]) == pytest.approx(-9.15, abs=0.1)
    assert scene.entities["chaser"].mass_kg == pytest.approx(150.0)


def test_markers_are_per_world_and_never_collide():
    scene = scene_of(
        {"sat": SpacecraftCfg(mjcf="free_body")},
        markers={"goal": MarkerCfg(shape="sphere", size_m=(0.2,))},
    )
    marker = scene.markers["goal"]
    marker.set_pose(torch.tensor([1]), pos_m=[0.0, 2.0, 0.0])
    mpos = scene.view.array("mocap_pos").view(2, -1, 3)
    assert mpos[:, marker.mocap_id].tolist() == [[0.0, 0.0, 0.0], [0.0, 2.0, 0.0]]
    geoms = scene.mj_model.body_geomadr[scene.body_id("marker/goal")]
    assert scene.mj_model.geom_contype[geoms] == 0 and scene.mj_model.geom_group[geoms] == 4
    assert scene.mj_model.body_mass[scene.body_id("marker/goal")] == 0.0


def test_latched_arrays_deploy_only_when_released():
    scene = scene_of({"sat": library.solar_array_sat()}, num_envs=2)
    hinge = scene.mj_model.joint("sat/array_left_hinge").qposadr[0]
    scene.entities["sat"].set_constraint_active(torch.tensor([1]), "latch_left", False)
    scene.step(500)  # 5 s: the asset reaches its stop in ~3 s
    angle = scene.view.array("qpos")[:, hinge]
    # Latched: held within the latch's compliance (~1e-4 rad); released: at the 1.5708 stop.
    assert abs(float(angle[0])) < 1e-3
    assert float(angle[1]) == pytest.approx(1.5708, abs=0.02)
    scene.reset(torch.tensor([1]))  # a reset re-engages the latch
    assert scene.view.array("eq_active")[1].tolist() == [1.0, 1.0]


def test_arm_servos_track_their_targets():
    scene = scene_of({"bot": library.arm_bus()}, num_envs=1, timestep_s=0.005)
    arm = scene.actuators["bot/arm"]
    target = torch.zeros((1, arm.num), dtype=torch.float64)
    target[0, 0], target[0, 1] = 0.5, -0.3
    arm.set_command(target)
    scene.step(800)  # 4 s; the asset's servos settle in ~2 s
    m = scene.mj_model
    joint = m.actuator_trnid[arm.ids[0].item(), 0]
    assert float(scene.view.array("qpos")[0, m.jnt_qposadr[joint]]) == pytest.approx(0.5, abs=0.02)


def test_camera_sensor_renders_at_its_own_rate():
    chaser = library.docking_chaser(pos_m=(4.0, 0.0, 0.0))
    chaser.sensors = {"cam": CameraCfg(width=32, height=24, period_s=0.05)}
    scene = scene_of({"chaser": chaser, "target": library.docking_target()}, num_envs=2)
    camera = scene.sensors["chaser/cam"]
    assert camera.value["rgb"].shape == (2, 24, 32, 3)
    scene.step(12)
    assert camera.samples.tolist() == [3, 3]  # reset + steps 5 and 10
    depth = camera.value["depth"][0]
    # The camera sits at x = 4 - 0.45 m, the target's port face at ~0.85 m: some pixels
    # see it 2-3.5 m away; the rest see the chaser's probe (< 0.6 m) or nothing (far).
    assert ((depth > 2.0) & (depth < 3.5)).any()


def test_scene_errors_name_the_culprit():
    with pytest.raises(ValueError, match="entity 'sat': mjcf 'no_such_asset'"):
        scene_of({"sat": SpacecraftCfg(mjcf="no_such_asset")})
    with pytest.raises(ValueError, match="entity name 'a/b'"):
        scene_of({"a/b": SpacecraftCfg(mjcf="free_body")})
    bad = ElementSet(surfaces=[SurfaceCfg(name="p", body_name="nobody")])
    with pytest.raises(ValueError, match="surface 'sat/p': body_name 'sat/nobody'"):
        scene_of({"sat": SpacecraftCfg(mjcf="free_body", elements=bad)})
    with pytest.raises(ValueError, match="no body named 'ghost'"):
        scene_of(
            {
                "sat": SpacecraftCfg(
                    mjcf="free_body", sensors={"rel": RelativeNavCfg(target="ghost")}
                )
            }
        )
    with pytest.raises(ValueError, match="unknown camera 'sat/nav_cam'"):
        scene_of({"sat": SpacecraftCfg(mjcf="free_body", sensors={"cam": CameraCfg()})})
    with pytest.raises(ValueError, match="at least one entity"):
        scene_of({})
    with pytest.raises(ValueError, match="no equality constraint 'latch'"):
        scene_of({"sat": library.solar_array_sat()}).entities["sat"].set_constraint_active(
            torch.tensor([0]), "latch", False
        )


def test_both_backends_give_the_same_sensor_truth(warp_device):
    thrusters = ElementSet(
        thrusters=[
            ThrusterCfg(
                name="t", body_name="spacecraft", max_force=4.0, position_body=(0.0, 0.3, 0.0)
            )
        ]
    )

    def build(backend):
        sat = SpacecraftCfg(
            mjcf="free_body",
            elements=thrusters,
            actuators={"rcs": ThrusterGroupCfg(pwm_period_s=0.05)},
            sensors={
                "gyro": GyroCfg(),
                "st": StarTrackerCfg(),
                "rel": RelativeNavCfg(target="target"),
            },
        )
        scene = scene_of(
            {"sat": sat, "target": PassiveObjectCfg(mjcf="free_body", pos_m=(5.0, -3.0, 1.0))},
            num_envs=3,
            backend=backend,
            device=warp_device if backend == "warp" else None,
        )
        scene.entities["sat"].set_root_state(
            scene.all_worlds, ang_vel_body=[0.01, -0.02, 0.03], lin_vel_mps=[0.01, 0.0, -0.02]
        )
        scene.actuators["sat/rcs"].set_command(
            torch.full((3, 1), 1.3, dtype=torch.float64, device=scene.device)
        )
        scene.step(50)
        return {k: s.truth_value.cpu().numpy() for k, s in scene.sensors.items()}

    cpu, warp = build("cpu"), build("warp")
    # The PWM thruster spun and pushed the body on both backends alike. MuJoCo-Warp
    # integrates the body state in float32 (~1e-6 here). With RK4 the loads are held over
    # each step, and the CPU backend holds them as free-joint generalized forces (body
    # axes for the torque) while MuJoCo-Warp holds xfrc_applied (world axes): the two
    # first-order holds differ by ~omega dt of the load (measured 4.5e-6 on values of
    # ~1e-2 after 50 steps); 1e-5 still catches a wrong load (1 N for 0.01 s moves 1e-4).
    for key in cpu:
        np.testing.assert_allclose(warp[key], cpu[key], rtol=0, atol=1e-5, err_msg=key)


def test_entity_data_names_its_frames_and_views_the_state():
    scene = scene_of({"sat": library.cubesat_3u()}, num_envs=2)
    data = scene.entities["sat"].data
    # a 90 deg turn about z: body x is world y
    half = np.sqrt(0.5)
    scene.entities["sat"].set_root_state(
        scene.all_worlds,
        pos_m=[1.0, 2.0, 3.0],
        quat=[half, 0.0, 0.0, half],
        lin_vel_mps=[0.1, 0.0, 0.0],
        ang_vel_body=[0.01, 0.0, 0.0],
    )
    assert data.root_pos_w[0].tolist() == [1.0, 2.0, 3.0]
    assert data.root_quat_w.shape == (2, 4)
    # rotations of exact inputs: equal to float64 rounding
    assert data.root_ang_vel_w[0].tolist() == pytest.approx([0.0, 0.01, 0.0], abs=1e-15)
    assert data.root_lin_vel_b[0].tolist() == pytest.approx([0.0, -0.1, 0.0], abs=1e-15)
    # live views: a step moves them, a write edits the state
    scene.step()
    assert float(data.root_pos_w[0, 0]) != 1.0
    data.root_ang_vel_b[1] = 0.0
    assert scene.view.array("qvel")[1, 3:6].abs().max() == 0.0
