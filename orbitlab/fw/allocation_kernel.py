"""The thruster allocation as one Warp kernel: each world's bounded least-squares problem
solved by its own thread, with no host read and no cache.

The problem and the method are those of `orbitlab.actuators.allocation` (its docstring has
the maths; both solvers use the constants below): forces = argmin ||B f - w||^2 subject to 0 <= f <= u, the least-norm minimiser;
block principal pivoting from the all-free least-norm answer, a world still unsolved after
`SWEEPS` sweeps falling back to the primal active-set method, with the same KKT signs and
tolerances. Where the torch solver caches the pseudo-inverse of each free set's 6 x 6 Gram
matrix, a thread forms it itself: a Cholesky factor where the pivots show it well
conditioned (as the torch solver's test), else a Jacobi eigendecomposition that drops
eigenvalues below `RCOND` of the largest. The two solvers agree to rounding (the tests
hold them to 1e-12 of the force scale); the torch one stays as the reference.
"""

from __future__ import annotations

from orbitlab.quiet import wp  # Warp, started quietly

LAMBDA = 1e-10
"""Weight of the force norm in the KKT signs, relative to s = mean eig(B B^T)."""
TOL_F = 1e-11
"""Bound violations under this fraction of the world's force scale are ignored."""
TOL_G = 1e-13
"""Gradient entries under this fraction of s times the force scale count as 0."""
RCOND = 1e-12
"""Eigenvalues of B_F B_F^T below this fraction of the largest count as 0."""
SWEEPS = 6
"""Block-pivoting sweeps before a world falls back to the primal method."""

vec6d = wp.types.vector(length=6, dtype=wp.float64)
mat66d = wp.types.matrix(shape=(6, 6), dtype=wp.float64)
f64 = wp.float64
FREE, AT_ZERO, AT_LIMIT = 0, 1, 2

_LAMBDA, _TOL_F, _TOL_G = wp.constant(f64(LAMBDA)), wp.constant(f64(TOL_F)), wp.constant(f64(TOL_G))
_RCOND, _SWEEPS = wp.constant(f64(RCOND)), wp.constant(SWEEPS)
_FREE, _AT_ZERO, _AT_LIMIT = wp.constant(FREE), wp.constant(AT_ZERO), wp.constant(AT_LIMIT)


@wp.func
def cholesky_inverse(g: mat66d) -> mat66d:
    """G^-1 from its Cholesky factor L (G = L L^T); the caller checked the pivots."""
    low = mat66d()
    for j in range(6):
        d = g[j, j]
        for k in range(j):
            d -= low[j, k] * low[j, k]
        low[j, j] = wp.sqrt(d)
        for i in range(j + 1, 6):
            v = g[i, j]
            for k in range(j):
                v -= low[i, k] * low[j, k]
            low[i, j] = v / low[j, j]
    inv_low = mat66d()  # L^-1, lower triangular
    for j in range(6):
        inv_low[j, j] = f64(1.0) / low[j, j]
        for i in range(j + 1, 6):
            v = f64(0.0)
            for k in range(j, i):
                v -= low[i, k] * inv_low[k, j]
            inv_low[i, j] = v / low[i, i]
    return wp.transpose(inv_low) * inv_low


@wp.func
def well_conditioned(g: mat66d) -> bool:
    """Whether the Cholesky pivots of G exist and their square roots keep a ratio above 1e-5
    (the torch solver's test for its LU inverse)."""
    low = mat66d()
    smallest = f64(1e300)
    largest = f64(0.0)
    for j in range(6):
        d = g[j, j]
        for k in range(j):
            d -= low[j, k] * low[j, k]
        if not (d > f64(0.0)):
            return False
        low[j, j] = wp.sqrt(d)
        smallest = wp.min(smallest, low[j, j])
        largest = wp.max(largest, low[j, j])
        for i in range(j + 1, 6):
            v = g[i, j]
            for k in range(j):
                v -= low[i, k] * low[j, k]
            low[i, j] = v / low[j, j]
    return smallest > f64(1e-5) * largest


