"""The formation's controllers as ROS 2 nodes with the topic use of the public bsk-ros2-mpc
demo (DISCOWER/bsk-ros2-mpc: its `bsk_mpc` node, types `follower_wrench` and the leader), to
fly orbitlab's formation through the public BSK-ROS2 bridge node and
`scripts/bridge.py task=formation mode=ros namespaces=bsk_mpc` (or `ros_study`).

Per node, in its namespace (the demo's leaderSc, followerSc_1, followerSc_2):

* in: `bsk/out/hill_trans_state` (HillRelStateMsgPayload) and `bsk/out/hill_rot_state`
  (AttGuidMsgPayload); the leader also `bsk/out/sc_states` (for the chief's orbit, which its
  reference point needs); a follower also `/leaderSc/bsk_mpc/predicted_path` (nav_msgs/Path)
  and the other follower's `hill_trans_state` (keep-out);
* out: `bsk/in/cmd_force` and `bsk/in/cmd_torque` (CmdForceBodyMsgPayload,
  CmdTorqueBodyMsgPayload; body N, N m), the leader also `bsk_mpc/predicted_path`;
* a 0.2 s timer on the node's clock (`use_sim_time`: the bridge node's `/clock`).

Every subscription and publisher has an explicit QoS profile (`BRIDGE_OUT_QOS`,
`BRIDGE_IN_QOS`, `PLAN_QOS`) that matches its counterpart's: the public node publishes and
subscribes best-effort, which a subscription with ROS 2's default (reliable) profile would
not match.

The laws are orbitlab's (the demo's acados solver cannot be installed here): the leader is
`bridge_study.LeaderController` (CW-LQR to the waypoint schedule, quaternion PD, its plan
rolled out over the NMPC horizon), a follower `orbitlab.agent.nmpc.FormationNmpc` with
`nmpc.follower_nmpc_cfg` (30 x 0.2 s, the spec's weights). Needs rclpy, bsk_msgs, nav_msgs
and geometry_msgs (ROS 2), imported when a node is made.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orbitlab_tasks.formation import constants as geo
from orbitlab_tasks.formation.ros_state import (
    chief_state,
    plan_to_poses,
    poses_to_plan,
    state_13,
)

NAMESPACES = {"leader": "leaderSc", "follower_1": "followerSc_1", "follower_2": "followerSc_2"}
"""Entity -> the demo's namespace."""
PERIOD_S = 0.2
"""Control period (the demo's timer), s of the node's clock."""
PATH_TOPIC = "bsk_mpc/predicted_path"


@dataclass(frozen=True)
class Qos:
    """A keep-last QoS profile by its policies' names (rclpy.qos's enum members), so that it
    can be named without ROS 2 installed; `profile()` builds rclpy's."""

    reliability: str
    """'BEST_EFFORT' or 'RELIABLE'."""
    durability: str
    """'VOLATILE' or 'TRANSIENT_LOCAL'."""
    depth: int
    """History depth, messages."""

    def profile(self):
        """This profile as an rclpy.qos.QoSProfile (KEEP_LAST history)."""
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

        return QoSProfile(
            reliability=ReliabilityPolicy[self.reliability],
            durability=DurabilityPolicy[self.durability],
            history=HistoryPolicy.KEEP_LAST,
            depth=self.depth,
        )


BRIDGE_OUT_QOS = Qos("BEST_EFFORT", "VOLATILE", 1)
"""Subscriptions to the public node's telemetry (`bsk/out/...`; `/clock` is rclpy's own, also
best-effort): the node publishes best-effort, volatile, keep-last 1 (one profile for all its
topics). A reliable subscription does not match a best-effort publisher and would receive
nothing; the latest state is all a controller needs."""
BRIDGE_IN_QOS = Qos("BEST_EFFORT", "VOLATILE", 1)
"""Command publishers (`bsk/in/cmd_force`, `cmd_torque`): the node subscribes with that same
best-effort, volatile profile, which a publisher of either reliability matches; best-effort
and keep-last 1 as the bsk-ros2-mpc demo publishes them (a late command is stale anyway)."""
PLAN_QOS = Qos("RELIABLE", "VOLATILE", 10)
"""The leader's plan (`bsk_mpc/predicted_path`, node to node): the demo's profile for it
(depth 10 with rclpy's defaults: reliable, volatile), so its nodes and these interoperate."""


