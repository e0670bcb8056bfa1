"""A free-floating manipulator on the orbit-coupled bus: momentum, generalized Jacobian,
loads on every link and a grasped client, checked against MuJoCo and closed forms."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
import torch

from orbitlab import SimSpec
from orbitlab.orbit.constants import CentralBodyCfg
from orbitlab.scene import Scene, SceneCfg
from orbitlab.scene import spacecraft as library
from orbitlab.scene.catalog import asset_path
from orbitlab.scene.compile import assemble
from orbitlab.scene.free_floating import FIELDS, FreeFloating
from orbitlab.sim.orbit_layer import OrbitLayerCfg

ARM_TARGET = (0.8, -0.6, 1.2, 0.5, -0.4, 0.9)
"""Joint targets of the test motion, rad (shoulder yaw ... wrist roll)."""
MOTION_S = 3.0
"""Duration of the test motion's minimum-jerk profile, s."""


def free_space() -> OrbitLayerCfg:
    """An orbit layer with no external load: every switch off and a central body of
    negligible gravity (tidal acceleration ~1e-28 /s^2 at the chief)."""
    return OrbitLayerCfg(
        use_j2=False,
        use_gravity_gradient=False,
        use_drag=False,
        use_srp=False,
        use_magnetic=False,
        central_body=CentralBodyCfg(gm=1e-12),
    )


def fields_of(scene: Scene) -> dict[str, torch.Tensor]:
    return {name: scene.view.array(name) for name in FIELDS}


def mjdata_of(scene: Scene, world: int) -> mujoco.MjData:
    """An independent MjData at one world's state, with its derived fields and velocities."""
    m = scene.mj_model
    d = mujoco.MjData(m)
    d.qpos[:] = scene.view.array("qpos")[world].numpy()
    d.qvel[:] = scene.view.array("qvel")[world].numpy()
    mujoco.mj_forward(m, d)
    mujoco.mj_subtreeVel(m, d)
    return d


def test_momentum_matrix_and_jacobians_match_mujoco():
    model = mujoco.MjModel.from_xml_path(str(asset_path("arm_bus")))
    free = FreeFloating(model, "bus")
    rng = np.random.default_rng(7)
    site = model.site("grasp").id
    for _ in range(3):
        d = mujoco.MjData(model)
        d.qpos[:3] = rng.normal(size=3)
        quat = rng.normal(size=4)
        d.qpos[3:7] = quat / np.linalg.norm(quat)
        d.qpos[7:] = rng.uniform(-0.8, 0.8, size=model.nq - 7) * np.r_[np.ones(6), 0.04, 0.04]
        d.qvel[:] = rng.normal(size=model.nv)
        mujoco.mj_forward(model, d)
        mujoco.mj_subtreeVel(model, d)
        kin = free.kinematics({f: torch.tensor(getattr(d, f)[None].copy()) for f in FIELDS})
        angmom = np.zeros((3, model.nv))
        mujoco.mj_angmomMat(model, d, angmom, 1)
        com_jac = np.zeros((3, model.nv))
        mujoco.mj_jacSubtreeCom(model, d, com_jac, 1)
        A = kin.momentum_matrix[0].numpy()
        # Sums of ~20 float64 products of size <= 70: 1e-12 relative is rounding.
        np.testing.assert_allclose(A[:3], free.mass * com_jac, atol=1e-12 * free.mass)
        np.testing.assert_allclose(A[3:], angmom, atol=1e-12 * np.abs(angmom).max())
        np.testing.assert_allclose(kin.com[0].numpy(), d.subtree_com[1], atol=1e-12)
        h = free.momentum(kin, torch.tensor(d.qvel[None].copy()))[0].numpy()
        np.testing.assert_allclose(h[3:], d.subtree_angmom[1], atol=1e-12 * np.abs(h).max())
        jac_p, jac_r = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        mujoco.mj_jacSite(model, d, jac_p, jac_r, site)
        point = torch.tensor(d.site_xpos[site][None].copy())
        J = free.point_jacobian(kin, int(model.site_bodyid[site]), point)[0].numpy()
        np.testing.assert_allclose(J, np.r_[jac_p, jac_r], atol=1e-12)


def test_free_floating_rejects_a_body_without_a_free_joint():
    model = mujoco.MjModel.from_xml_path(str(asset_path("arm_bus")))
    with pytest.raises(ValueError, match="root body 'forearm': must be a child of the world"):
        FreeFloating(model, "forearm")
    free = FreeFloating(model, "bus")
    assert free.nv == model.nv and free.mass == pytest.approx(70.0)