@wp.func
def eigen_pinv(g: mat66d) -> mat66d:
    """Pseudo-inverse of symmetric PSD G from a cyclic Jacobi eigendecomposition, dropping
    eigenvalues at or below RCOND times the largest magnitude."""
    a = g
    v = wp.identity(n=6, dtype=f64)
    for sweep in range(50):
        off = f64(0.0)
        total = f64(0.0)
        for p in range(6):
            for q in range(6):
                total += a[p, q] * a[p, q]
                if p != q:
                    off += a[p, q] * a[p, q]
        if off <= f64(1e-32) * total:
            break
        for p in range(5):
            for q in range(p + 1, 6):
                apq = a[p, q]
                if apq != f64(0.0):
                    theta = (a[q, q] - a[p, p]) / (f64(2.0) * apq)
                    t = f64(1.0) / (wp.abs(theta) + wp.sqrt(theta * theta + f64(1.0)))
                    if theta < f64(0.0):
                        t = -t
                    c = f64(1.0) / wp.sqrt(t * t + f64(1.0))
                    s = t * c
                    for k in range(6):
                        akp = a[k, p]
                        akq = a[k, q]
                        a[k, p] = c * akp - s * akq
                        a[k, q] = s * akp + c * akq
                    for k in range(6):
                        apk = a[p, k]
                        aqk = a[q, k]
                        a[p, k] = c * apk - s * aqk
                        a[q, k] = s * apk + c * aqk
                    for k in range(6):
                        vkp = v[k, p]
                        vkq = v[k, q]
                        v[k, p] = c * vkp - s * vkq
                        v[k, q] = s * vkp + c * vkq
    largest = f64(0.0)
    for k in range(6):
        largest = wp.max(largest, wp.abs(a[k, k]))
    out = mat66d()
    for k in range(6):
        lam = a[k, k]
        if wp.abs(lam) > _RCOND * largest:
            for i in range(6):
                for j in range(6):
                    out[i, j] += v[i, k] * v[j, k] / lam
    return out


@wp.func
def psd_pinv(g: mat66d) -> mat66d:
    """Pseudo-inverse of a symmetric PSD 6 x 6 matrix (see the module doc)."""
    if well_conditioned(g):
        return cholesky_inverse(g)
    return eigen_pinv(g)


@wp.func
def subproblem(
    w: int,
    b: wp.array(dtype=vec6d),
    n: int,
    s: f64,
    wrench: vec6d,
    u: wp.array2d(dtype=f64),
    state: wp.array2d(dtype=wp.int32),
    p: wp.array2d(dtype=f64),
    grad: wp.array2d(dtype=f64),
):
    """The face minimiser p (least-norm least squares on the free set, one refinement) and
    the KKT gradient, for world w's current state."""
    g = mat66d()
    target = wrench
    for i in range(n):
        if state[w, i] == _FREE:
            g += wp.outer(b[i], b[i])
        elif state[w, i] == _AT_LIMIT:
            target -= u[w, i] * b[i]
    g_pinv = psd_pinv(g)
    y0 = g_pinv * target  # free forces = B_F^T y
    made = vec6d()
    for i in range(n):
        if state[w, i] == _FREE:
            made += wp.dot(b[i], y0) * b[i]
    dy = g_pinv * (target - made)  # one refinement
    y = y0 + dy
    achieved = vec6d()
    for i in range(n):
        f = f64(0.0)
        if state[w, i] == _FREE:
            f = wp.dot(b[i], y0) + wp.dot(b[i], dy)
        elif state[w, i] == _AT_LIMIT:
            f = u[w, i]
        p[w, i] = f
        achieved += f * b[i]
    for i in range(n):
        grad[w, i] = wp.dot(b[i], achieved - wrench) + _LAMBDA * s * (p[w, i] - wp.dot(b[i], y))


@wp.func
def excess(f: f64, gradient: f64, limit: f64, code: int, tol_f: f64, tol_g: f64) -> f64:
    """How far one thruster breaks its KKT condition (> 0: a violator)."""
    if code == _FREE:
        return wp.max(-f, f - limit) - tol_f
    if code == _AT_ZERO:
        if limit > f64(0.0):
            return -gradient - tol_g
        return f64(-1.0)  # a thruster with a zero limit never moves
    return gradient - tol_g


