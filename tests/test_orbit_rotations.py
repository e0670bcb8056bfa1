"""The numpy rotation helpers (`orbitlab.orbit.rotations`) agree with the torch entry points
(`orbitlab.sensors.rotations`, `orbitlab.agent.attitude`), the shared control laws
(`orbitlab.agent.laws`) give the same wrench on numpy and torch, and the numpy homes of the
frame and rotation math import neither torch nor MuJoCo."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from orbitlab.agent.attitude import attitude_error as attitude_error_torch
from orbitlab.agent.laws import lqr_force, quaternion_pd_torque
from orbitlab.orbit import rotations as rot
from orbitlab.sensors.rotations import quat_multiply

TOL = 1e-14
"""Float64 rounding of a few products of unit-size numbers."""


def _unit_quats(n: int, seed: int = 0) -> np.ndarray:
    q = np.random.default_rng(seed).normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def test_quat_multiply_and_attitude_error_match_torch():
    a, b = _unit_quats(16, 1), _unit_quats(16, 2)
    expected = quat_multiply(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert np.allclose(rot.quat_multiply(a, b), expected, rtol=0, atol=TOL)
    expected = attitude_error_torch(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert np.allclose(rot.attitude_error(a, b), expected, rtol=0, atol=TOL)


def test_matrix_round_trip_and_rotation_by_quaternion():
    q = _unit_quats(16, 3)
    q = np.where(q[:, :1] < 0, -q, q)
    M = rot.quat_to_matrix(q)
    assert np.allclose(M @ np.swapaxes(M, -1, -2), np.eye(3), rtol=0, atol=TOL)
    assert np.allclose(rot.matrix_to_quat(M), q, rtol=0, atol=1e-12)  # sqrt near w ~ 0
    v = np.array([0.3, -1.2, 2.0])
    rotated = rot.quat_multiply(rot.quat_multiply(q, np.r_[0.0, v]), rot.quat_conjugate(q))
    assert np.allclose(M @ v, rotated[:, 1:], rtol=0, atol=TOL * 4)


def test_mrp_round_trip():
    q = _unit_quats(16, 4)
    sigma = rot.quat_to_mrp(q)
    assert np.all(np.linalg.norm(sigma, axis=-1) <= 1.0 + TOL)
    assert np.allclose(rot.mrp_to_quat(sigma), np.where(q[:, :1] < 0, -q, q), rtol=0, atol=TOL)


def test_laws_agree_on_numpy_and_torch():
    rng = np.random.default_rng(5)
    K, s, limit = rng.normal(size=(3, 6)), rng.normal(size=(4, 6)), np.array([0.5, 1.0, 2.0])
    ref = lqr_force(torch.from_numpy(K), torch.from_numpy(s), torch.from_numpy(limit)).numpy()
    assert np.allclose(lqr_force(K, s, limit), ref, rtol=0, atol=TOL)
    e, w, J = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), np.diag([0.2, 0.3, 0.4])
    kw = {"inertia": J, "max_torque_nm": 0.8}
    got = quaternion_pd_torque(e, w, 2.0, 0.5, **kw)
    kw_t = {"inertia": torch.from_numpy(J), "max_torque_nm": 0.8}
    ref = quaternion_pd_torque(torch.from_numpy(e), torch.from_numpy(w), 2.0, 0.5, **kw_t)
    assert np.allclose(got, ref.numpy(), rtol=0, atol=TOL)
    assert np.linalg.norm(got, axis=-1).max() <= 0.8 * (1 + TOL)


@pytest.mark.parametrize("module", ["orbitlab.orbit.frames", "orbitlab.orbit.rotations"])
def test_numpy_math_imports_no_torch_or_mujoco(module):
    code = f"import sys, {module}; print(sorted({{'torch', 'mujoco'}} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_torch_entry_points_match_numpy():
    from orbitlab.orbit.frames import hill_frame, lvlh_rotation
    from orbitlab.sensors.rotations import lvlh_rotation as lvlh_rotation_torch
    from orbitlab.sensors.rotations import quat_to_matrix as quat_to_matrix_torch

    q = _unit_quats(8, 6)
    got = quat_to_matrix_torch(torch.from_numpy(q)).numpy()
    assert np.allclose(got, rot.quat_to_matrix(q), rtol=0, atol=TOL)
    rng = np.random.default_rng(7)
    R, V = rng.normal(size=(8, 3)) * 7000.0, rng.normal(size=(8, 3)) * 7.5
    got = lvlh_rotation_torch(torch.from_numpy(R), torch.from_numpy(V)).numpy()
    assert np.allclose(got, lvlh_rotation(R, V), rtol=0, atol=TOL)
    C, omega = hill_frame(R, V)
    # the rate is along the orbit normal (row z of C) with magnitude |R x V| / |R|^2
    h = np.linalg.norm(np.cross(R, V), axis=-1)
    rate = h / np.sum(R * R, -1)
    assert np.allclose(omega, rate[:, None] * C[:, 2], rtol=1e-14, atol=0)


def test_quat_yaw_of_a_rotation_about_z():
    yaw = np.array([-3.0, -0.5, 0.0, 1.2, 3.1])
    q = np.stack([np.cos(yaw / 2), 0 * yaw, 0 * yaw, np.sin(yaw / 2)], -1)
    assert np.allclose(rot.quat_yaw(q), yaw, rtol=0, atol=TOL * 10)  # atan2 of rounded sums
