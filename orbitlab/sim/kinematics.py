"""Body kinematics for the kernels, read from one of two sources.

* `from_qpos`: every body other than the world is a free-floating root (one
  free joint, world parent). Its pose and velocity follow directly from the
  state rows qpos/qvel, so no derived MuJoCo field has to be bound (on the CPU
  backend each bound output field is copied out of every world after every
  call, which costs more than deriving them here).
* otherwise: MuJoCo's derived fields xipos, xmat, cvel (and subtree_com for
  articulated trees), current after a step with stage mjSTAGE_VEL.

Arrays are generic (float64 on the CPU backend, float32 on MuJoCo-Warp); every
value is cast to float64.
"""

from __future__ import annotations

from typing import Any

import mujoco

from orbitlab.quiet import wp  # Warp, started quietly

wp.set_module_options({"enable_backward": False})

f64 = wp.float64
vec3d = wp.vec3d


@wp.struct
class BodyIndex:
    """Per-body integer tables for the kinematics."""

    qposadr: wp.array(dtype=int)  # free joint's qpos address (from_qpos)
    dofadr: wp.array(dtype=int)  # free joint's dof address (from_qpos)
    cvel_ref: wp.array(dtype=int)  # body whose ref_pos row is cvel's reference point


@wp.struct
class BodyFrames:
    """Body kinematics, one row of bodies per world or per CPU thread (float64).

    The loads kernel fills a row once per world and reads it back for every
    element; on the CPU a row per thread suffices (worlds of a chunk run one
    after another), which keeps the scratch in cache. `frames_kernel` fills one
    row per world for diagnostics.
    """

    Q: wp.array2d(dtype=wp.mat33d)  # world-from-body rotation
    com: wp.array2d(dtype=wp.vec3d)  # COM in the chief frame, m
    omega: wp.array2d(dtype=wp.vec3d)  # angular velocity, world axes, rad/s
    v_com: wp.array2d(dtype=wp.vec3d)  # COM velocity, world axes, m/s


@wp.func
def quat_rotation(qw: f64, qx: f64, qy: f64, qz: f64) -> wp.mat33d:
    """Rotation matrix of the quaternion (qw, qx, qy, qz) after normalisation.

    R = I + s [[-(y^2+z^2), xy-wz, xz+wy], [xy+wz, -(x^2+z^2), yz-wx],
    [xz-wy, yz+wx, -(x^2+y^2)]] with s = 2/|q|^2: exact for any non-zero q, with
    one division and no square root; a (near) zero q gives the identity, as MuJoCo's
    normalisation does.
    """
    n2 = qw * qw + qx * qx + qy * qy + qz * qz
    if n2 < f64(1.0e-30):
        return wp.identity(n=3, dtype=f64)
    s = f64(2.0) / n2
    xx = s * qx * qx
    yy = s * qy * qy
    zz = s * qz * qz
    xy = s * qx * qy
    xz = s * qx * qz
    yz = s * qy * qz
    wx = s * qw * qx
    wy = s * qw * qy
    wz = s * qw * qz
    return wp.mat33d(
        f64(1.0) - yy - zz,
        xy - wz,
        xz + wy,
        xy + wz,
        f64(1.0) - xx - zz,
        yz - wx,
        xz - wy,
        yz + wx,
        f64(1.0) - xx - yy,
    )


@wp.func
def body_rotation(
    from_qpos: int, idx: BodyIndex, qpos: Any, xmat: Any, w: int, b: int
) -> wp.mat33d:
    """Q: world-from-body rotation of body b (MuJoCo's xmat)."""
    if from_qpos != 0:
        a = idx.qposadr[b]  # MuJoCo's quaternion order: (w, x, y, z)
        return quat_rotation(
            f64(qpos[w, a + 3]), f64(qpos[w, a + 4]), f64(qpos[w, a + 5]), f64(qpos[w, a + 6])
        )
    return wp.mat33d(xmat[w, b])


@wp.func
def body_com(
    from_qpos: int,
    idx: BodyIndex,
    qpos: Any,
    xipos: Any,
    Q: wp.mat33d,
    ipos: wp.vec3d,
    w: int,
    b: int,
) -> wp.vec3d:
    """Body b's COM in the chief frame, m (MuJoCo's xipos = xpos + Q ipos)."""
    if from_qpos != 0:
        a = idx.qposadr[b]
        return vec3d(f64(qpos[w, a]), f64(qpos[w, a + 1]), f64(qpos[w, a + 2])) + Q @ ipos
    return vec3d(xipos[w, b])


