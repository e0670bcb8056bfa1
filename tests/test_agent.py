"""Agent nodes and graph: timers, wiring, and the classic spacecraft controllers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import pytest
import torch

from orbitlab.agent import (
    AgentGraph,
    AllocationCfg,
    AllocationNode,
    BDotCfg,
    BDotNode,
    CwLqrCfg,
    CwLqrNode,
    HillForceToBodyNode,
    Node,
    NodeCfg,
    QuaternionPDCfg,
    QuaternionPDNode,
    TorqueToMagnetorquersCfg,
    TorqueToMagnetorquersNode,
    TorqueToWheelsCfg,
    TorqueToWheelsNode,
    bdot_gain,
    cw_stm,
    cw_zoh_input,
    mean_motion,
    riccati_map,
)
from orbitlab.orbit.constants import MU_EARTH_KM3_S2
from orbitlab.sensors.rotations import quat_multiply

F64 = torch.float64
N_500KM = mean_motion(6378.137 + 500.0)  # rad/s, ~1.107e-3


class Double(Node):
    """Test node: y = 2 x."""

    input_names = ("x",)
    output_names = ("y",)

    def compute(self, inputs):
        return {"y": 2.0 * inputs["x"]}


def t(values) -> torch.Tensor:
    return torch.as_tensor(values, dtype=F64)


def skew(w: torch.Tensor) -> torch.Tensor:
    """[w]x for (..., 3) vectors: skew(w) @ v = w x v."""
    z = torch.zeros_like(w[..., 0])
    return torch.stack(
        [
            torch.stack([z, -w[..., 2], w[..., 1]], -1),
            torch.stack([w[..., 2], z, -w[..., 0]], -1),
            torch.stack([-w[..., 1], w[..., 0], z], -1),
        ],
        -2,
    )


def quat_axis_angle(axis, angle) -> torch.Tensor:
    a = t(axis) / t(axis).norm()
    return torch.cat([t([math.cos(angle / 2)]), math.sin(angle / 2) * a])


# ------------------------------------------------------------------ timers and graph
@pytest.mark.parametrize("period_s, steps", [(0.0, 1), (0.1, 1), (0.3, 3), (0.5, 5)])
def test_timer_holds_output_between_updates(period_s, steps):
    node = Double(NodeCfg(period_s=period_s), "double", 2, 0.1)
    assert node.period_steps == steps
    graph = AgentGraph([node], external_inputs=["x"])
    for k in range(12):
        out = graph.step({"x": t([[k], [10.0 + k]])})
        last = k - k % steps  # the last call at which the timer was due
        assert torch.equal(out["y"], 2.0 * t([[last], [10.0 + last]]))


def test_partial_reset_restarts_that_world_timer():
    node = Double(NodeCfg(period_s=0.3), "double", 3, 0.1)
    graph = AgentGraph([node], external_inputs=["x"])
    seen = []
    for k in range(10):
        if k == 4:
            graph.reset(torch.tensor([1]))
            assert node.held["y"][1].item() == 0.0  # reset clears the held output
        seen.append(graph.step({"x": t([[k]] * 3)})["y"][:, 0].tolist())
    seen = torch.tensor(seen) / 2
    # worlds 0 and 2 update at calls 0, 3, 6, 9; world 1 at 0, 3, then 4 (reset), 7
    assert seen[:, 0].tolist() == [0, 0, 0, 3, 3, 3, 6, 6, 6, 9]
    assert seen[:, 2].tolist() == seen[:, 0].tolist()
    assert seen[:, 1].tolist() == [0, 0, 0, 3, 4, 4, 4, 7, 7, 7]
    assert graph.step_count.tolist() == [10, 6, 10]


class CountingDouble(Double):
    """Double that records which nodes compute."""

    computed: ClassVar[list[str]] = []

    def compute(self, inputs):
        type(self).computed.append(self.name)
        return super().compute(inputs)


def _graph_of_periods(periods_s, num_envs):
    nodes, key = [], "x"
    for i, period_s in enumerate(periods_s):
        out = f"y{i}"
        nodes.append(
            CountingDouble(
                NodeCfg(period_s=period_s, inputs={"x": key}, outputs={"y": out}),
                f"n{i}",
                num_envs,
                0.1,
            )
        )
        key = out
    return AgentGraph(nodes, external_inputs=["x"])


@pytest.mark.parametrize("skip_idle_calls", [True, False])  # the CPU's and a GPU's path
def test_a_compiled_graph_gives_the_uncompiled_outputs_and_skips_idle_nodes(skip_idle_calls):
    """Periods of 1, 2, 3, 4 and 6 calls under a cycle of 4 calls (an env's decimation),
    worlds reset at cycle boundaries: every output equal, bit for bit, to the uncompiled
    graph's at every call, and no compute where no world is due."""
    periods_s = (0.0, 0.2, 0.3, 0.4, 0.6, 0.1)
    graphs = [_graph_of_periods(periods_s, 5) for _ in range(2)]
    for graph in graphs:
        for node in graph.nodes:
            node._skip_idle_calls = skip_idle_calls
    compiled, reference = graphs
    compiled.compile(4)
    computed = []
    for call in range(48):
        if call % 4 == 0 and call % 12 == 8:  # a partial reset between cycles
            for graph in graphs:
                graph.reset(torch.tensor([1, 3]))
        x = t([[call], [2 * call], [-call], [0.5 * call], [3.0]])
        CountingDouble.computed = []
        out = compiled.step({"x": x}, phase=call % 4)
        computed.append(set(CountingDouble.computed))
        expected = reference.step({"x": x})
        for key in expected.maps[0]:
            assert torch.equal(out[key], expected[key]), (call, key)
    # n0, n5: every call; n1 (2 calls): phases 0, 2; n3 (4 calls): phase 0; n4 (6 calls):
    # phases 0 and 2 by its timer; n2 (3 calls): any phase, by its timer
    for call, names in enumerate(computed):
        phase = call % 4
        assert {"n0", "n5"} <= names
        assert ("n1" in names) == (phase in (0, 2))
        assert ("n3" in names) == (phase == 0)
        assert "n4" not in names or phase in (0, 2)
        if not skip_idle_calls:  # a GPU's path: a timer node computes (masked) when it may be due
            assert "n2" in names and ("n4" in names) == (phase in (0, 2))
    with pytest.raises(ValueError, match="phase = 4 must be in \\[0, 4\\)"):
        compiled.step({"x": t([[0.0]] * 5)}, phase=4)
    with pytest.raises(ValueError, match="cycle = 0 must be an int >= 1"):
        compiled.compile(0)


def test_period_must_be_whole_multiple_and_inputs_present():
    with pytest.raises(ValueError, match="node 'slow'.*whole multiple"):
        Double(NodeCfg(period_s=0.25), "slow", 1, 0.1)
    node = Double(NodeCfg(), "double", 1, 0.1)
    with pytest.raises(KeyError, match="node 'double'.*'x'"):
        node.update({"z": t([[1.0]])}, 0)
    with pytest.raises(ValueError, match="node 'bad'.*cfg.inputs"):
        Double(NodeCfg(inputs={"nope": "x"}), "bad", 1, 0.1)


class Passthrough(Node):
    """Test node: publishes its input tensor itself."""

    input_names = ("x",)
    output_names = ("y",)

    def compute(self, inputs):
        return {"y": inputs["x"]}


@pytest.mark.parametrize("period_s", [0.0, 0.2])
def test_held_outputs_are_the_nodes_own_copies(period_s):
    node = Passthrough(NodeCfg(period_s=period_s), "pass", 2, 0.1)
    graph = AgentGraph([node], external_inputs=["x"])
    x = t([[1.0], [2.0]])
    out = graph.step({"x": x})
    assert out["y"].tolist() == [[1.0], [2.0]] and out["y"] is not x
    graph.reset(torch.tensor([1]))  # zeroes the held output of world 1, not the reading
    assert x.tolist() == [[1.0], [2.0]] and node.held["y"].tolist() == [[1.0], [0.0]]


def test_a_missing_input_names_every_key_the_graph_offers():
    a = Double(NodeCfg(outputs={"y": "mid"}), "a", 1, 0.1)
    b = Double(NodeCfg(inputs={"x": "mid"}), "b", 1, 0.1)
    graph = AgentGraph([a, b], external_inputs=["x"])
    with pytest.raises(KeyError, match=r"node 'a': input 'x' needs key 'x'.*\['z'\]"):
        graph.step({"z": t([[1.0]])})
    graph = AgentGraph([b], external_inputs=["mid"])
    with pytest.raises(KeyError, match=r"needs key 'mid'.*\['w', 'x'\]"):
        graph.step({"x": t([[1.0]]), "w": t([[2.0]])})


def test_graph_validation_errors():
    a = Double(NodeCfg(), "a", 1, 0.1)
    with pytest.raises(ValueError, match="node 'a' input 'x' reads key 'x'"):
        AgentGraph([a])
    b = Double(NodeCfg(inputs={"x": "y"}), "b", 1, 0.1)  # reads a's output, publishes y again
    with pytest.raises(ValueError, match="key 'y' is published by both node 'a' and node 'b'"):
        AgentGraph([a, b], external_inputs=["x"])
    with pytest.raises(ValueError, match="node 'b' input 'x' reads key 'y'"):
        AgentGraph([b, a], external_inputs=["x"])  # order matters: y comes later
    with pytest.raises(ValueError, match="two nodes are named 'a'"):
        AgentGraph([a, Double(NodeCfg(), "a", 1, 0.1)], external_inputs=["x"])
    with pytest.raises(ValueError, match="node 'c' has num_envs 2"):
        AgentGraph(
            [a, Double(NodeCfg(inputs={"x": "y"}, outputs={"y": "w"}), "c", 2, 0.1)],
            external_inputs=["x"],
        )


def test_chain_wiring_suffix_and_table():
    a = Double(NodeCfg(outputs={"y": "mid"}), "a", 2, 0.1)
    b = Double(NodeCfg(period_s=0.2, inputs={"x": "mid"}, outputs={"y": "out"}), "b", 2, 0.1)
    graph = AgentGraph([a, b], external_inputs=["x"])
    out = graph.step({"x": t([[1.0], [2.0]])})
    assert out["mid"].tolist() == [[2.0], [4.0]] and out["out"].tolist() == [[4.0], [8.0]]
    tail = graph.suffix("a")  # a policy now provides 'mid'
    assert [n.name for n in tail.nodes] == ["b"] and "mid" in tail.external_inputs
    assert tail.step({"mid": t([[5.0], [6.0]])})["out"].tolist() == [[10.0], [12.0]]
    with pytest.raises(ValueError, match="no node after 'b'"):
        graph.suffix("b")
    text = str(graph)
    assert "a" in text and "0.2 s" in text and "mid -> out" in text and "every call" in text


# ------------------------------------------------------------------ attitude
def test_bdot_opposes_field_change_and_saturates():
    dt, n_env = 0.1, 2
    node = BDotNode(BDotCfg(gain=2.0e5, period_s=0.2), "bdot", n_env, dt)
    omega = t([[0.05, -0.02, 0.03], [0.0, 0.0, 0.1]])  # body rate, rad/s
    b0 = t([2e-5, -1e-5, 3e-5])  # T, constant in inertial axes

    def field(time_s):  # body axes: R^T b0 with R = exp(t [omega]x) body -> inertial
        return (torch.linalg.matrix_exp(-time_s * skew(omega)) @ b0[:, None])[..., 0]

    outputs = []
    for k in range(5):
        node.update({"magnetometer": field(k * dt)}, k)
        outputs.append(node.held["mtq_dipole"].clone())
    assert torch.equal(outputs[0], torch.zeros(n_env, 3))  # first update: no previous reading
    assert torch.equal(outputs[1], outputs[0])  # held between updates (period 2 calls)
    expected = -2.0e5 * (field(0.2) - field(0.0)) / 0.2
    assert torch.allclose(outputs[2], expected, rtol=1e-12, atol=0)  # same formula, rounding only
    bdot = torch.linalg.cross(field(0.3), omega)  # continuous dB/dt = B x omega at mid-interval
    assert bool(((outputs[2] * bdot).sum(-1) < 0).all())
    torque = torch.linalg.cross(outputs[2], field(0.2))
    assert bool(((torque * omega).sum(-1) < 0).all())  # the magnetic torque removes energy
    clipped = BDotNode(BDotCfg(gain=2.0e9, max_dipole_am2=0.2), "clip", n_env, dt)
    for k in range(2):
        clipped.update({"magnetometer": field(k * dt)}, k)
    assert clipped.held["mtq_dipole"].abs().max().item() == pytest.approx(0.2, abs=0)
    assert bdot_gain(1e-3, math.pi / 2, 0.05) == pytest.approx(2e-4, rel=1e-15)  # 2 n 2 J, exact


def test_bdot_detumbles_spherical_body_in_constant_field():
    """J = 0.1 kg m^2 sphere, constant inertial field: rate across B decays, along B stays."""
    dt, inertia, n_env = 0.1, 0.1, 1
    b_inertial = t([3e-5, 0.0, 1e-5])
    node = BDotNode(
        BDotCfg(gain=bdot_gain(N_500KM, 0.9, inertia), normalized=True, max_dipole_am2=1.0),
        "bdot",
        n_env,
        dt,
    )
    omega, rot = t([[0.08, -0.05, 0.06]]), torch.eye(3, dtype=F64)[None]  # inertial rad/s
    b_hat = b_inertial / b_inertial.norm()
    perp0 = (omega - (omega @ b_hat)[:, None] * b_hat).norm().item()
    along0 = (omega @ b_hat).item()
    for k in range(3000):
        field_body = rot.transpose(1, 2) @ b_inertial
        node.update({"magnetometer": field_body}, k)
        torque_inertial = rot @ torch.linalg.cross(node.held["mtq_dipole"], field_body)[0]
        omega = omega + dt * torque_inertial / inertia
        rot = torch.linalg.matrix_exp(dt * skew(omega)) @ rot  # inertial rate: R <- exp R
    perp = (omega - (omega @ b_hat)[:, None] * b_hat).norm().item()
    # continuous law: torque = -k omega_perp, so omega_perp decays as exp(-k t / J); the backward
    # difference and hold change that by O(omega dt) ~ 1 % over 300 s, hence 5 %
    expected = math.exp(-bdot_gain(N_500KM, 0.9, inertia) / inertia * 300.0)
    assert perp / perp0 == pytest.approx(expected, rel=0.05)
    assert (omega @ b_hat).item() == pytest.approx(along0, rel=1e-9)  # m x B is normal to B


def _pd(**kw):
    cfg = QuaternionPDCfg(kp_nm=0.4, kd_nms=2.0, **kw)
    return QuaternionPDNode(cfg, "pd", 2, 0.1)


def test_pd_closed_form_and_shortest_path():
    node = _pd()
    axis, angle = t([1.0, 2.0, -2.0]) / 3.0, 0.1
    target = quat_axis_angle([0.0, 0.3, 1.0], 0.7)
    q = quat_multiply(target, quat_axis_angle(axis, angle))  # body = target turned by 0.1 rad
    rate, target_rate = t([0.01, -0.02, 0.003]), t([0.0, 0.005, 0.0])
    node.update(
        {
            "attitude": torch.stack([q, -q]),
            "rate": rate.expand(2, 3),
            "target_attitude": target.expand(2, 4),
            "target_rate": target_rate.expand(2, 3),
        },
        0,
    )
    expected = -0.4 * math.sin(angle / 2) * axis - 2.0 * (rate - target_rate)
    torque = node.held["torque"]
    assert torch.allclose(torque, expected.expand(2, 3), rtol=0, atol=1e-15)  # rounding only
    # 350 deg about a = -10 deg: the torque turns the body forward, the short way
    far = quat_axis_angle(axis, math.radians(350.0))
    node.update(
        {
            "attitude": far.expand(2, 4),
            "rate": torch.zeros(2, 3, dtype=F64),
            "target_attitude": t([1.0, 0, 0, 0]).expand(2, 4),
        },
        0,
    )
    forward = 0.4 * math.sin(math.radians(5.0)) * axis  # -Kp q_e,vec of the -10 deg error
    assert torch.allclose(node.held["torque"][0], forward, rtol=0, atol=1e-15)  # rounding only


def test_pd_gyroscopic_term_and_saturation():
    J = (2.0, 3.0, 4.0)
    node = _pd(inertia_kgm2=J, max_torque_nm=0.05)
    rate = t([[0.1, 0.2, -0.1], [0.0, 0.0, 0.0]])
    identity = t([1.0, 0, 0, 0]).expand(2, 4)
    node.update({"attitude": identity, "rate": rate, "target_attitude": identity}, 0)
    raw = -2.0 * rate + torch.linalg.cross(rate, rate * t(J))
    assert raw[0].norm() > 0.05
    limited = raw[0] * 0.05 / raw[0].norm()  # same direction, norm at the limit
    assert torch.allclose(node.held["torque"][0], limited, rtol=0, atol=1e-16)  # rounding only
    assert torch.equal(node.held["torque"][1], torch.zeros(3, dtype=F64))


# ------------------------------------------------------------------ mappings
def test_wheel_distribution_closed_form():
    s = 1 / math.sqrt(3)
    axes = ((s, s, s), (-s, s, s), (-s, -s, s), (s, -s, s))  # pyramid of 4 wheels
    node = TorqueToWheelsNode(TorqueToWheelsCfg(wheel_axes=axes), "rw", 2, 0.1)
    tau = t([[1e-3, -2e-3, 5e-4], [0.0, 0.0, 1e-2]])
    node.update({"torque": tau}, 0)
    wheel = node.held["wheel_torque"]
    A = t(axes).T
    # the reaction -A tau_w is tau; atol 1e-17 N m is ~1e-14 of the torques (rounding)
    assert torch.allclose(-(wheel @ A.T), tau, rtol=0, atol=1e-17)
    # pyramid closed form: tau_w,i = -(3/4) a_i . tau (A A^T = (4/3) I, so pinv(A) = (3/4) A^T)
    assert torch.allclose(wheel, -0.75 * tau @ A, rtol=0, atol=1e-17)  # rounding, as above
    limited = TorqueToWheelsNode(TorqueToWheelsCfg(max_wheel_torque_nm=1e-3), "rw3", 2, 0.1)
    limited.update({"torque": tau}, 0)
    # whole-vector scaling to the 1e-3 N m limit; atol 1e-18 is rounding of 1e-3
    assert torch.allclose(limited.held["wheel_torque"][1], t([0, 0, -1e-3]), rtol=0, atol=1e-18)


def test_magnetorquer_mapping_closed_form():
    field = t([[2e-5, -1e-5, 3e-5], [0.0, 0.0, 0.0]])
    tau = t([[1e-6, 2e-6, -1e-6], [1e-6, 0, 0]])
    node = TorqueToMagnetorquersNode(TorqueToMagnetorquersCfg(), "mtq", 2, 0.1)
    node.update({"torque": tau, "magnetometer": field}, 0)
    m = node.held["mtq_dipole"]
    b_hat = field[0] / field[0].norm()
    perp = tau[0] - (tau[0] @ b_hat) * b_hat
    # m x B is the part of tau normal to B; 1e-12 relative covers the /|B|^2 rounding
    assert torch.allclose(torch.linalg.cross(m[0], field[0]), perp, rtol=1e-12, atol=0)
    assert torch.equal(m[1], torch.zeros(3, dtype=F64))  # no field: no command
    skew = ((1.0, 0.0, 0.0), (0.6, 0.8, 0.0), (0.0, 0.0, 1.0))  # non-orthogonal rods
    rods = TorqueToMagnetorquersNode(TorqueToMagnetorquersCfg(dipole_axes=skew), "mtq2", 2, 0.1)
    rods.update({"torque": tau, "magnetometer": field}, 0)
    # the rod dipoles rebuild the body dipole; 1e-12 relative covers pinv rounding
    assert torch.allclose(rods.held["mtq_dipole"] @ t(skew), m, rtol=1e-12, atol=0)


def test_hill_force_to_body_and_allocation_suffix():
    c, s = math.cos(0.3), math.sin(0.3)
    hill_to_body = t([[c, -s, 0], [s, c, 0], [0, 0, 1]]).expand(2, 3, 3)
    try:
        from orbitlab.actuators.allocation import ThrusterAllocator

        dirs = [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]]
        allocator = ThrusterAllocator(torch.zeros(6, 3), dirs, 1.0)
    except ImportError:  # allocator not written yet: least-norm stand-in
        allocator = _StandIn()
    to_body = HillForceToBodyNode(NodeCfg(), "to_body", 2, 0.1)
    alloc = AllocationNode(AllocationCfg(allocator=allocator, period_s=0.2), "alloc", 2, 0.1)
    graph = AgentGraph([to_body, alloc], external_inputs=["force_hill", "hill_to_body"])
    force = t([[0.2, -0.1, 0.05], [0.0, 0.3, 0.0]])
    out = graph.step({"force_hill": force, "hill_to_body": hill_to_body})
    body = (hill_to_body @ force[..., None])[..., 0]
    assert torch.equal(out["wrench_body"], torch.cat([body, torch.zeros(2, 3, dtype=F64)], -1))
    f = out["thruster_force"]
    achieved = f[:, 0::2] - f[:, 1::2]  # opposed pairs along +-x, +-y, +-z
    assert torch.allclose(achieved, body, atol=1e-12)  # allocator solves to ~1e-15 N
    policy = graph.suffix("to_body")  # a learned policy outputs the body wrench
    wrench = t([[0.0, 0.0, -0.4, 0, 0, 0]] * 2)
    f2 = policy.step({"wrench_body": wrench}, step_count=0)["thruster_force"]
    assert torch.allclose(f2[:, 4] - f2[:, 5], t([-0.4, -0.4]), atol=1e-12)  # as above


