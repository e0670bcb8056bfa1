"""QoS of orbitlab's ROS 2 formation nodes (`ros_nodes`) against the public BSK-ROS2 bridge
node's, in `ros_standin`'s graph, which connects a publisher and a subscription only as DDS
would (request vs offered): every endpoint the nodes create matches its counterpart, a
default-profile (reliable) subscription to the node's telemetry does not, and the rules."""

from __future__ import annotations

import itertools

import pytest
from ros_standin import (
    DurabilityPolicy,
    HistoryPolicy,
    IncompatibleQos,
    QoSProfile,
    ReliabilityPolicy,
    incompatible_policies,
)

BSK_NODE_QOS = {
    "reliability": ReliabilityPolicy.BEST_EFFORT,
    "durability": DurabilityPolicy.VOLATILE,
    "history": HistoryPolicy.KEEP_LAST,
    "depth": 1,
}
"""The public node's one profile (DISCOWER/bsk-ros2-bridge, commit 7e4ae85,
bsk_ros2_bridge/bsk_ros2_bridge.py lines 84-89), used for its `bsk/out` publishers (line
403), its `bsk/in` subscriptions (line 477) and `/clock` (line 536)."""
OUT_TOPICS = {
    "sc_states": "SCStatesMsgPayload",
    "hill_trans_state": "HillRelStateMsgPayload",
    "hill_rot_state": "AttGuidMsgPayload",
}
IN_TOPICS = {"cmd_force": "CmdForceBodyMsgPayload", "cmd_torque": "CmdTorqueBodyMsgPayload"}
PUBLIC = "/bsk_ros_bridge"


def public_node(namespaces) -> tuple[object, dict[str, list]]:
    """The public node's endpoints for `namespaces` (as it creates them for the simulator's
    topics); returns the node and the messages its subscriptions receive, by topic."""
    import bsk_msgs.msg as bsk
    from rclpy.node import Node
    from rosgraph_msgs.msg import Clock

    qos = QoSProfile(**BSK_NODE_QOS)
    node = Node("bsk_ros_bridge")
    received: dict[str, list] = {}
    for ns in namespaces:
        for topic, msg_type in OUT_TOPICS.items():
            node.create_publisher(getattr(bsk, msg_type), f"/{ns}/bsk/out/{topic}", qos)
        for topic, msg_type in IN_TOPICS.items():
            name = f"/{ns}/bsk/in/{topic}"
            inbox = received.setdefault(name, [])
            node.create_subscription(getattr(bsk, msg_type), name, inbox.append, qos)
    node.create_publisher(Clock, "/clock", qos)
    return node, received


def publisher(graph, topic: str):
    (pub,) = [e for e in graph.endpoints if e.kind == "publisher" and e.topic == topic]
    return pub


def test_every_endpoint_of_the_formation_nodes_matches_the_public_nodes(ros_graph):
    pytest.importorskip("casadi", reason="extra 'nmpc' not installed")
    import bsk_msgs.msg as bsk

    from orbitlab_tasks.formation import ros_nodes

    _, received = public_node(ros_nodes.NAMESPACES.values())
    _, follower_1, follower_2 = ros_nodes.make_nodes()
    ours = [e for e in ros_graph.endpoints if e.node != PUBLIC]
    assert ros_graph.incompatible == []
    assert len(ours) == 18  # 6 per node
    for e in ours:
        assert isinstance(e.given, QoSProfile), (e.topic, e.given)  # explicit profiles
        assert e.peers, f"{e.node} {e.kind} on {e.topic} matched nothing"
        if "/bsk/" in e.topic:  # the bridge's topics: the public node is the counterpart
            assert {p.node for p in e.peers} == {PUBLIC}, e.topic
        else:  # the leader's plan, node to node
            assert e.topic == "/leaderSc/bsk_mpc/predicted_path"
            expected = {"/followerSc_1/bsk_mpc"} if e.kind == "publisher" else {"/leaderSc/bsk_mpc"}
            assert {p.node for p in e.peers} >= expected
    # and messages flow: the node's Hill states reach followerSc_1 (and the other follower's
    # keep-out), followerSc_1's command (zero until the leader's plan) reaches the node
    trans = bsk.HillRelStateMsgPayload(r_dc_h=[1.0, 2.0, 3.0], v_dc_h=[0.0, 0.01, 0.0])
    trans.stamp.sec = 4
    publisher(ros_graph, "/followerSc_1/bsk/out/hill_trans_state").publish(trans)
    rot = bsk.AttGuidMsgPayload(sigma_br=[0.0, 0.0, 0.1], omega_rn_b=[0.0, 0.0, 1.1e-3])
    publisher(ros_graph, "/followerSc_1/bsk/out/hill_rot_state").publish(rot)
    assert follower_1.t_state == 4.0 and list(follower_1.trans["r_dc_h"]) == [1.0, 2.0, 3.0]
    assert list(follower_2.others["followerSc_1"]) == [1.0, 2.0, 3.0]
    follower_1.step()
    for topic in ("cmd_force", "cmd_torque"):
        assert len(received[f"/followerSc_1/bsk/in/{topic}"]) == 1
        assert received[f"/followerSc_2/bsk/in/{topic}"] == []
    assert received["/followerSc_1/bsk/in/cmd_force"][0].forcerequestbody == [0.0, 0.0, 0.0]