def move_arm(timestep_s: float, spin: bool = False) -> dict[str, np.ndarray]:
    """A minimum-jerk joint motion of the arm in free space (servos track the profile);
    returns the momentum history, its scale and the bus and gripper motion."""
    scene = Scene(
        SceneCfg(
            num_envs=1,
            entities={"bot": library.arm_bus()},
            orbit=free_space(),
            timestep_s=timestep_s,
        )
    )
    free = FreeFloating(scene.mj_model, "bot/bus")
    qvel = scene.view.array("qvel")
    if spin:  # the bus drifting and tumbling before the arm moves
        qvel[0, :6] = torch.tensor([0.01, -0.02, 0.005, 0.05, -0.03, 0.04])
        scene.data.forward()
        scene.view.invalidate()
    arm = scene.actuators["bot/arm"]
    target = torch.zeros((1, arm.num), dtype=torch.float64)
    target[0, :6] = torch.tensor(ARM_TARGET)
    history, joint_momentum = [], 0.0
    steps = round((MOTION_S + 1.0) / timestep_s)
    for i in range(steps + 1):
        kin = free.kinematics(fields_of(scene))
        history.append(free.momentum(kin, qvel)[0].numpy().copy())
        arm_part = kin.momentum_matrix[..., 6:] @ qvel[:, free.dofs[6:], None]
        joint_momentum = max(joint_momentum, float(arm_part.abs().max()))
        if i == steps:
            break
        s = min(1.0, i * timestep_s / MOTION_S)
        arm.set_command(target * (10 * s**3 - 15 * s**4 + 6 * s**5))
        scene.step(1)
    momentum = np.array(history)
    drift = np.abs(momentum - momentum[0]).max()
    return {"drift": drift, "scale": joint_momentum, "momentum": momentum}


def test_joint_motion_conserves_momentum_at_fourth_order():
    """No external load: the arm's motion leaves the total momentum unchanged up to RK4's
    truncation error, which falls as dt^4 (measured 2.7e-5 N s at 0.01 s, the tasks' step,
    and 1.3e-6 N s at 0.005 s: MuJoCo's own RK4 gives the same 2.7e-5 N s on this model)."""
    coarse, fine = move_arm(0.01), move_arm(0.005)
    assert coarse["scale"] > 0.5  # N s: the joints' own momentum that the bus must cancel
    assert coarse["drift"] < 1e-4 * coarse["scale"]
    assert coarse["drift"] / fine["drift"] > 12.0  # fourth order: 16 (measured 21)
    spinning = move_arm(0.01, spin=True)
    assert np.abs(spinning["momentum"][0]).max() > 1.0  # N s: the drifting bus's own
    assert spinning["drift"] < 1e-4 * spinning["scale"]


@pytest.mark.slow
def test_joint_motion_conserves_momentum_to_1e9_at_a_fine_step():
    """RK4 reaches 1e-9 of the joints' momentum at dt = 0.000625 s (measured 3.9e-10)."""
    fine = move_arm(0.000625)
    assert fine["drift"] < 1e-9 * fine["scale"]