@dataclass
class _Result:
    forces: torch.Tensor


class _StandIn:
    def allocate(self, wrench):
        f = wrench[:, :3]
        return _Result(torch.stack([f.clamp(min=0), (-f).clamp(min=0)], -1).reshape(-1, 6))


# ------------------------------------------------------------------ CW + LQR
def _cw_matrix(n: float) -> torch.Tensor:
    A = torch.zeros(6, 6, dtype=F64)
    A[:3, 3:] = torch.eye(3, dtype=F64)
    A[3, 0], A[3, 4], A[4, 3], A[5, 2] = 3 * n * n, 2 * n, -2 * n, -n * n
    return A


def _rk4(A: torch.Tensor, X: torch.Tensor, drive: torch.Tensor, t_end: float, h: float):
    """Integrate dX/dt = A X + drive with classic RK4 from X at t = 0 to t_end."""
    for _ in range(round(t_end / h)):
        k1 = A @ X + drive
        k2 = A @ (X + 0.5 * h * k1) + drive
        k3 = A @ (X + 0.5 * h * k2) + drive
        k4 = A @ (X + h * k3) + drive
        X = X + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return X


@pytest.mark.parametrize("t_end, h", [(0.2, 0.01), (1500.0, 1.0)])
def test_cw_stm_and_zoh_match_rk4(t_end, h):
    """RK4 local error ~ (n h)^5 / 120 < 1e-17, so 1e-9 relative leaves room for rounding."""
    n, mass = N_500KM, 12.0
    A = _cw_matrix(n)
    phi = _rk4(A, torch.eye(6, dtype=F64), torch.zeros(6, 6, dtype=F64), t_end, h)
    assert ((cw_stm(n, t_end) - phi).norm() / phi.norm()).item() < 1e-9  # Frobenius norm
    drive = torch.zeros(6, 3, dtype=F64)
    drive[3:] = torch.eye(3, dtype=F64) / mass
    gamma = _rk4(A, torch.zeros(6, 3, dtype=F64), drive, t_end, h)
    assert ((cw_zoh_input(n, t_end, mass) - gamma).norm() / gamma.norm()).item() < 1e-9
    assert mean_motion(6378.137 + 500.0) == pytest.approx(
        math.sqrt(MU_EARTH_KM3_S2 / 6878.137**3), rel=1e-15
    )  # same formula, rounding only


