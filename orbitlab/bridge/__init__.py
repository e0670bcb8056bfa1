"""External autonomy bridge over ZeroMQ (JSON frames, ROS 2 topic style).

The simulator side (`BridgeServer`) speaks the simulator side of the BSK-ROS2 bridge
protocol (docs/bridge_protocol.md), so the public ROS 2 bridge node can drive an
orbitlab scene; `Client` is the controller side for Python controllers. See
the docstrings of `protocol.py` (wire facts) and `server.py` (ticks, pacing, lockstep).
"""

from orbitlab.bridge.client import Client, ClientCfg
from orbitlab.bridge.server import BridgeCfg, BridgeServer
from orbitlab.bridge.sim import SceneAdapter, SceneAdapterCfg, StandInCfg, StandInSim

__all__ = [
    "BridgeCfg",
    "BridgeServer",
    "Client",
    "ClientCfg",
    "SceneAdapter",
    "SceneAdapterCfg",
    "StandInCfg",
    "StandInSim",
]