def _fields(msg, names: tuple[str, ...]) -> dict:
    return {n: np.asarray(getattr(msg, n), float) for n in names}


def _stamp_s(msg) -> float:
    return msg.stamp.sec + msg.stamp.nanosec * 1e-9


def _wrench_messages(wrench: np.ndarray):
    from bsk_msgs.msg import CmdForceBodyMsgPayload, CmdTorqueBodyMsgPayload

    force, torque = CmdForceBodyMsgPayload(), CmdTorqueBodyMsgPayload()
    force.forcerequestbody = [float(x) for x in wrench[:3]]
    torque.torquerequestbody = [float(x) for x in wrench[3:6]]
    return force, torque


def make_nodes(namespaces: dict[str, str] | None = None, period_s: float = PERIOD_S) -> list:
    """The leader's and both followers' nodes (rclpy must be initialised)."""
    ns = {**NAMESPACES, **(namespaces or {})}
    nodes: list[_Base] = [LeaderNode(ns["leader"], period_s)]
    for f in geo.FOLLOWERS:
        others = [ns[g] for g in geo.FOLLOWERS if g != f]
        nodes.append(FollowerNode(f, ns[f], ns["leader"], others, period_s))
    return nodes


def _node_class():
    from rclpy.node import Node

    return Node


class _Base:
    """Subscriptions to the own Hill topics and the two command publishers."""

    def _setup(self, node, period_s: float) -> None:
        from bsk_msgs.msg import (
            AttGuidMsgPayload,
            CmdForceBodyMsgPayload,
            CmdTorqueBodyMsgPayload,
            HillRelStateMsgPayload,
        )

        self.node, self.period_s = node, period_s
        self.trans: dict | None = None
        self.rot: dict | None = None
        self.t_state = 0.0
        state_qos, command_qos = BRIDGE_OUT_QOS.profile(), BRIDGE_IN_QOS.profile()
        node.create_subscription(
            HillRelStateMsgPayload, "bsk/out/hill_trans_state", self._on_trans, state_qos
        )
        node.create_subscription(
            AttGuidMsgPayload, "bsk/out/hill_rot_state", self._on_rot, state_qos
        )
        self.force_pub = node.create_publisher(
            CmdForceBodyMsgPayload, "bsk/in/cmd_force", command_qos
        )
        self.torque_pub = node.create_publisher(
            CmdTorqueBodyMsgPayload, "bsk/in/cmd_torque", command_qos
        )
        self.updates = 0

    def _on_trans(self, msg) -> None:
        self.trans = _fields(msg, ("r_dc_h", "v_dc_h"))
        self.t_state = _stamp_s(msg)

    def _on_rot(self, msg) -> None:
        self.rot = _fields(msg, ("sigma_br", "omega_br_b", "omega_rn_b"))

    def _publish(self, wrench: np.ndarray) -> None:
        force, torque = _wrench_messages(wrench)
        now = self.node.get_clock().now().to_msg()
        force.stamp = torque.stamp = now
        self.force_pub.publish(force)
        self.torque_pub.publish(torque)
        self.updates += 1