def test_generalized_jacobian_gives_the_gripper_and_bus_motion():
    """From rest (zero momentum), the bus moves as the momentum balance says: its velocity is
    -A_b^-1 A_m q_m', the gripper's is J* q_m' (MuJoCo's own site velocity as the reference),
    and the centre of mass stays where it was."""
    scene = Scene(SceneCfg(num_envs=1, entities={"bot": library.arm_bus()}, orbit=free_space()))
    m = scene.mj_model
    free = FreeFloating(m, "bot/bus")
    site = m.site("bot/grasp").id
    hand = int(m.site_bodyid[site])
    arm = scene.actuators["bot/arm"]
    target = torch.zeros((1, arm.num), dtype=torch.float64)
    target[0, :6] = torch.tensor(ARM_TARGET)
    qvel = scene.view.array("qvel")
    com0 = free.kinematics(fields_of(scene)).com[0].numpy().copy()
    bus0 = scene.view.array("qpos")[0, :7].numpy().copy()
    rows = []  # (bus qvel, its prediction, gripper velocity, its prediction)
    for i in range(round(MOTION_S / 0.01)):
        s = min(1.0, i * 0.01 / MOTION_S)
        arm.set_command(target * (10 * s**3 - 15 * s**4 + 6 * s**5))
        scene.step(1)
        if i % 50 != 25:
            continue
        kin = free.kinematics(fields_of(scene))
        joint_rates = qvel[:, free.dofs[6:], None]
        bus = -(free.root_response(kin) @ joint_rates)[0, :, 0].numpy()
        point = scene.view.array("site_xpos")[:, site]
        jstar = free.generalized_jacobian(kin, free.point_jacobian(kin, hand, point))
        predicted = (jstar @ joint_rates)[0, :, 0].numpy()
        velocity = np.zeros(6)  # MuJoCo: [angular; linear], world axes
        mujoco.mj_objectVelocity(
            m, mjdata_of(scene, 0), mujoco.mjtObj.mjOBJ_SITE, site, velocity, 0
        )
        rows.append((qvel[0, :6].numpy().copy(), bus, np.r_[velocity[3:], velocity[:3]], predicted))
    bus_actual, bus_predicted, grip_actual, grip_predicted = map(np.array, zip(*rows, strict=True))
    assert len(rows) == 6
    # The momentum RK4 leaves at 0.01 s (~3e-5 N s, ~4e-5 of the joints') is all they differ by.
    np.testing.assert_allclose(bus_actual, bus_predicted, atol=1e-4 * np.abs(bus_actual).max())
    np.testing.assert_allclose(grip_predicted, grip_actual, atol=1e-4 * np.abs(grip_actual).max())
    moved = np.linalg.norm(scene.view.array("qpos")[0, :3].numpy() - bus0[:3])
    assert moved > 0.01  # m: the bus really moved (1.2 cm)
    com = free.kinematics(fields_of(scene)).com[0].numpy()
    # The centre of mass stays put up to RK4's momentum error (measured 8e-7 m, 7e-5 of moved).
    assert np.linalg.norm(com - com0) < 2e-4 * moved


def test_orbit_loads_act_on_every_link():
    """Point-mass gravity on the bent arm: the net differential force is M T c and the torque
    about the centre of mass 3 mu / R^3 r x (I r), with T the tidal tensor, c the centre of
    mass relative to the chief and I the stack's composite inertia (closed forms to first
    order in size / R ~ 1e-7)."""
    orbit = OrbitLayerCfg(use_j2=False, use_drag=False, use_srp=False, use_magnetic=False)
    entities = {"bot": library.arm_bus(pos_m=(1.5, -2.0, 0.7))}
    scene = Scene(SceneCfg(num_envs=1, entities=entities, orbit=orbit))
    m = scene.mj_model
    qpos = scene.view.array("qpos")
    quat = torch.tensor([0.9, 0.2, -0.3, 0.25], dtype=torch.float64)
    qpos[0, 3:7] = quat / quat.norm()
    qpos[0, 7:13] = torch.tensor(ARM_TARGET)
    scene.data.forward()
    scene.view.invalidate()
    free = FreeFloating(m, "bot/bus")
    bodies = free.bodies.numpy()
    wrench = scene.data.torch("wrench")[0, bodies].numpy()  # world force, COM torque
    xipos = scene.view.array("xipos")[0, bodies].numpy()
    ximat = scene.view.array("ximat")[0, bodies].numpy().reshape(-1, 3, 3)
    mass, inertia = m.body_mass[bodies], m.body_inertia[bodies]
    com = (mass[:, None] * xipos).sum(0) / mass.sum()
    composite = sum(
        R @ np.diag(J) @ R.T
        + mi * (np.dot(r - com, r - com) * np.eye(3) - np.outer(r - com, r - com))
        for R, J, mi, r in zip(ximat, inertia, mass, xipos, strict=True)
    )
    R_m = scene.view.array("R")[0].numpy() * 1e3
    mu = scene.cfg.orbit.central_body.gm * 1e9  # m^3/s^2
    r_hat = R_m / np.linalg.norm(R_m)
    n2 = mu / np.linalg.norm(R_m) ** 3
    tidal = n2 * (3.0 * np.outer(r_hat, r_hat) - np.eye(3))
    force = wrench[:, :3].sum(0)
    torque = wrench[:, 3:].sum(0) + np.cross(xipos - com, wrench[:, :3]).sum(0)
    expected_force = mass.sum() * tidal @ com
    expected_torque = 3.0 * n2 * np.cross(r_hat, composite @ r_hat)
    assert np.abs(expected_torque).max() > 1e-6  # N m: the bent arm's gravity-gradient torque
    np.testing.assert_allclose(force, expected_force, atol=1e-6 * np.abs(expected_force).max())
    np.testing.assert_allclose(torque, expected_torque, atol=1e-5 * np.abs(expected_torque).max())
    # Every link carries its own share: the arm's links' forces are not zero.
    assert (np.linalg.norm(wrench[1:, :3], axis=1) > 0.0).all()