def test_a_default_profile_subscription_gets_nothing_from_the_public_node(ros_graph):
    """What the nodes did before (a depth: ROS 2's default, reliable profile): the node's
    best-effort publisher does not serve it, and an incompatible-QoS event is recorded. A
    default-profile publisher does reach the node's best-effort subscription."""
    import bsk_msgs.msg as bsk
    from rclpy.node import Node
    from rosgraph_msgs.msg import Clock

    _, received = public_node(["leaderSc"])
    node = Node("bsk_mpc", namespace="leaderSc")
    got: list = []
    sub = node.create_subscription(
        bsk.HillRelStateMsgPayload, "bsk/out/hill_trans_state", got.append, 1
    )
    assert sub.peers == []
    topic = "/leaderSc/bsk/out/hill_trans_state"
    assert ros_graph.incompatible == [
        IncompatibleQos(topic, ("RELIABILITY",), PUBLIC, "/leaderSc/bsk_mpc")
    ]
    publisher(ros_graph, topic).publish(bsk.HillRelStateMsgPayload())
    assert got == []
    pub = node.create_publisher(bsk.CmdForceBodyMsgPayload, "bsk/in/cmd_force", 1)
    pub.publish(bsk.CmdForceBodyMsgPayload())
    assert len(received["/leaderSc/bsk/in/cmd_force"]) == 1
    # rclpy's own /clock subscription (use_sim_time; best-effort, depth 1) matches the node's
    clock = node.create_subscription(
        Clock,
        "/clock",
        got.append,
        QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT),
    )
    assert [p.node for p in clock.peers] == [PUBLIC]


RELIABILITY_OK = {  # (offered by the publisher, requested by the subscription): match?
    ("RELIABLE", "RELIABLE"): True,
    ("RELIABLE", "BEST_EFFORT"): True,
    ("BEST_EFFORT", "RELIABLE"): False,
    ("BEST_EFFORT", "BEST_EFFORT"): True,
}
DURABILITY_OK = {
    ("TRANSIENT_LOCAL", "TRANSIENT_LOCAL"): True,
    ("TRANSIENT_LOCAL", "VOLATILE"): True,
    ("VOLATILE", "TRANSIENT_LOCAL"): False,
    ("VOLATILE", "VOLATILE"): True,
}


@pytest.mark.parametrize(
    "reliability, durability", list(itertools.product(RELIABILITY_OK, DURABILITY_OK))
)
def test_the_request_vs_offered_matrix(ros_graph, reliability, durability):
    import bsk_msgs.msg as bsk
    from rclpy.node import Node

    def profile(r: str, d: str) -> QoSProfile:
        return QoSProfile(reliability=ReliabilityPolicy[r], durability=DurabilityPolicy[d], depth=1)

    (r_pub, r_sub), (d_pub, d_sub) = reliability, durability
    expected = ("RELIABILITY",) * (not RELIABILITY_OK[reliability]) + ("DURABILITY",) * (
        not DURABILITY_OK[durability]
    )
    assert incompatible_policies(profile(r_pub, d_pub), profile(r_sub, d_sub)) == expected
    msg_type = bsk.CmdForceBodyMsgPayload
    got: list = []
    sub = Node("reader").create_subscription(msg_type, "/t", got.append, profile(r_sub, d_sub))
    pub = Node("writer").create_publisher(msg_type, "/t", profile(r_pub, d_pub))
    pub.publish(msg_type())
    assert (len(got) == 1) == (not expected) and (sub.peers == [pub]) == (not expected)
    assert [e.policies for e in ros_graph.incompatible] == ([expected] if expected else [])


def test_history_and_depth_do_not_take_part_and_unknown_values_are_refused(ros_graph):
    import bsk_msgs.msg as bsk
    from rclpy.node import Node

    keep_all = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
    sub = Node("reader").create_subscription(
        bsk.CmdForceBodyMsgPayload, "/t", print, QoSProfile(depth=1)
    )
    Node("writer").create_publisher(bsk.CmdForceBodyMsgPayload, "/t", keep_all)
    assert len(sub.peers) == 1
    other_type = Node("writer2").create_publisher(
        bsk.CmdTorqueBodyMsgPayload, "/t", QoSProfile(depth=1)
    )
    assert other_type.peers == [] and ros_graph.incompatible[-1].policies == ("TYPE",)
    with pytest.raises(ValueError, match="cannot judge"):
        incompatible_policies(
            QoSProfile(depth=1, reliability=ReliabilityPolicy.SYSTEM_DEFAULT), QoSProfile(depth=1)
        )
