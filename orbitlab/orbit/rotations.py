"""Quaternions, rotation matrices and Modified Rodrigues parameters on the host (numpy).

The one numpy copy of this math; the torch entry points are in `orbitlab.sensors.rotations`.
Pure numpy, float64: nothing here imports torch, MuJoCo or Warp, so controller processes and
the bridge can use it.

Quaternions are (w, x, y, z), scalar first, Hamilton product. A quaternion q "A -> B" maps
A-axis coordinates to B-axis ones: v_B = q (x) (0, v_A) (x) q^* = quat_to_matrix(q) @ v_A.
Every function broadcasts over leading axes (..., 4), (..., 3) or (..., 3, 3).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float64]


def _f64(x: ArrayLike) -> Array:
    return np.asarray(x, dtype=np.float64)


def _components(x: ArrayLike) -> list[Array]:
    """The last axis of x split into its components, each (...,)."""
    x = _f64(x)
    return [x[..., i] for i in range(x.shape[-1])]


def quat_multiply(a: ArrayLike, b: ArrayLike) -> Array:
    """Hamilton product a (x) b of (..., 4) quaternions."""
    aw, ax, ay, az = _components(a)
    bw, bx, by, bz = _components(b)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        -1,
    )


def quat_conjugate(q: ArrayLike) -> Array:
    """q^* of (..., 4) quaternions (the inverse of a unit quaternion)."""
    p = _f64(q)
    return np.concatenate([p[..., :1], -p[..., 1:]], -1)


def quat_to_matrix(q: ArrayLike) -> Array:
    """Rotation matrices (..., 3, 3) of quaternions (..., 4), normalised first: v_B = M v_A."""
    p = _f64(q)
    p = p / np.linalg.norm(p, axis=-1, keepdims=True)
    w, x, y, z = _components(p)
    return np.stack(
        [
            1 - 2 * (y * y + z * z),
            2 * (x * y - w * z),
            2 * (x * z + w * y),
            2 * (x * y + w * z),
            1 - 2 * (x * x + z * z),
            2 * (y * z - w * x),
            2 * (x * z - w * y),
            2 * (y * z + w * x),
            1 - 2 * (x * x + y * y),
        ],
        -1,
    ).reshape(*p.shape[:-1], 3, 3)


def matrix_to_quat(m: ArrayLike) -> Array:
    """Unit quaternions (..., 4), w >= 0, of rotation matrices (..., 3, 3)."""
    m = _f64(m)
    w = np.sqrt(np.maximum(0.0, 1 + m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2])) / 2
    x = np.sqrt(np.maximum(0.0, 1 + m[..., 0, 0] - m[..., 1, 1] - m[..., 2, 2])) / 2
    y = np.sqrt(np.maximum(0.0, 1 - m[..., 0, 0] + m[..., 1, 1] - m[..., 2, 2])) / 2
    z = np.sqrt(np.maximum(0.0, 1 - m[..., 0, 0] - m[..., 1, 1] + m[..., 2, 2])) / 2
    x = np.copysign(x, m[..., 2, 1] - m[..., 1, 2])
    y = np.copysign(y, m[..., 0, 2] - m[..., 2, 0])
    z = np.copysign(z, m[..., 1, 0] - m[..., 0, 1])
    q = np.stack([w, x, y, z], -1)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def attitude_error(attitude: ArrayLike, target: ArrayLike) -> Array:
    """Error quaternion q_e = q_target^* (x) q with q_e.w >= 0 (shortest path), (..., 4).

    Both inputs are normalised first; q_e maps body axes to target axes, its vector part is
    sin(theta/2) times the rotation axis (as the torch `orbitlab.agent.attitude.attitude_error`).
    """
    q = _f64(attitude)
    t = _f64(target)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    t = t / np.linalg.norm(t, axis=-1, keepdims=True)
    error = quat_multiply(quat_conjugate(t), q)
    return np.where(error[..., :1] < 0, -error, error)


def quat_yaw(q: ArrayLike) -> Array:
    """Yaw (rad, in (-pi, pi]) of quaternions (..., 4): the z-y-x Euler angle about z,
    atan2(2 (w z + x y), 1 - 2 (y^2 + z^2))."""
    w, x, y, z = _components(q)
    return np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def quat_to_mrp(q: ArrayLike) -> Array:
    """Modified Rodrigues parameters (..., 3) of quaternions (..., 4), |sigma| <= 1 (the short
    rotation: q is flipped to w >= 0 first)."""
    p = _f64(q)
    p = np.where(p[..., :1] < 0.0, -p, p)
    return p[..., 1:] / (1.0 + p[..., :1])


def mrp_to_quat(sigma: ArrayLike) -> Array:
    """Quaternions (..., 4), w >= 0, of Modified Rodrigues parameters (..., 3)."""
    s = _f64(sigma)
    s2 = np.sum(s * s, axis=-1, keepdims=True)
    q = np.concatenate([1.0 - s2, 2.0 * s], -1) / (1.0 + s2)
    return np.where(q[..., :1] < 0.0, -q, q)