@wp.func
def body_velocity(
    from_qpos: int,
    idx: BodyIndex,
    qvel: Any,
    cvel: Any,
    ref_pos: Any,
    com: wp.vec3d,
    Q: wp.mat33d,
    ipos: wp.vec3d,
    w: int,
    b: int,
):
    """Angular velocity (rad/s) and COM linear velocity (m/s) of body b, world axes.

    Free joint: omega = Q qvel[3:6] (qvel's rotation is in body axes), and the COM
    moves at qvel[0:3] + omega x (Q ipos). Otherwise MuJoCo's cvel, a spatial
    velocity about the subtree COM of the body's root, shifted to the body COM
    by omega x (xipos - ref_pos[root]); so articulated bodies get their own COM
    velocity.
    """
    if from_qpos != 0:
        d = idx.dofadr[b]
        omega = Q @ vec3d(f64(qvel[w, d + 3]), f64(qvel[w, d + 4]), f64(qvel[w, d + 5]))
        v0 = vec3d(f64(qvel[w, d]), f64(qvel[w, d + 1]), f64(qvel[w, d + 2]))
        return omega, v0 + wp.cross(omega, Q @ ipos)
    v = cvel[w, b]
    omega = vec3d(f64(v[0]), f64(v[1]), f64(v[2]))
    lin = vec3d(f64(v[3]), f64(v[4]), f64(v[5]))
    return omega, lin + wp.cross(omega, com - vec3d(ref_pos[w, idx.cvel_ref[b]]))


@wp.func
def frame_row(frames: BodyFrames, nworld: int, w: int, chunk: int) -> int:
    """The scratch row of world w: its own when there is one per world, else its chunk's."""
    if frames.Q.shape[0] == nworld:
        return w
    return chunk


@wp.func
def fill_frames(
    from_qpos: int,
    nbody: int,
    idx: BodyIndex,
    frames: BodyFrames,
    row: int,
    w: int,
    qpos: Any,
    qvel: Any,
    xipos: Any,
    xmat: Any,
    cvel: Any,
    ref_pos: Any,
    body_ipos: Any,
    row_ipos: int,
):
    """Write every body's rotation, COM, angular velocity and COM velocity to `row`."""
    for b in range(1, nbody):
        Q = body_rotation(from_qpos, idx, qpos, xmat, w, b)
        ipos = vec3d(body_ipos[row_ipos, b])
        x = body_com(from_qpos, idx, qpos, xipos, Q, ipos, w, b)
        omega, v_com = body_velocity(from_qpos, idx, qvel, cvel, ref_pos, x, Q, ipos, w, b)
        frames.Q[row, b] = Q
        frames.com[row, b] = x
        frames.omega[row, b] = omega
        frames.v_com[row, b] = v_com


@wp.kernel
def frames_kernel(
    world_offset: int,
    chunk: int,
    from_qpos: int,
    idx: BodyIndex,
    frames: BodyFrames,
    qpos: wp.array2d(dtype=Any),
    qvel: wp.array2d(dtype=Any),
    xipos: wp.array2d(dtype=Any),
    xmat: wp.array2d(dtype=Any),
    cvel: wp.array2d(dtype=Any),
    ref_pos: wp.array2d(dtype=Any),
    body_ipos: wp.array2d(dtype=Any),
):
    """Per-world body kinematics for diagnostics (Hill states, wheel speeds)."""
    w = wp.tid() + world_offset
    row_ipos = w
    if body_ipos.shape[0] == 1:
        row_ipos = 0
    fill_frames(
        from_qpos,
        frames.Q.shape[1],
        idx,
        frames,
        w,
        w,
        qpos,
        qvel,
        xipos,
        xmat,
        cvel,
        ref_pos,
        body_ipos,
        row_ipos,
    )


def all_free_floating(m: mujoco.MjModel) -> bool:
    """True when every body but the world is a root with exactly one free joint."""
    for b in range(1, m.nbody):
        if m.body_parentid[b] != 0 or m.body_jntnum[b] != 1:
            return False
        if m.jnt_type[m.body_jntadr[b]] != mujoco.mjtJoint.mjJNT_FREE:
            return False
    return True
