"""The agent side of the world/agent split: nodes on their own timers, chained synchronously.

graph = AgentGraph([BDotNode(BDotCfg(gain=..., period_s=0.2), "bdot", num_envs, dt_s)],
                   external_inputs=["magnetometer"])
values = graph.step({"magnetometer": readings})   # values["mtq_dipole"]: (num_envs, 3)
"""

from orbitlab.agent.attitude import (
    BDotCfg,
    BDotNode,
    QuaternionPDCfg,
    QuaternionPDNode,
    RateDampingCfg,
    RateDampingNode,
    attitude_error,
    bdot_gain,
)
from orbitlab.agent.formation import (
    CwLqrCfg,
    CwLqrNode,
    cw_stm,
    cw_zoh_input,
    lqr_gain,
    mean_motion,
    riccati_map,
    solve_dare,
)
from orbitlab.agent.graph import AgentGraph
from orbitlab.agent.mapping import (
    AllocationCfg,
    AllocationNode,
    HillForceToBodyCfg,
    HillForceToBodyNode,
    TorqueToMagnetorquersCfg,
    TorqueToMagnetorquersNode,
    TorqueToWheelsCfg,
    TorqueToWheelsNode,
    VelocityLoopCfg,
    VelocityLoopNode,
)
from orbitlab.agent.node import Node, NodeCfg

__all__ = [
    "AgentGraph",
    "AllocationCfg",
    "AllocationNode",
    "BDotCfg",
    "BDotNode",
    "CwLqrCfg",
    "CwLqrNode",
    "HillForceToBodyCfg",
    "HillForceToBodyNode",
    "Node",
    "NodeCfg",
    "QuaternionPDCfg",
    "QuaternionPDNode",
    "RateDampingCfg",
    "RateDampingNode",
    "TorqueToMagnetorquersCfg",
    "TorqueToMagnetorquersNode",
    "TorqueToWheelsCfg",
    "TorqueToWheelsNode",
    "VelocityLoopCfg",
    "VelocityLoopNode",
    "attitude_error",
    "bdot_gain",
    "cw_stm",
    "cw_zoh_input",
    "lqr_gain",
    "mean_motion",
    "riccati_map",
    "solve_dare",
]
