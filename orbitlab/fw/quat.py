"""Quaternion and rotation helpers as Warp functions (float64; quaternions (w, x, y, z),
scalar first, in `wp.vec4d`): the twins of `orbitlab.sensors.rotations`, written in the
same operation order so that results agree with the torch reference to rounding."""

from __future__ import annotations

from orbitlab.quiet import wp  # Warp, started quietly

f64 = wp.float64


@wp.func
def quat_multiply(a: wp.vec4d, b: wp.vec4d) -> wp.vec4d:
    """Hamilton product a (x) b."""
    return wp.vec4d(
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
    )


@wp.func
def canonical(q: wp.vec4d) -> wp.vec4d:
    """The same rotation with w >= 0."""
    if q[0] < f64(0.0):
        return -q
    return q


@wp.func
def quat_from_rotation_vector(r: wp.vec3d) -> wp.vec4d:
    """The quaternion of a rotation vector (axis times angle, rad)."""
    angle = wp.length(r)
    half = f64(0.5) * angle
    scale = f64(0.5)
    if angle > f64(1.0e-12):
        scale = wp.sin(half) / angle
    return wp.vec4d(wp.cos(half), scale * r[0], scale * r[1], scale * r[2])


@wp.func
def quat_from_matrix(m: wp.mat33d) -> wp.vec4d:
    """The unit quaternion, w >= 0, of a rotation matrix: of the four candidates (4 x one
    component times the quaternion) the one of largest norm, normalised."""
    one = f64(1.0)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    a01 = m[2, 1] - m[1, 2]
    a02 = m[0, 2] - m[2, 0]
    a03 = m[1, 0] - m[0, 1]
    s12 = m[0, 1] + m[1, 0]
    s13 = m[0, 2] + m[2, 0]
    s23 = m[1, 2] + m[2, 1]
    one_minus = one - m[0, 0]
    best = wp.vec4d(one + trace, a01, a02, a03)
    norm = wp.length(best)
    c1 = wp.vec4d(a01, one + m[0, 0] - m[1, 1] - m[2, 2], s12, s13)
    if wp.length(c1) > norm:
        best = c1
        norm = wp.length(c1)
    c2 = wp.vec4d(a02, s12, one_minus + m[1, 1] - m[2, 2], s23)
    if wp.length(c2) > norm:
        best = c2
        norm = wp.length(c2)
    c3 = wp.vec4d(a03, s13, s23, one_minus - m[1, 1] + m[2, 2])
    if wp.length(c3) > norm:
        best = c3
    return canonical(best / wp.length(best))


@wp.func
def quat_to_matrix(q: wp.vec4d) -> wp.mat33d:
    """The rotation matrix (v_out = M v_in) of a quaternion, normalised first."""
    q = q / wp.length(q)
    w = q[0]
    x = q[1]
    y = q[2]
    z = q[3]
    one = f64(1.0)
    two = f64(2.0)
    return wp.mat33d(
        one - two * (y * y + z * z),
        two * (x * y - w * z),
        two * (x * z + w * y),
        two * (x * y + w * z),
        one - two * (x * x + z * z),
        two * (y * z - w * x),
        two * (x * z - w * y),
        two * (y * z + w * x),
        one - two * (x * x + y * y),
    )


@wp.func
def rotate(m: wp.mat33d, v: wp.vec3d) -> wp.vec3d:
    """m @ v, as columns times components (the order of `rotations.rotate`)."""
    return wp.vec3d(
        m[0, 0] * v[0] + m[0, 1] * v[1] + m[0, 2] * v[2],
        m[1, 0] * v[0] + m[1, 1] * v[1] + m[1, 2] * v[2],
        m[2, 0] * v[0] + m[2, 1] * v[1] + m[2, 2] * v[2],
    )


@wp.func
def rotate_inverse(m: wp.mat33d, v: wp.vec3d) -> wp.vec3d:
    """m^T @ v, as rows times components (the order of `rotations.rotate_inverse`)."""
    return wp.vec3d(
        m[0, 0] * v[0] + m[1, 0] * v[1] + m[2, 0] * v[2],
        m[0, 1] * v[0] + m[1, 1] * v[1] + m[2, 1] * v[2],
        m[0, 2] * v[0] + m[1, 2] * v[1] + m[2, 2] * v[2],
    )


@wp.func
def hill_frame(R: wp.vec3d, V: wp.vec3d) -> wp.mat33d:
    """ECI -> Hill rotation of a chief at R, V: rows x radial, y along-track, z orbit normal
    (as `SimView.hill`)."""
    h = wp.cross(R, V)
    x = R / wp.length(R)
    z = h / wp.length(h)
    y = wp.cross(z, x)
    return wp.mat33d(x[0], x[1], x[2], y[0], y[1], y[2], z[0], z[1], z[2])


@wp.func
def rotation_vector_from_quat(q: wp.vec4d) -> wp.vec3d:
    """Rotation vector (axis times angle in [0, pi], rad) of a unit quaternion; q and -q
    give the same (`rotations.rotation_vector_from_quat`)."""
    if q[0] < f64(0.0):
        q = -q
    vec = wp.vec3d(q[1], q[2], q[3])
    sin_half = wp.sqrt(vec[0] * vec[0] + vec[1] * vec[1] + vec[2] * vec[2])
    angle = f64(2.0) * wp.atan2(sin_half, q[0])
    return vec * angle / wp.max(sin_half, f64(1.0e-12))