def test_cw_lqr_gain_riccati_and_closed_loop():
    cfg = CwLqrCfg(
        mean_motion_rad_s=N_500KM,
        mass_kg=12.0,
        period_s=0.2,
        q_pos=1.0,
        q_vel=100.0,
        r_force=100.0,
        max_force_n=0.5,
    )
    node = CwLqrNode(cfg, "lqr", 3, 0.1)  # 5 Hz control, 10 Hz graph
    assert node.K.shape == (3, 6)
    assert torch.linalg.eigvals(node.closed_loop).abs().max().item() < 1.0
    residual = riccati_map(node.P, node.A_d, node.B_d, node.Q, node.R) - node.P
    # solve_dare stops at 1e-14 relative change; 1e-9 is the required bound
    assert (residual.norm() / node.P.norm()).item() < 1e-9
    graph = AgentGraph([node], external_inputs=["rel_pos", "rel_vel"])
    phi, gamma = cw_stm(N_500KM, 0.1), cw_zoh_input(N_500KM, 0.1, 12.0)  # truth at graph dt
    state = torch.cat([10.0 * torch.eye(3, dtype=F64), torch.zeros(3, 3, dtype=F64)], 1)
    late = []
    for k in range(1800):  # 180 s; the force is held over 2 graph steps and clipped at 0.5 N
        force = graph.step({"rel_pos": state[:, :3], "rel_vel": state[:, 3:]})["force_hill"]
        assert force.abs().max().item() <= 0.5
        state = state @ phi.T + force @ gamma.T
        if k >= 1200:
            late.append(state[:, :3].norm(dim=1).max().item())
    assert max(late) < 0.01  # 10 m offsets settle below 1 cm by ~100 s and stay there


