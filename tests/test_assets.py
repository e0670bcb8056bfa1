"""The bundled spacecraft assets: they load, their elements resolve, their mass properties
are the documented ones, and their mechanisms (thrusters, arm, array latches) work."""

from __future__ import annotations

import warnings

import mujoco
import numpy as np
import pytest

from orbitlab import SimSpec
from orbitlab.scene.catalog import ASSETS, ELEMENTS, asset_elements, asset_path

SPACECRAFT = list(ELEMENTS)

# Documented mass properties (assets/README.md) at qpos0: total mass kg, composite COM x m
# (y = z = 0), composite inertia about that COM in root-body axes kg m^2 (MJCF bodies only,
# wheel rotors excluded), diagonal.
DOCUMENTED = {
    "cubesat_3u": (4.0, 0.0, (0.04184667, 0.04184667, 0.00664667)),
    "cubesat_6u": (11.2, 0.0, (0.26413813, 0.13147493, 0.14928307)),
    "formation_flyer": (17.8, 0.0, (0.315, 0.315, 0.315)),
    "docking_chaser": (150.0, 0.02416667, (15.466917, 20.186521, 20.186521)),
    "docking_target": (400.0, 0.0465, (189.72424, 154.26300, 225.72816)),
    "station_module": (18000.0, 0.0, (39690.0, 115845.0, 115845.0)),
    "arm_bus": (70.0, 0.11492143, (3.6097042, 10.316922, 10.317558)),
    "solar_array_sat": (150.0, 0.0032, (22.419633, 29.950364, 27.879164)),
    "client_sat": (80.0, 0.014375, (6.5004, 9.48866875, 11.30866875)),
    "oru": (12.0, 0.0333333333, (0.067067, 0.15603367, 0.15603367)),
    "oru_worksite": (400.0, 0.0, (42.666667, 21.666667, 21.666667)),
}


def load(name: str) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """Plain MuJoCo model and data, set up as the orbit layer would: zero gravity, 0.01 s."""
    model = mujoco.MjModel.from_xml_path(str(asset_path(name)))
    model.opt.gravity[:] = 0.0
    model.opt.timestep = 0.01
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data


def composite(model: mujoco.MjModel, data: mujoco.MjData) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, COM and inertia about the COM of the whole tree, in root-body axes."""
    root_R = data.xmat[1].reshape(3, 3)
    com = data.subtree_com[1].copy()
    inertia = np.zeros((3, 3))
    for b in range(1, model.nbody):
        R = data.ximat[b].reshape(3, 3)
        r = data.xipos[b] - com
        inertia += R @ np.diag(model.body_inertia[b]) @ R.T
        inertia += model.body_mass[b] * (r @ r * np.eye(3) - np.outer(r, r))
    return (
        float(model.body_mass.sum()),
        root_R.T @ (com - data.xpos[1]),
        root_R.T @ inertia @ root_R,
    )


def site_frame(data: mujoco.MjData, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Position and z axis of a site in root-body axes (root at the origin at qpos0)."""
    return data.site(name).xpos.copy(), data.site(name).xmat.reshape(3, 3)[:, 2].copy()


# --------------------------------------------------------------------------- loading
@pytest.mark.parametrize("name", SPACECRAFT)
def test_asset_loads_as_one_free_flyer_and_its_elements_resolve(name):
    model, _ = load(name)
    assert model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE and model.jnt_bodyid[0] == 1
    assert model.joint(0).name == "root" and model.body(1).parentid == 0
    assert int(np.sum(model.jnt_type == mujoco.mjtJoint.mjJNT_FREE)) == 1
    assert np.all(model.body_mass[1:] > 0.0)
    for site in ("imu", "star_tracker", "sun_sensor", "gnss"):
        assert model.site(site).bodyid[0] == 1
    rows = asset_elements(name).resolve(model)
    assert len(rows["surfaces"]) >= 6
    spec = SimSpec.from_xml_path(asset_path(name))
    spec.orbit.elements = asset_elements(name)
    orbit_model = spec.compile(timestep=0.01)
    assert orbit_model.count("surfaces") == len(rows["surfaces"])