class LeaderNode(_Base):
    """The scripted leader: its command and its plan (poses on `bsk_mpc/predicted_path`)."""

    def __init__(self, namespace: str, period_s: float = PERIOD_S):
        from bsk_msgs.msg import SCStatesMsgPayload
        from nav_msgs.msg import Path

        from orbitlab_tasks.formation.bridge_study import LeaderCfg, LeaderController

        node = _node_class()("bsk_mpc", namespace=namespace)
        self._setup(node, period_s)
        self.controller = LeaderController(LeaderCfg(period_s=period_s))
        self.sc: dict | None = None
        node.create_subscription(
            SCStatesMsgPayload, "bsk/out/sc_states", self._on_sc, BRIDGE_OUT_QOS.profile()
        )
        self.path_pub = node.create_publisher(Path, PATH_TOPIC, PLAN_QOS.profile())
        node.create_timer(period_s, self.step)

    def _on_sc(self, msg) -> None:
        self.sc = _fields(msg, ("r_bn_n", "v_bn_n", "omega_bn_b"))

    def step(self) -> None:
        if self.trans is None or self.rot is None or self.sc is None:
            return
        x = state_13(self.trans, self.rot)
        r_n, v_n = chief_state(self.sc, self.trans)
        hill = {"r_bh_h": x[:3], "v_bh_h": x[3:6], "q_bh": x[6:10]}
        sc = {**self.sc, "omega_bn_b": x[10:13]}
        wrench, plan, _ = self.controller.update(self.t_state, hill, sc, {"r_n": r_n, "v_n": v_n})
        self._publish_plan(plan)
        self._publish(wrench)

    def _publish_plan(self, plan: np.ndarray) -> None:
        from geometry_msgs.msg import PoseStamped
        from nav_msgs.msg import Path

        path = Path()
        path.header.frame_id = "hill"
        sec = int(self.t_state)
        path.header.stamp.sec, path.header.stamp.nanosec = sec, round((self.t_state - sec) * 1e9)
        for t, pos, quat in plan_to_poses(plan, self.t_state, self.period_s):
            pose = PoseStamped()
            ns = round(t * 1e9)
            pose.header.stamp.sec, pose.header.stamp.nanosec = ns // 10**9, ns % 10**9
            p, o = pose.pose.position, pose.pose.orientation
            p.x, p.y, p.z = pos
            o.w, o.x, o.y, o.z = quat
            path.poses.append(pose)
        self.path_pub.publish(path)


class FollowerNode(_Base):
    """A follower's NMPC on its Hill state, the leader's shared plan and the other
    follower's position (keep-out)."""

    def __init__(
        self,
        entity: str,
        namespace: str,
        leader_ns: str,
        other_ns: list[str],
        period_s: float = PERIOD_S,
    ):
        from bsk_msgs.msg import HillRelStateMsgPayload
        from nav_msgs.msg import Path

        from orbitlab.agent.nmpc_solver import FormationNmpc
        from orbitlab_tasks.formation.nmpc_cfg import follower_nmpc_cfg

        node = _node_class()("bsk_mpc", namespace=namespace)
        self._setup(node, period_s)
        self.nmpc = FormationNmpc(follower_nmpc_cfg(dt_s=period_s), geo.SLOT_OFFSETS_M[entity])
        self.poses: list | None = None
        self.others: dict[str, np.ndarray] = {}
        self.solve_s: list[float] = []
        self.not_converged = 0
        node.create_subscription(
            Path, f"/{leader_ns}/{PATH_TOPIC}", self._on_path, PLAN_QOS.profile()
        )
        for ns in other_ns:
            node.create_subscription(
                HillRelStateMsgPayload,
                f"/{ns}/bsk/out/hill_trans_state",
                lambda msg, ns=ns: self.others.__setitem__(ns, np.asarray(msg.r_dc_h, float)),
                BRIDGE_OUT_QOS.profile(),
            )
        node.create_timer(period_s, self.step)

    def _on_path(self, msg) -> None:
        self.poses = [
            (
                p.header.stamp.sec + p.header.stamp.nanosec * 1e-9,
                [p.pose.position.x, p.pose.position.y, p.pose.position.z],
                [
                    p.pose.orientation.w,
                    p.pose.orientation.x,
                    p.pose.orientation.y,
                    p.pose.orientation.z,
                ],
            )
            for p in msg.poses
        ]

    def step(self) -> None:
        if self.trans is None or self.rot is None:
            return
        if self.poses is None:  # no plan yet: hold still (lockstep needs a command)
            self._publish(np.zeros(6))
            return
        x = state_13(self.trans, self.rot)
        H = self.nmpc.cfg.horizon_steps
        plan = poses_to_plan(self.poses, self.t_state, self.period_s, H, self.rot["omega_rn_b"])
        others = [plan[:, :3], *(np.repeat(p[None], H + 1, 0) for p in self.others.values())]
        sol = self.nmpc.solve(x, plan, others[: self.nmpc.cfg.num_obstacles])
        self.solve_s.append(sol.solve_time_s)
        self.not_converged += int(not sol.success)
        self._publish(sol.wrench)
