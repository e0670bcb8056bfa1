"""The agent side of the world/agent split: nodes on their own timers, chained synchronously.

graph = AgentGraph([BDotCfg(gain=..., period_s=0.2).build("bdot", env)],
                   external_inputs=["magnetometer"])
values = graph.step({"magnetometer": readings})   # values["mtq_dipole"]: (num_envs, 3)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbitlab.lazy import lazy_exports

if TYPE_CHECKING:
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
        riccati_map,
        solve_dare,
    )
    from orbitlab.agent.graph import AgentGraph
    from orbitlab.agent.laws import mean_motion
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
    from orbitlab.agent.node import Node, NodeCfg, SceneNode

_EXPORTS = {
    "AgentGraph": "orbitlab.agent.graph",
    "AllocationCfg": "orbitlab.agent.mapping",
    "AllocationNode": "orbitlab.agent.mapping",
    "BDotCfg": "orbitlab.agent.attitude",
    "BDotNode": "orbitlab.agent.attitude",
    "CwLqrCfg": "orbitlab.agent.formation",
    "CwLqrNode": "orbitlab.agent.formation",
    "HillForceToBodyCfg": "orbitlab.agent.mapping",
    "HillForceToBodyNode": "orbitlab.agent.mapping",
    "Node": "orbitlab.agent.node",
    "SceneNode": "orbitlab.agent.node",
    "NodeCfg": "orbitlab.agent.node",
    "QuaternionPDCfg": "orbitlab.agent.attitude",
    "QuaternionPDNode": "orbitlab.agent.attitude",
    "RateDampingCfg": "orbitlab.agent.attitude",
    "RateDampingNode": "orbitlab.agent.attitude",
    "TorqueToMagnetorquersCfg": "orbitlab.agent.mapping",
    "TorqueToMagnetorquersNode": "orbitlab.agent.mapping",
    "TorqueToWheelsCfg": "orbitlab.agent.mapping",
    "TorqueToWheelsNode": "orbitlab.agent.mapping",
    "VelocityLoopCfg": "orbitlab.agent.mapping",
    "VelocityLoopNode": "orbitlab.agent.mapping",
    "attitude_error": "orbitlab.agent.attitude",
    "bdot_gain": "orbitlab.agent.attitude",
    "cw_stm": "orbitlab.agent.formation",
    "cw_zoh_input": "orbitlab.agent.formation",
    "lqr_gain": "orbitlab.agent.formation",
    "mean_motion": "orbitlab.agent.laws",
    "riccati_map": "orbitlab.agent.formation",
    "solve_dare": "orbitlab.agent.formation",
}
"""Public name -> the module it is imported from on first access."""

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
    "SceneNode",
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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