@pytest.mark.parametrize("name", SPACECRAFT)
def test_nav_camera_looks_along_body_plus_x(name):
    _, data = load(name)
    cam_R = data.cam("nav_cam").xmat.reshape(3, 3)
    # Exact axis-aligned frames: equal to rounding (1e-12).
    np.testing.assert_allclose(-cam_R[:, 2], [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(cam_R[:, 1], [0.0, 0.0, 1.0], atol=1e-12)


def test_assets_attach_under_prefixes_without_option_conflicts():
    root = mujoco.MjSpec()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an <option> in an asset would warn on attach
        for i, name in enumerate(SPACECRAFT):
            frame = root.worldbody.add_frame(pos=[0.0, 30.0 * i, 0.0])
            root.attach(
                mujoco.MjSpec.from_file(str(asset_path(name))), frame=frame, prefix=f"{name}/"
            )
    model = root.compile()
    roots = [
        model.body(f"{name}/{'module' if name == 'station_module' else 'bus'}").id
        for name in SPACECRAFT
    ]
    assert all(model.body_parentid[b] == 0 for b in roots)


def test_asset_path_takes_names_or_files_and_lists_known_names_on_error():
    assert asset_path("arm_bus") == asset_path("arm_bus.xml")
    assert all(asset_path(name).is_file() for name in ASSETS)
    with pytest.raises(ValueError, match="known: free_body, cubesat_3u"):
        asset_path("cubesat_12u")
    with pytest.raises(ValueError, match="no orbit-layer elements"):
        asset_elements("free_body")


# ----------------------------------------------------------------- mass properties
@pytest.mark.parametrize("name", SPACECRAFT)
def test_mass_com_and_inertia_are_the_documented_numbers(name):
    mass, com_x, diag = DOCUMENTED[name]
    m, com, inertia = composite(*load(name))
    # The table is rounded to 8 significant digits: 1e-6 relative covers it.
    np.testing.assert_allclose(m, mass, rtol=1e-12)
    np.testing.assert_allclose(com, [com_x, 0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(np.diag(inertia), diag, rtol=1e-6)
    # Symmetric layouts: products of inertia vanish to rounding.
    assert np.abs(inertia - np.diag(np.diag(inertia))).max() < 1e-12 * np.abs(inertia).max()


def test_formation_flyer_is_exactly_the_spec_17_8_kg_and_0_315_kg_m2():
    model, _ = load("formation_flyer")
    # Parsed decimal literals: exact.
    assert model.body_mass[1] == 17.8
    assert np.all(model.body_inertia[1] == 0.315)
    half = model.geom("bus_box").size[0]
    # The cube is the uniform shape of that inertia, m a^2 / 6 (8-digit side: 1e-7).
    np.testing.assert_allclose(17.8 * (2 * half) ** 2 / 6.0, 0.315, rtol=1e-7)


@pytest.mark.parametrize("name, size", [("cubesat_3u", (0.1, 0.1, 0.34))])
def test_cubesat_body_plus_wheel_rotors_is_the_uniform_box(name, size):
    model, _ = load(name)
    a, b, c = size
    m = model.body_mass[1]
    box = m / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    wheels = np.zeros(3)
    for wheel in asset_elements(name).wheels:
        wheels += wheel.inertia * np.abs(np.asarray(wheel.axis_body, dtype=float))
    # XML inertia written to 7 significant digits: 1e-6 relative.
    np.testing.assert_allclose(model.body_inertia[1] + wheels, box, rtol=1e-6)


@pytest.mark.parametrize("name", SPACECRAFT)
def test_every_body_satisfies_the_triangle_inequality(name):
    model, _ = load(name)
    for b in range(1, model.nbody):
        i = np.sort(model.body_inertia[b])
        # MuJoCo's own check, with its relative slack of 1e-10.
        assert i[0] + i[1] >= i[2] * (1.0 - 1e-10), model.body(b).name


# ------------------------------------------------------------------------ thrusters
def allocation(name: str) -> np.ndarray:
    """6 x n matrix [d_i ; (p_i - com) x d_i] of the asset's thrusters (unit force each)."""
    _, data = load(name)
    com = data.subtree_com[1]
    cols = []
    for thr in asset_elements(name).thrusters:
        p = np.asarray(thr.position_body, dtype=float)
        d = np.asarray(thr.direction_body, dtype=float)
        d = d / np.linalg.norm(d)
        cols.append(np.concatenate([d, np.cross(p - com, d)]))
    return np.array(cols).T


@pytest.mark.parametrize("name, count", [("formation_flyer", 12), ("docking_chaser", 16)])
def test_thruster_elements_sit_on_their_sites(name, count):
    _, data = load(name)
    thrusters = asset_elements(name).thrusters
    assert len(thrusters) == count
    for thr in thrusters:
        pos, zaxis = site_frame(data, thr.name)
        # Same decimal literals in XML and Python; zaxis normalised by MuJoCo: 1e-12.
        np.testing.assert_allclose(pos, thr.position_body, atol=1e-12)
        np.testing.assert_allclose(zaxis, thr.direction_body, atol=1e-12)


@pytest.mark.parametrize("name", ["formation_flyer", "docking_chaser"])
def test_thrusters_span_every_signed_force_and_torque_axis(name):
    A = allocation(name)
    assert np.linalg.matrix_rank(A) == 6
    # Every thruster has an exactly opposed partner (w_j = -w_i) ...
    partner = [int(np.argmin(np.linalg.norm(A + A[:, [i]], axis=0))) for i in range(A.shape[1])]
    np.testing.assert_allclose(A[:, partner], -A[:, :], atol=1e-12)
    # ... so any least-squares solution is made nonnegative by moving a negative command to
    # the partner; check it for the 12 signed unit wrenches (linear algebra: 1e-9).
    for axis in range(6):
        for sign in (1.0, -1.0):
            target = np.zeros(6)
            target[axis] = sign
            y = np.linalg.lstsq(A, target, rcond=None)[0]
            y_pos = np.clip(y, 0.0, None)
            np.add.at(y_pos, partner, np.clip(-y, 0.0, None))
            assert np.all(y_pos >= 0.0)
            np.testing.assert_allclose(A @ y_pos, target, atol=1e-9)


def test_formation_flyer_pairs_give_the_spec_3_n_and_0_51_n_m():
    A = 1.5 * allocation("formation_flyer")
    # Sums of exact binary fractions of 1.5 and 0.17: 1e-12.
    np.testing.assert_allclose(A[:, 0] + A[:, 2], [3.0, 0, 0, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(A[:, 4] + A[:, 7], [0, 0, 0, 0, 0, 0.51], atol=1e-12)


# ----------------------------------------------------------------------- docking
def test_docking_port_points_out_of_the_target_and_probe_tip_out_of_the_chaser():
    _, data = load("docking_target")
    port, port_z = site_frame(data, "port")
    entry, _ = site_frame(data, "port_entry")
    # Axis-aligned literals: 1e-12.
    np.testing.assert_allclose(port_z, [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(entry - port, 0.5 * port_z, atol=1e-12)
    _, data = load("docking_chaser")
    tip, tip_z = site_frame(data, "probe_tip")
    np.testing.assert_allclose(tip, [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(tip_z, [1.0, 0.0, 0.0], atol=1e-12)


# ------------------------------------------------------------------------- mechanisms
def test_solar_array_latches_hold_then_spring_deploys_each_array_to_its_stop():
    model, data = load("solar_array_sat")
    hinges = [model.joint(f"array_{s}_hinge").qposadr[0] for s in ("left", "right")]
    stop = model.joint("array_left_hinge").range[1]
    assert np.all(data.eq_active == 1)
    for _ in range(int(2.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
        # Soft latch against a 4.7 N m spring preload: sags ~1e-4 rad, bound 1e-3.
        assert np.all(np.abs(data.qpos[hinges]) < 1e-3)
    data.eq_active[model.equality("latch_left").id] = 0
    data.eq_active[model.equality("latch_right").id] = 0
    for _ in range(int(20.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
    # Settled onto the stop: the brief's 0.05 rad.
    assert np.all(np.abs(data.qpos[hinges] - stop) < 0.05)
    mujoco.mj_forward(model, data)
    _, _, inertia = composite(model, data)
    # Deployed layout (README): 1e-3 relative allows the 4e-6 rad stop offset and bus spin.
    np.testing.assert_allclose(np.diag(inertia), (37.164567, 33.470967, 46.1447), rtol=1e-3)


def test_arm_position_actuators_track_a_target_configuration():
    model, data = load("arm_bus")
    joints = ["shoulder_yaw", "shoulder_pitch", "elbow", "wrist_pitch", "wrist_yaw", "wrist_roll"]
    target = np.array([0.5, -0.6, 1.0, 0.4, -0.3, 0.8])
    for j, q in zip(joints, target, strict=True):
        data.actuator(j).ctrl = q
    data.actuator("gripper").ctrl = 0.03
    for _ in range(int(4.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
    q = np.array([data.joint(j).qpos[0] for j in joints])
    # Damped servos with no load settle to the target; 5 mrad covers the residual transient.
    np.testing.assert_allclose(q, target, atol=5e-3)
    fingers = [data.joint(f"finger_{s}_slide").qpos[0] for s in ("left", "right")]
    np.testing.assert_allclose(fingers, [0.03, 0.03], atol=1e-3)  # 1 mm: soft mirror equality
    assert data.ncon == 0  # the arm's configuration is collision-free
    assert np.linalg.norm(data.site("grasp").xpos - data.xpos[1]) > 0.5


@pytest.mark.parametrize("name", SPACECRAFT)
def test_every_asset_steps_100_times_without_nan(name):
    model, data = load(name)
    data.qvel[3:6] = [0.01, -0.02, 0.015]  # a slow tumble exercises the free joint
    for _ in range(100):
        mujoco.mj_step(model, data)
    assert np.all(np.isfinite(data.qpos)) and np.all(np.isfinite(data.qvel))
    assert data.ncon == 0  # no self-contact at rest