def grasped_stack(timestep_s: float):
    """The servicer holding the client by its grapple post (a weld at the assembled pose) with
    every arm and finger joint locked, in free space: one stack of 150 kg, rigid up to its
    constraints' softness (time constant 2 timesteps, MuJoCo's stiffest stable choice)."""
    entities = {
        "bot": library.arm_bus(),
        # Turned about z so that its post points back at the gripper; the grapple site is
        # then 1.96 - 0.62 = 1.34 m out, at the servicer's grasp site.
        "client": library.client_sat(pos_m=(1.96, 0.0, 0.0), quat=(0.0, 0.0, 0.0, 1.0)),
    }
    spec = assemble(entities, {}, timestep_s).mj_spec
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    # A zero relative quaternion makes the weld hold the pose of the reference configuration.
    spec.add_equality(
        type=mujoco.mjtEq.mjEQ_WELD,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        name1="bot/hand",
        name2="client/bus",
        data=[0.0] * 10 + [1.0, 0.0],
    )
    stiff = [2.0 * timestep_s, 1.0]
    for joint in spec.joints:
        if joint.name.startswith("bot/") and joint.type != mujoco.mjtJoint.mjJNT_FREE:
            spec.add_equality(
                type=mujoco.mjtEq.mjEQ_JOINT, objtype=mujoco.mjtObj.mjOBJ_JOINT, name1=joint.name
            )
    for equality in spec.equalities:
        equality.solref = stiff
    sim = SimSpec.from_mj_spec(spec)
    sim.orbit = free_space()
    return sim.compile(timestep=timestep_s).make_data(nworld=1)


def test_a_grasped_client_adds_its_mass_properties_to_the_stack():
    """A torque on the servicer's bus turns the whole stack: after an impulse L the bus turns
    at I^-1 L, with I the composite inertia of the two documented assets (parallel axes)."""
    dt = 0.002
    data = grasped_stack(dt)
    site = data.model.mj_model.site
    np.testing.assert_allclose(
        data.bind("site_xpos")[0, site("client/grapple").id],
        data.bind("site_xpos")[0, site("bot/grasp").id],
        atol=1e-12,
    )
    # Documented composites (assets/README.md): mass, COM along x, diagonal inertia; the
    # client is turned half a turn about z, which leaves its diagonal inertia as it is.
    parts = [
        (70.0, np.array([0.11492143, 0.0, 0.0]), np.diag([3.6097042, 10.316922, 10.317558])),
        (80.0, np.array([1.96 - 0.014375, 0.0, 0.0]), np.diag([6.5004, 9.48866875, 11.30866875])),
    ]
    mass = sum(p[0] for p in parts)
    com = sum(p[0] * p[1] for p in parts) / mass
    stack = sum(
        inertia + m * (np.dot(c - com, c - com) * np.eye(3) - np.outer(c - com, c - com))
        for m, c, inertia in parts
    )
    torque, duration = np.array([0.3, -0.5, 0.8]), 0.5  # N m on the bus, s
    bus = data.model.mj_model.body("bot/bus").id
    data.xfrc_applied[0, bus, 3:] = torque  # the user's force, added to the loads
    data.step(round(duration / dt))
    data.xfrc_applied[0, bus, 3:] = 0.0
    data.step(round(1.0 / dt))  # coasting while the locks and the weld settle
    data.forward()
    R = data.bind("xmat")[0, bus].reshape(3, 3)  # the stack has turned by ~0.02 rad
    omega = R @ data.bind("qvel")[0, 3:6]
    expected = R @ np.linalg.solve(stack, R.T @ (torque * duration))
    # The constraints' softness leaves a small internal vibration (measured 1.7e-3 of the rate).
    # The servicer alone would turn 2-12 times faster about each axis.
    np.testing.assert_allclose(omega, expected, rtol=0, atol=5e-3 * np.abs(expected).max())
    alone = np.linalg.solve(np.diag([3.6097042, 10.316922, 10.317558]), torque * duration)
    assert np.abs(alone - expected).max() > 0.5 * np.abs(expected).max()
