"""ThrusterAllocator: exact, batched wrench -> non-negative thruster force allocation.

Every behaviour is checked for both solvers: the per-world Warp kernel (the default) and the
all-worlds torch solver (the reference); a test holds the two to rounding of each other.

Reference layout: the formation free-flyer of the bridge-and-formation spec (17.8 kg; the mass
does not enter allocation), twelve 1.5 N thrusters in six opposed pairs at 0.17 m arms
(`orbitlab.scene.catalog.FORMATION_THRUSTERS`, the layout of assets/formation_flyer.xml). Two
same-direction thrusters give the spec's 3.0 N per axis and a crossed pair its 0.51 N m.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from orbitlab.actuators.allocation import AXIS_NAMES, ThrusterAllocator
from orbitlab.scene.catalog import CHASER_THRUSTERS, FORMATION_THRUSTERS

F_MAX, ARM = 1.5, 0.17
TOL = 1e-9 * (1.0 + F_MAX)  # the allocator's own threshold; float64 rounding of B f is ~1e-15
PAIRS = [(2 * k, 2 * k + 1) for k in range(6)]  # thruster_2k / 2k+1: one point, opposite thrust
F64 = torch.float64


def table(rows: list[tuple[tuple, tuple]]) -> tuple[np.ndarray, np.ndarray]:
    """Positions (n, 3) m and directions (n, 3) of a catalog thruster table."""
    return np.array([p for p, _ in rows], float), np.array([d for _, d in rows], float)


def random_layout(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions within ~0.3 m, random directions and limits 0.5..2 N: no symmetry at all."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)) * 0.3, rng.normal(size=(n, 3)), rng.uniform(0.5, 2.0, n)


SOLVERS = ["kernel", "torch"]


@pytest.fixture(scope="module", params=SOLVERS)
def solver(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def flyer(solver) -> ThrusterAllocator:
    return ThrusterAllocator(*table(FORMATION_THRUSTERS), F_MAX, solver=solver)


def layouts(solver: str = "kernel") -> dict[str, ThrusterAllocator]:
    return {
        "flyer": ThrusterAllocator(*table(FORMATION_THRUSTERS), F_MAX, solver=solver),
        "chaser16": ThrusterAllocator(*table(CHASER_THRUSTERS), 22.0, solver=solver),
        "random24": ThrusterAllocator(*random_layout(24, 1), solver=solver),
    }


def lsq_reference(
    alloc: ThrusterAllocator, wrench: torch.Tensor, limits: torch.Tensor
) -> torch.Tensor:
    """Achieved wrenches (k, 6) of scipy's bounded least squares, world by world (a thruster
    with a zero limit is dropped: BVLS mishandles the degenerate bounds [0, 0])."""
    optimize = pytest.importorskip("scipy.optimize")
    rows = []
    for w, u in zip(wrench.numpy(), limits.numpy()):
        b = alloc.matrix.numpy()[:, u > 0]
        fit = optimize.lsq_linear(b, w, bounds=(0.0, u[u > 0]), method="bvls", tol=1e-14)
        rows.append(b @ fit.x)
    return torch.tensor(np.array(rows))


def test_reference_layout_spans_all_axes_with_the_spec_limits(flyer):
    assert flyer.matrix.shape == (6, 12) and flyer.spans_all_wrenches
    assert flyer.impossible_axes == ()
    limits = torch.tensor([3.0, 3.0, 3.0, 0.51, 0.51, 0.51], dtype=F64)
    request = torch.cat([torch.diag(limits), -torch.diag(limits)])
    met = flyer.allocate(request)
    assert met.achievable.all() and met.residual.abs().max() <= TOL
    over = flyer.allocate(1.001 * request)  # 0.1 % beyond the spec limits: saturates onto them
    assert not over.achievable.any()
    torch.testing.assert_close(over.achieved, request, rtol=0.0, atol=TOL)


@pytest.mark.parametrize("name", ["flyer", "chaser16", "random24"])
def test_achievable_wrenches_are_reproduced_in_1024_worlds(name, solver):
    alloc = layouts(solver)[name]
    u = alloc.max_force_n
    wrench = (
        torch.rand(1024, alloc.num_thrusters, dtype=F64, generator=torch.Generator().manual_seed(3))
        * u
    ) @ alloc.matrix.T
    res = alloc.allocate(wrench)
    assert res.forces.shape == (1024, alloc.num_thrusters) and res.achievable.all()
    # The allocator's tolerance scaled to this layout's largest limit; rounding is ~1e-14 N.
    assert res.residual.abs().max() <= 1e-9 * (1.0 + u.max())
    assert (res.forces >= 0).all() and (res.forces <= u).all()


@pytest.mark.parametrize("name", ["flyer", "random24"])
def test_saturated_wrenches_are_the_least_squares_optimum_of_scipy(name, solver):
    alloc = layouts(solver)[name]
    gen = torch.Generator().manual_seed(5)
    wrench = (
        4.0 * torch.randn(256, 6, dtype=F64, generator=gen) * torch.tensor([1.0] * 3 + [0.2] * 3)
    )
    gains = 0.5 + 0.5 * torch.rand(256, alloc.num_thrusters, dtype=F64, generator=gen)
    limits = gains * alloc.max_force_n  # per-world randomised thruster gains
    res = alloc.allocate(wrench, limits)
    assert (res.forces >= 0).all() and (res.forces <= limits).all()
    ref = lsq_reference(alloc, wrench[:16], limits[:16])
    ref_norm = (wrench[:16] - ref).norm(dim=1)
    # Same convex problem, both solvers exact up to rounding: the residual norms and the (unique)
    # optimal wrenches agree to 1e-9 relative; saturation is what the flag reports.
    assert ((res.residual[:16].norm(dim=1) - ref_norm).abs() <= 1e-9 * (1.0 + ref_norm)).all()
    torch.testing.assert_close(res.achieved[:16], ref, rtol=0.0, atol=1e-9)
    # The allocator's own achievability rule, applied to scipy's optimum.
    met = (wrench[:16] - ref).abs().amax(dim=1) <= 1e-9 * (1.0 + limits[:16].amax(dim=1))
    assert torch.equal(res.achievable[:16], met)
    assert (~res.achievable).sum() > 100  # most of these requests really do saturate


def test_a_direction_the_geometry_cannot_produce_is_reported(solver):
    positions = [(0.0, y, z) for y in (0.2, -0.2) for z in (0.2, -0.2)]
    # every thruster pushes +x
    alloc = ThrusterAllocator(positions, [(1.0, 0.0, 0.0)] * 4, F_MAX, solver=solver)
    assert not alloc.spans_all_wrenches
    # Only +x force is reachable as a pure axis; any torque comes with +x force.
    assert set(alloc.impossible_axes) == {s + a for s in "+-" for a in AXIS_NAMES} - {"+fx"}
    res = alloc.allocate(torch.tensor([[-1.0, 0, 0, 0, 0, 0], [1.0, 0, 0, 0, 0, 0]], dtype=F64))
    assert res.achievable.tolist() == [False, True]
    assert torch.equal(res.forces[0], torch.zeros(4, dtype=F64))  # firing only adds +x error
    assert torch.equal(res.residual[0], torch.tensor([-1.0, 0, 0, 0, 0, 0], dtype=F64))


def test_per_world_failures_are_respected_and_change_only_those_worlds(flyer):
    gen = torch.Generator().manual_seed(7)
    wrench = (torch.rand(200, 12, dtype=F64, generator=gen) * F_MAX) @ flyer.matrix.T
    limits = torch.full((200, 12), F_MAX, dtype=F64)
    limits[1::2, 0] = 0.0  # thruster_00 failed in odd worlds
    limits[4] = 0.0  # every thruster failed in world 4
    nominal, failed = flyer.allocate(wrench), flyer.allocate(wrench, limits)
    assert (failed.forces[1::2, 0] == 0).all() and (failed.forces[4] == 0).all()
    assert not failed.achievable[4] and torch.equal(failed.residual[4], wrench[4])
    intact = [i for i in range(0, 200, 2) if i != 4]
    # Worlds are independent: same arithmetic, so equal to rounding (1e-12 N).
    torch.testing.assert_close(failed.forces[intact], nominal.forces[intact], rtol=0, atol=1e-12)
    assert failed.achievable[intact].all()
    ref = lsq_reference(flyer, wrench[1:16:2], limits[1:16:2])
    torch.testing.assert_close(failed.achieved[1:16:2], ref, rtol=0.0, atol=1e-9)  # see above


def test_minimum_fuel_never_fires_both_thrusters_of_an_opposed_pair(flyer):
    gen = torch.Generator().manual_seed(11)
    force = (2 * torch.rand(256, 3, dtype=F64, generator=gen) - 1) * 2 * F_MAX
    torque = (2 * torch.rand(256, 3, dtype=F64, generator=gen) - 1) * 2 * F_MAX * ARM
    zeros = torch.zeros(256, 3, dtype=F64)
    for wrench, fuel in (
        (torch.cat([force, zeros], 1), force.abs().sum(1)),
        (torch.cat([zeros, torque], 1), torque.abs().sum(1) / ARM),
    ):
        res = flyer.allocate(wrench)
        assert res.achievable.all()
        for a, b in PAIRS:
            assert (torch.minimum(res.forces[:, a], res.forces[:, b]) == 0).all()
        # Each axis needs at least |F| (or |T| / arm) of thrust and that bound is met; a sum of
        # twelve forces <= 3 N rounds at ~1e-15 N, so 1e-12 is exact for this purpose.
        torch.testing.assert_close(res.forces.sum(1), fuel, rtol=0.0, atol=1e-12)


def test_zero_wrench_and_empty_batches_give_zero_forces(flyer):
    res = flyer.allocate(torch.zeros(5, 6, dtype=F64))
    assert torch.equal(res.forces, torch.zeros(5, 12, dtype=F64)) and res.achievable.all()
    dead = flyer.allocate(torch.zeros(2, 6), torch.zeros(2, 12))  # all thrusters failed
    assert torch.equal(dead.forces, torch.zeros(2, 12, dtype=F64)) and dead.achievable.all()
    assert flyer.allocate(torch.zeros(0, 6)).forces.shape == (0, 12)


def test_torque_arms_are_taken_about_the_centre_of_mass():
    positions, directions = table(FORMATION_THRUSTERS)
    com = np.array([0.02, -0.01, 0.03])
    alloc = ThrusterAllocator(positions, directions, F_MAX, center_of_mass_m=com)
    expected = np.vstack([directions.T, np.cross(positions - com, directions).T])
    # Same products of numbers <= 0.2 as numpy's cross: agreement to rounding (~1e-17).
    np.testing.assert_allclose(alloc.matrix.numpy(), expected, rtol=0, atol=1e-15)


GOOD = {"positions_m": np.zeros((3, 3)), "directions": np.eye(3), "max_force_n": 1.0}


@pytest.mark.parametrize(
    "name, change",
    [
        ("positions_m", {"positions_m": np.zeros((3, 2))}),
        ("positions_m", {"positions_m": np.full((3, 3), np.nan)}),
        ("directions", {"directions": np.eye(3)[:2]}),
        ("directions", {"directions": np.zeros((3, 3))}),
        ("max_force_n", {"max_force_n": -1.0}),
        ("max_force_n", {"max_force_n": [1.0, np.nan, 1.0]}),
        ("max_force_n", {"max_force_n": [1.0, 1.0]}),
        ("center_of_mass_m", {"center_of_mass_m": (0.0, 0.0)}),
        ("iterations", {"iterations": 0}),
        ("tolerance", {"tolerance": 0.0}),
        ("solver", {"solver": "scipy"}),
    ],
)
def test_bad_constructor_inputs_raise_value_errors_naming_the_argument(name, change):
    with pytest.raises(ValueError, match=name):
        ThrusterAllocator(**{**GOOD, **change})


@pytest.mark.parametrize(
    "name, wrench, limits",
    [
        ("wrench", torch.zeros(4, 5), None),
        ("wrench", torch.zeros(6), None),
        ("wrench", torch.full((4, 6), float("nan")), None),
        ("max_force_n", torch.zeros(4, 6), torch.ones(4, 11)),
        ("max_force_n", torch.zeros(4, 6), -torch.ones(4, 12)),
        ("max_force_n", torch.zeros(4, 6), torch.full((4, 12), float("inf"))),
    ],
)
def test_bad_allocate_inputs_raise_value_errors_naming_the_argument(flyer, name, wrench, limits):
    with pytest.raises(ValueError, match=name):
        flyer.allocate(wrench, limits)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_allocation_runs_on_cuda():
    alloc = ThrusterAllocator(*table(FORMATION_THRUSTERS), F_MAX, device="cuda")
    forces = torch.rand(512, 12, dtype=F64, device="cuda") * F_MAX
    res = alloc.allocate(forces @ alloc.matrix.T)
    assert res.forces.device.type == "cuda" and res.achievable.all()
    assert res.residual.abs().max() <= TOL


@pytest.mark.parametrize("name", ["flyer", "chaser16", "random24"])
def test_the_gpu_path_gives_the_same_forces_without_reading_the_host(name, monkeypatch):
    """Built as on a GPU (`host_reads_are_free` False), the torch solver checks shapes but not
    values, keeps every world through the block-pivoting sweeps and forms each world's Gram
    pseudo-inverse itself: no host read there, and the same forces to rounding (the fallback's
    worlds included; failed thrusters give singular free sets). Rounding, not bits: the two
    paths multiply batches of different sizes, which BLAS may sum in another order (measured
    2026-12-06 on one 2-core machine: 1-3 worlds of 512 differ by 1 ulp of 22 N)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_host_syncs import count_host_reads

    cpu = layouts("torch")[name]
    monkeypatch.setattr("orbitlab.sync.host_reads_are_free", lambda device: False)
    gpu = layouts("torch")[name]
    gen = torch.Generator().manual_seed(7)
    wrench = 3.0 * torch.randn(512, 6, dtype=F64, generator=gen)
    wrench[:128] *= 0.01  # achievable ones
    limits = (0.5 + 0.5 * torch.rand(512, cpu.num_thrusters, dtype=F64, generator=gen)) * (
        cpu.max_force_n
    )
    limits[::5, ::3] = 0.0  # failed thrusters
    for iterations in (100, 6, 2):
        cpu.iterations = gpu.iterations = iterations
        expected = cpu.allocate(wrench, limits).forces
        with count_host_reads() as reads:
            got = gpu.allocate(wrench, limits).forces
        ulp = torch.finfo(F64).eps * float(cpu.max_force_n.max())
        torch.testing.assert_close(got, expected, rtol=0, atol=8 * ulp, msg=str(iterations))
        sweeps = ("orbitlab/actuators/allocation.py", "_solve")
        assert set(reads) <= {sweeps}, reads  # only the read that ends block pivoting