def test_velocity_loop_drives_the_velocity_to_its_command_within_its_force_limit():
    from orbitlab.agent import VelocityLoopCfg, VelocityLoopNode

    node = VelocityLoopNode(
        VelocityLoopCfg(mass_kg=20.0, time_constant_s=2.0, max_force_n=1.5), "loop", 2, 0.1
    )
    out = node.compute(
        {
            "velocity_command": torch.tensor(
                [[0.1, 0.0, -0.05], [1.0, -1.0, 0.0]], dtype=torch.float64
            ),
            "velocity": torch.zeros(2, 3, dtype=torch.float64),
        }
    )["force"]
    # m dv / tau = 20 * 0.1 / 2 = 1 N; the second row saturates at 1.5 N per axis.
    torch.testing.assert_close(
        out, torch.tensor([[1.0, 0.0, -0.5], [1.5, -1.5, 0.0]], dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="time_constant_s = 0.0 must be finite and > 0"):
        VelocityLoopNode(VelocityLoopCfg(time_constant_s=0.0), "bad", 1, 0.1)


def test_nodes_are_built_from_configs_naming_their_class():
    """Every node config names its class; `build(name, env)` takes the env's world count,
    physics step and device; a plain NodeCfg without a class is a one-line error."""
    from types import SimpleNamespace

    from orbitlab.agent import NodeCfg, RateDampingCfg, RateDampingNode

    env = SimpleNamespace(num_envs=3, physics_dt=0.05, device=torch.device("cpu"))
    node = RateDampingCfg(kd_nms=0.1, period_s=0.1).build("damping", env)
    assert isinstance(node, RateDampingNode)
    assert (node.name, node.num_envs, node.dt_s, node.period_steps) == ("damping", 3, 0.05, 2)
    with pytest.raises(ValueError, match=r"node 'x': NodeCfg.class_type names no Node class"):
        NodeCfg().build("x", env)
