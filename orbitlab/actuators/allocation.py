"""Batched, exact allocation of a body wrench to non-negative thruster forces.

Per world, with B = [d_i ; (p_i - com) x d_i] (6 x n, body axes) and limits u >= 0 (N):

    forces = argmin ||B f - w||^2  subject to  0 <= f <= u,

and among all minimisers the one of least ||f||^2. With opposed pairs (+d and -d at one point)
that never fires both members (lowering both by the smaller force keeps the wrench and lowers
the norm); for the 12-thruster couple layout it is also the least total thrust (fuel).

Algorithm (all worlds at once, no loop over worlds): block principal pivoting with a monotone
fallback. Each thruster is free, at zero or at its limit; the free forces are the least-norm
least-squares answer for the wrench the fixed ones leave, f_F = B_F^T G^+ r, G = B_F B_F^T
(6 x 6), plus one refinement step. G^+ depends only on the free set, so it is formed once per
distinct set (Cholesky-checked LU inverse, eigendecomposition when singular: exact and finite
for rank-deficient sets, zero requests, all-failed worlds) and cached across calls under a
bit code; a sweep then costs a gather and two batched 6 x 6 products per world for any n.
Start: every thruster free, the shared B^+ w. KKT signs use g = B^T (B f - w) + lam (f - B^T
G^+ r), the lam -> 0 expansion of the gradient of ||B f - w||^2 + lam ||f||^2: the residual
decides first, the force norm breaks ties. All violators swap at once (2-5 sweeps for typical
requests); as that can cycle on awkward geometries, a world still unsolved after a few sweeps
switches to the primal active-set method (step towards the face minimiser until a bound
blocks, else free the worst thruster), which lowers the objective every step and so ends.
Solved worlds leave the working set (on the CPU; on a GPU, where a host read waits for the device,
the block-pivoting sweeps run on every world, a solved world's iterate simply staying put, and
the one read after them decides whether the fallback is needed; the Gram pseudo-inverses are
then formed per world and sweep instead of cached, since the cache lookup reads the host).
Unlike a fixed count of projected-gradient or ADMM steps
this stops at the optimum to rounding, which is what allows a 1e-9 `achievable` tolerance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from orbitlab import sync
from orbitlab.actuators.allocation_fused import FusedAllocation
from orbitlab.fw.allocation_kernel import LAMBDA as _LAMBDA
from orbitlab.fw.allocation_kernel import RCOND as _RCOND
from orbitlab.fw.allocation_kernel import SWEEPS as _SWEEPS
from orbitlab.fw.allocation_kernel import TOL_F as _TOL_F
from orbitlab.fw.allocation_kernel import TOL_G as _TOL_G
from orbitlab.stateful import Stateful

AXIS_NAMES = ("fx", "fy", "fz", "tx", "ty", "tz")
_CACHE_SIZE = 1 << 16  # free sets whose Gram pseudo-inverse is kept (36 floats each)
SOLVERS = ("kernel", "torch")


@dataclass(kw_only=True)
class AllocationResult(Stateful):
    """Outcome of `ThrusterAllocator.allocate` for B worlds and n thrusters."""

    state_attrs = ("forces", "achieved", "residual", "achievable")

    forces: torch.Tensor  # (B, n) thruster forces, N, each in [0, max_force]
    achieved: torch.Tensor  # (B, 6) wrench of `forces`: force N (3), torque N m (3), body axes
    residual: torch.Tensor  # (B, 6) requested minus achieved wrench
    achievable: torch.Tensor  # (B,) bool: the request was met within the allocator's tolerance


def _checked(
    value: object,
    name: str,
    shape: Sequence[int | None],
    device: torch.device | str,
    dtype: torch.dtype,
    values: bool = True,
) -> torch.Tensor:
    """`value` as a finite tensor of `shape` (None = any size), else ValueError naming it;
    `values=False`: the shape only (the finiteness check is a host read)."""
    try:
        t = torch.as_tensor(value, dtype=dtype, device=device)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"{name} must be numeric: {err}") from err
    if t.ndim != len(shape) or any(s is not None and s != d for s, d in zip(shape, t.shape)):
        want = "(" + ", ".join("N" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name} must have shape {want}, got {tuple(t.shape)}")
    if values and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return t


def _limits(
    value: object,
    name: str,
    shape: tuple[int, ...],
    device: torch.device | str,
    dtype: torch.dtype,
    values: bool = True,
) -> torch.Tensor:
    """Force limits (N): a scalar broadcast to `shape`, or exactly `shape`; finite and >= 0
    (`values=False`: the shape only)."""
    scalar = isinstance(value, int | float) or getattr(value, "ndim", None) == 0
    t = _checked(value, name, () if scalar else shape, device, dtype, values).expand(shape)
    if values and bool((t < 0).any()):
        raise ValueError(f"{name} must be >= 0")
    return t


def _psd_pinv(gram: torch.Tensor) -> torch.Tensor:
    """Pseudo-inverses of positive semi-definite (U, 6, 6) matrices: LU inverse where Cholesky
    finds them well conditioned (pivot ratio above 1e-10), eigendecomposition elsewhere."""
    diag = torch.linalg.cholesky_ex(gram)[0].diagonal(dim1=1, dim2=2)
    out = torch.linalg.inv_ex(gram)[0]
    bad = ~(diag.amin(dim=1) > 1e-5 * diag.amax(dim=1))  # also catches failed (NaN) factors
    if bool(bad.any()):
        out[bad] = torch.linalg.pinv(gram[bad], rtol=_RCOND, hermitian=True)
    return out


def _psd_pinv_masked(gram: torch.Tensor) -> torch.Tensor:
    """`_psd_pinv` without a host read: both answers formed for every matrix, each matrix's
    own kept (the same values as `_psd_pinv`, at the cost of an eigendecomposition each)."""
    diag = torch.linalg.cholesky_ex(gram)[0].diagonal(dim1=1, dim2=2)
    bad = ~(diag.amin(dim=1) > 1e-5 * diag.amax(dim=1))
    pinv = torch.linalg.pinv(gram, rtol=_RCOND, hermitian=True)
    return torch.where(bad[:, None, None], pinv, torch.linalg.inv_ex(gram)[0])


class ThrusterAllocator:
    """Maps body wrenches to thruster forces for a fixed thruster geometry, batched over worlds.

    positions_m (n, 3): thruster application points from the body origin, body axes, m.
    directions (n, 3): thrust directions (force on the body), body axes; normalised here.
    max_force_n: scalar or (n,) force limits, N (>= 0). center_of_mass_m (3,): body axes, m.
    iterations: cap on pivoting sweeps. solver: 'kernel' (each world's problem solved by its
    own thread of one Warp kernel, `orbitlab.fw.allocation_kernel`: no host read, no cache)
    or 'torch' (all worlds at once with torch, the reference). On a GPU (`orbitlab.sync`) `allocate` checks the
    shapes of its inputs but not their values (a host read): a non-finite wrench gives
    non-finite forces, which the physics' health check flags in the world they reach.
    tolerance: a request is achievable when every residual
    component is <= tolerance * (1 + largest limit in N); the refined solve reproduces met
    requests to ~1e-15 of that scale, so the default 1e-9 leaves a wide margin both ways
    (internal tolerances assume float64). `spans_all_wrenches`: every wrench direction can be
    produced (the thrusts positively span R^6, i.e. all 12 signed axes are reachable with forces
    <= 1e4 x the request); `impossible_axes` names the signed axes, '+fx' .. '-tz', that are not.
    """

    def __init__(
        self,
        positions_m: object,
        directions: object,
        max_force_n: object,
        center_of_mass_m: object = (0.0, 0.0, 0.0),
        *,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float64,
        iterations: int = 100,
        tolerance: float = 1e-9,
        solver: str = "kernel",
    ) -> None:
        pos = _checked(positions_m, "positions_m", (None, 3), device, dtype)
        n = pos.shape[0]
        if not 1 <= n <= 52:
            raise ValueError(f"positions_m must hold 1 to 52 thrusters, got {n}")
        dirs = _checked(directions, "directions", (n, 3), device, dtype)
        norm = dirs.norm(dim=1, keepdim=True)
        if bool((norm <= 0).any()):
            raise ValueError("directions must be non-zero vectors")
        com = _checked(center_of_mass_m, "center_of_mass_m", (3,), device, dtype)
        if not isinstance(iterations, int) or iterations < 1:
            raise ValueError("iterations must be a positive int")
        if not tolerance > 0:
            raise ValueError("tolerance must be > 0")
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {list(SOLVERS)}, got {solver!r}")
        self.solver = solver
        self._fused: dict[tuple[int, int, float], FusedAllocation] = {}
        self.max_force_n = _limits(max_force_n, "max_force_n", (n,), device, dtype)
        dirs = dirs / norm
        self.matrix = torch.cat([dirs, torch.cross(pos - com, dirs, dim=1)], dim=1).T.contiguous()
        self._pinv = torch.linalg.pinv(self.matrix, rtol=_RCOND)  # (n, 6), every thruster free
        self._shifts = torch.arange(n, device=device)
        self._bits = (2**self._shifts).to(torch.float64)  # free set -> code, exact to n = 52
        all_free = (self._bits.sum()[None], torch.zeros(1, dtype=torch.long, device=device))
        self._cache = (*all_free, (self._pinv.T @ self._pinv)[None])  # codes, slots, store
        self._scale = float((self.matrix**2).sum()) / 6.0  # mean eigenvalue s of B B^T
        self.iterations, self.tolerance = iterations, float(tolerance)
        self._host_reads = sync.host_reads_are_free(device)
        self.impossible_axes = self._impossible_axes()
        self.spans_all_wrenches = not self.impossible_axes

    @property
    def num_thrusters(self) -> int:
        return self.matrix.shape[1]

    def allocate(self, wrench: object, max_force_n: object | None = None) -> AllocationResult:
        """Forces (B, n) for wrenches (B, 6) [N, N m] about the COM; optional (B, n) limits."""
        dev, dt = self.matrix.device, self.matrix.dtype
        reads = self._host_reads
        w = _checked(wrench, "wrench", (None, 6), dev, dt, reads)
        shape = (w.shape[0], self.num_thrusters)
        u = (
            self.max_force_n.expand(shape)
            if max_force_n is None
            else _limits(max_force_n, "max_force_n", shape, dev, dt, reads)
        )
        if self.solver == "kernel" and w.shape[0] > 0:
            forces, achieved, residual, met = self._fused_run(w.shape[0]).solve(w, u)
        else:
            forces = self._solve(w, u)
            achieved = forces @ self.matrix.T
            residual = w - achieved
            met = residual.abs().amax(dim=1) <= self.tolerance * (1.0 + u.amax(dim=1))
        return AllocationResult(forces=forces, achieved=achieved, residual=residual, achievable=met)

    def _fused_run(self, batch: int) -> FusedAllocation:
        """The kernel's buffers and launch for `batch` worlds (made on first use)."""
        key = (batch, self.iterations, self.tolerance)  # both may be changed after construction
        run = self._fused.get(key)
        if run is None:
            run = self._fused[key] = FusedAllocation(
                self.matrix, self._pinv, self._scale, self.iterations, self.tolerance, batch
            )
        return run

    def _solve(self, w: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """Forces (B, n); a world leaves the working set once it satisfies the KKT conditions."""
        out, u_all = torch.zeros_like(u), u
        scale = 1.0 + u.amax(dim=1, keepdim=True) + w.norm(dim=1, keepdim=True) / self._scale**0.5
        movable = (u > 0).to(u.dtype)
        f = w @ self._pinv.T  # every thruster free: the shared least-norm solution
        below = (f < -_TOL_F * scale) | (movable == 0)
        above = (f > u + _TOL_F * scale) & ~below
        state = below.to(u.dtype) + 2.0 * above.to(u.dtype)  # 0 free, 1 at zero, 2 at limit
        done = ~(below | above).any(dim=1)
        work = [torch.arange(w.shape[0], device=w.device), w, u, movable, scale, state, f]
        # On a GPU, retiring a solved world is a host read: the block-pivoting sweeps keep every
        # world, a solved world's answer set aside and its state frozen, and the first
        # retirement follows them (the same answers as retiring each world when solved).
        masked = not self._host_reads
        solved, answer = done, f
        for sweep in range(self.iterations):
            if not (masked and sweep < _SWEEPS):
                if masked:  # the first host read: the set-aside answers come back
                    f, done, masked = torch.where(solved[:, None], answer, f), solved, False
                keep = (~done).nonzero()[:, 0]
                if keep.numel() < done.numel():  # retire solved worlds
                    out[work[0][done]] = f[done]
                    if keep.numel() == 0:
                        break
                    work = [t.index_select(0, keep) for t in work]
            _, w, u, movable, scale, state, x = work
            f, grad = self._subproblem(w, u, state)
            if sweep < _SWEEPS:  # block pivoting
                swap, target = self._violations(f, grad, u, movable, state, scale)
                if masked:
                    swap &= ~solved[:, None]
                done = ~swap.any(dim=1)
                work[5] = state + swap * (target - state)
                if masked:
                    answer = torch.where((done & ~solved)[:, None], f, answer)
                    solved = solved | done
            else:  # primal active set, from the clamped block-pivoting iterate
                x = torch.minimum(f.clamp(min=0.0), u) if sweep == _SWEEPS else x
                f, work[5], done = self._primal_step(x, f, grad, u, movable, state, scale)
                work[6] = f
        else:
            out[work[0]] = torch.where(solved[:, None], answer, f) if masked else f
        return torch.minimum(out.clamp(min=0.0), u_all)

    def _subproblem(
        self, w: torch.Tensor, u: torch.Tensor, state: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Least-norm least-squares forces (B, n) on the free set, and the KKT gradient (B, n)."""
        free = (1.0 - state).clamp(min=0.0)
        fixed = u * (state - 1.0).clamp(min=0.0)
        target = w - fixed @ self.matrix.T  # wrench left for the free thrusters
        if self._host_reads:
            gram_pinv = self._gram_pinv(free.to(torch.float64) @ self._bits)
        else:  # per world and sweep: the cache lookup would read the host
            gram_pinv = _psd_pinv_masked((self.matrix * free[:, None, :]) @ self.matrix.T)
        y = (gram_pinv @ target[:, :, None])[:, :, 0]  # free forces = B_F^T y
        f = free * (y @ self.matrix)
        dy = (gram_pinv @ (target - f @ self.matrix.T)[:, :, None])[:, :, 0]  # one refinement
        y, f = y + dy, fixed + f + free * (dy @ self.matrix)
        grad = (f @ self.matrix.T - w) @ self.matrix
        return f, grad + _LAMBDA * self._scale * (f - y @ self.matrix)

    def _gram_pinv(self, codes: torch.Tensor) -> torch.Tensor:
        """(B, 6, 6) pseudo-inverses of B_F B_F^T for free-set codes, cached across calls:
        sorted codes -> slots in a store that grows by doubling (new sets never copy old ones)."""
        keys, slots, store = self._cache
        pos = torch.searchsorted(keys, codes).clamp(max=keys.numel() - 1)
        miss = keys[pos] != codes
        if bool(miss.any()):
            new = torch.unique(codes[miss])
            k = keys.numel()
            if k + new.numel() > _CACHE_SIZE:  # full: start over with this batch's sets
                new, k = torch.unique(codes), 0
            m = new.numel()
            masks = ((new.long()[:, None] >> self._shifts) & 1).to(store.dtype)
            if store.shape[0] < k + m:
                store = torch.cat([store[:k], store.new_empty((max(k, m), 6, 6))])
            store[k : k + m] = _psd_pinv((self.matrix * masks[:, None, :]) @ self.matrix.T)
            keys, order = torch.sort(torch.cat([keys[:k], new]))
            slots = torch.cat([slots[:k], torch.arange(k, k + m, device=codes.device)])[order]
            self._cache = (keys, slots, store)
            pos = torch.searchsorted(keys, codes)
        return store.index_select(0, slots.index_select(0, pos))

    def _violations(
        self,
        f: torch.Tensor,
        grad: torch.Tensor,
        u: torch.Tensor,
        movable: torch.Tensor,
        state: torch.Tensor,
        scale: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """KKT violators (B, n) and the state each would move to (float codes)."""
        free, upper = (1.0 - state).clamp(min=0.0), (state - 1.0).clamp(min=0.0)
        lower = movable - free - upper  # thrusters with a zero limit never move
        tol_g = _TOL_G * self._scale * scale
        excess = free * (torch.maximum(-f, f - u) - _TOL_F * scale)
        excess += lower * (-grad - tol_g) + upper * (grad - tol_g)
        return excess > 0, free * (1.0 + (f > 0.5 * u).to(f.dtype))

    def _primal_step(
        self,
        x: torch.Tensor,
        p: torch.Tensor,
        grad: torch.Tensor,
        u: torch.Tensor,
        movable: torch.Tensor,
        state: torch.Tensor,
        scale: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Move feasible x towards the face minimiser p; fix the first blocking thruster at its
        bound, or after a full step free the thruster with the largest wrong-signed gradient."""
        d = (1.0 - state).clamp(min=0.0) * (p - x)
        ratio = torch.where(d != 0, torch.where(d < 0, x, u - x) / d.abs(), torch.inf)
        step = ratio.amin(dim=1, keepdim=True).clamp(max=1.0)
        blocked = (ratio <= step) & (step < 1.0)
        x = torch.minimum((x + step * d).clamp(min=0.0), u)
        x = torch.where(blocked, (d > 0) * u, x)
        state = torch.where(blocked, 1.0 + (d > 0).to(x.dtype), state)
        swap = self._violations(p, grad, u, movable, state, scale)[0] & (state > 0) & (step >= 1)
        score = torch.where(swap, grad.abs(), -1.0)
        pick = swap & (score == score.amax(dim=1, keepdim=True))
        pick &= pick.cumsum(dim=1) == 1
        return x, state * ~pick, (step[:, 0] >= 1.0) & ~swap.any(dim=1)

    def _impossible_axes(self) -> tuple[str, ...]:
        """Signed axes no non-negative force combination can produce (cone gain above 1e-4)."""
        dev, dt = self.matrix.device, self.matrix.dtype
        axes = torch.cat([torch.eye(6, dtype=dt, device=dev), -torch.eye(6, dtype=dt, device=dev)])
        limits = torch.ones(12, self.num_thrusters, dtype=dt, device=dev)
        res = self.allocate(1e-4 * axes, limits)  # unit limits: needs |f| <= 1e4 |w| per axis
        names = [s + a for s in "+-" for a in AXIS_NAMES]
        return tuple(name for name, ok in zip(names, res.achievable.tolist()) if not ok)