@wp.kernel
def allocation_kernel(
    world_offset: int,
    chunk: int,
    b: wp.array(dtype=vec6d),
    pinv: wp.array(dtype=vec6d),
    n: int,
    s: f64,
    iterations: int,
    tolerance: f64,
    wrench: wp.array(dtype=vec6d),
    u: wp.array2d(dtype=f64),
    state: wp.array2d(dtype=wp.int32),
    x: wp.array2d(dtype=f64),
    p: wp.array2d(dtype=f64),
    grad: wp.array2d(dtype=f64),
    forces: wp.array2d(dtype=f64),
    achieved: wp.array(dtype=vec6d),
    residual: wp.array(dtype=vec6d),
    achievable: wp.array(dtype=wp.bool),
):
    """World w's forces, achieved wrench, residual and achievable flag."""
    w = world_offset + wp.tid()
    wr = wrench[w]
    largest = f64(0.0)
    for i in range(n):
        largest = wp.max(largest, u[w, i])
    scale = f64(1.0) + largest + wp.length(wr) / wp.sqrt(s)
    tol_f = _TOL_F * scale
    tol_g = _TOL_G * s * scale
    done = bool(True)  # noqa: UP018 (Warp: a variable the loops may change)
    for i in range(n):  # every thruster free: the shared least-norm answer B^+ w
        f = wp.dot(pinv[i], wr)
        code = int(_FREE)
        if f < -tol_f or not (u[w, i] > f64(0.0)):
            code = _AT_ZERO
        elif f > u[w, i] + tol_f:
            code = _AT_LIMIT
        if code != _FREE:
            done = False
        state[w, i] = code
        p[w, i] = f
    primal = bool(False)  # noqa: UP018
    sweep = wp.int32(0)  # a variable the loop changes (Warp)
    while not done and sweep < iterations:
        subproblem(w, b, n, s, wr, u, state, p, grad)
        if sweep < _SWEEPS:  # block pivoting: every violator swaps
            done = bool(True)  # noqa: UP018
            for i in range(n):
                code = state[w, i]
                if excess(p[w, i], grad[w, i], u[w, i], code, tol_f, tol_g) > f64(0.0):
                    done = False
                    if code == _FREE:
                        state[w, i] = _AT_ZERO
                        if p[w, i] > f64(0.5) * u[w, i]:
                            state[w, i] = _AT_LIMIT
                    else:
                        state[w, i] = _FREE
        else:  # primal active set, from the clamped block-pivoting iterate
            if not primal:
                primal = bool(True)  # noqa: UP018
                for i in range(n):
                    x[w, i] = wp.min(wp.max(p[w, i], f64(0.0)), u[w, i])
            step = f64(1.0)
            for i in range(n):
                if state[w, i] == _FREE:
                    d = p[w, i] - x[w, i]
                    if d < f64(0.0):
                        step = wp.min(step, x[w, i] / wp.abs(d))
                    elif d > f64(0.0):
                        step = wp.min(step, (u[w, i] - x[w, i]) / d)
            for i in range(n):
                d = f64(0.0)
                if state[w, i] == _FREE:
                    d = p[w, i] - x[w, i]
                ratio = f64(1e300)
                if d < f64(0.0):
                    ratio = x[w, i] / wp.abs(d)
                elif d > f64(0.0):
                    ratio = (u[w, i] - x[w, i]) / d
                moved = wp.min(wp.max(x[w, i] + step * d, f64(0.0)), u[w, i])
                if d != f64(0.0) and ratio <= step < f64(1.0):  # blocked here
                    if d > f64(0.0):
                        moved = u[w, i]
                        state[w, i] = _AT_LIMIT
                    else:
                        moved = f64(0.0)
                        state[w, i] = _AT_ZERO
                x[w, i] = moved
            pick = wp.int32(-1)
            best = f64(-1.0)
            if step >= f64(1.0):
                for i in range(n):
                    code = state[w, i]
                    wrong = excess(p[w, i], grad[w, i], u[w, i], code, tol_f, tol_g) > f64(0.0)
                    if code != _FREE and wrong and wp.abs(grad[w, i]) > best:
                        best = wp.abs(grad[w, i])
                        pick = i
            if pick >= 0:
                state[w, pick] = _FREE
            done = step >= f64(1.0) and pick < 0
        sweep += 1
    made = vec6d()
    for i in range(n):
        f = p[w, i]
        if primal:
            f = x[w, i]
        f = wp.min(wp.max(f, f64(0.0)), u[w, i])
        forces[w, i] = f
        made += f * b[i]
    achieved[w] = made
    left = wr - made
    residual[w] = left
    worst = f64(0.0)
    for k in range(6):
        worst = wp.max(worst, wp.abs(left[k]))
    achievable[w] = worst <= tolerance * (f64(1.0) + largest)