def hard_requests(num_thrusters: int, max_force: torch.Tensor, count: int = 2048):
    """Wrenches (a quarter achievable) and per-world limits with failed thrusters."""
    gen = torch.Generator().manual_seed(7)
    wrench = 3.0 * torch.randn(count, 6, dtype=F64, generator=gen)
    wrench[: count // 4] *= 0.01
    gains = 0.5 + 0.5 * torch.rand(count, num_thrusters, dtype=F64, generator=gen)
    limits = gains * max_force
    limits[::5, ::3] = 0.0  # failed thrusters: singular free sets
    limits[7] = 0.0  # every thruster failed
    return wrench, limits


@pytest.mark.parametrize("name", ["flyer", "chaser16", "random24"])
def test_the_kernel_and_the_torch_solver_agree_to_rounding(name):
    """Both solve the same strictly convex problem exactly: the forces agree to 1e-11 of the
    world's force scale (observed: 1e-15 for the catalog layouts, 2e-12 for the random
    24-thruster one), for every sweep cap (the fallback's worlds included)."""
    kernel, reference = layouts("kernel")[name], layouts("torch")[name]
    wrench, limits = hard_requests(reference.num_thrusters, reference.max_force_n)
    scale = 1.0 + limits.amax(dim=1, keepdim=True)
    for iterations in (100, 6, 2):
        kernel.iterations = reference.iterations = iterations
        got, expected = kernel.allocate(wrench, limits), reference.allocate(wrench, limits)
        assert ((got.forces - expected.forces).abs() <= 1e-11 * scale).all(), iterations
        assert ((got.residual - expected.residual).abs() <= 1e-11 * scale).all(), iterations
        assert torch.equal(got.achievable, expected.achievable), iterations


def test_the_kernel_reads_nothing_back_and_its_results_outlive_later_calls(monkeypatch):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_host_syncs import count_host_reads

    monkeypatch.setattr("orbitlab.sync.host_reads_are_free", lambda device: False)
    alloc = layouts("kernel")["chaser16"]
    wrench, limits = hard_requests(alloc.num_thrusters, alloc.max_force_n, 256)
    first = alloc.allocate(wrench, limits)  # builds the launch for this batch size
    kept = first.forces.clone()
    with count_host_reads() as reads:
        second = alloc.allocate(2.0 * wrench, limits)
    assert not reads, reads
    assert torch.equal(first.forces, kept) and not torch.equal(second.forces, kept)
