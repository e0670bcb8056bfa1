"""The formation study over the ZeroMQ bridge: simulator, leader and followers as three processes.

    python -m orbitlab_tasks.formation.bridge_study sim --out DIR [--seconds 160 --seed 0]
    python -m orbitlab_tasks.formation.bridge_study leader --out DIR --pub-port P --sub-port S \
        --heartbeat-port H [--seconds 160]
    python -m orbitlab_tasks.formation.bridge_study followers --out DIR --pub-port P ...

`launch.run_study` (and `scripts/formation_bridge_study.py`) starts the three with subprocess:

* **sim** (`simulator.serve`, with the recorder of `recorder.py`): one world of the Formation scene (the task's RL scene, reset like the
  in-process study: leader at the chief, followers at their slots plus the seeded noise) behind
  a `BridgeServer` on free ports, ticking every 0.2 s of simulated time (4 physics steps) in
  lockstep (it steps only when all six command topics, cmd_force and cmd_torque of the three
  flyers, have a message newer than the last state), as fast as the controllers allow (accel
  0). So results do not depend on machine speed. Thruster allocation and PWM happen here,
  from the body wrench commands. A recorder (`RecordingAdapter`) logs the true Hill states
  and the applied commands after every tick; the ports go to `DIR/endpoints.json`, the log to
  `DIR/sim.npz` and the counters to `DIR/sim.json`.
* **leader** (`leader.run_leader`): the scenario's scripted leader (CW-LQR toward the waypoint of the
  schedule + quaternion PD, the gains of `agents.LEADER_GAINS`), the law of
  `nmpc.LeaderPlanNode` rolled out over the NMPC horizon as its shared plan. Each tick it reads
  the leader's `hill_states` and `sc_states` and the environment (chief r_N, v_N), publishes
  its plan on the client topic `/leader/orbitlab/out/plan` (relayed by the bridge to the other
  clients: `BridgeCfg.relay_topics`) and then its `cmd_force` / `cmd_torque`.
* **followers** (`followers.run_followers`): both followers' `FormationNmpc` (`nmpc.follower_nmpc_cfg`:
  horizon 30 x 0.2 s, the spec's weights, thruster pairs as input bounds). Each tick it reads
  the `hill_states` and `sc_states` of all three flyers and waits for the leader's plan of the
  same time, solves follower_1 then follower_2 (each keeps out of the leader's plan and of the
  other follower's previous plan, as `FormationNmpcNode`), and publishes their commands.

Differences to the in-process study (`scripts/formation_study.py`): the controllers read the
bridge's true Hill states (`hill_states`: position, velocity, attitude body -> Hill;
`sc_states`: inertial body rate) instead of the sensors (relative navigation, star tracker,
gyro); and the leader's reference point (the free-falling point its waypoints are measured
from, `agents.ReferencePointNode`) is dead-reckoned in the leader process, because the bridge
does not publish the chief's thrust feedback: d = reference - leader (ECI axes) follows
d'' = G d - F_leader / m, with G the gravity gradient at the chief and F_leader the leader's own
commanded force (body -> ECI by its attitude), integrated over the 0.05 s physics steps.

Modules: `config` (settings and topic names), `simulator` and `recorder` (the sim process),
`leader` and `followers` (the controller processes, over `clients`), `launch` (start the three,
score the result) and `__main__` (the processes' command line). The controllers' modules import
only numpy (tests/test_imports.py checks it); this package's names load on first access; the leader's law is `orbitlab.agent.laws`, shared with the env's
nodes, and its frames and quaternions are `orbitlab.orbit.frames` / `orbitlab.orbit.rotations`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbitlab.lazy import lazy_exports

if TYPE_CHECKING:
    from orbitlab_tasks.formation.bridge_study.config import (
        FLYERS,
        MODULE,
        PLAN_MSG_TYPE,
        PLAN_TOPIC,
        LinkCfg,
        StudyCfg,
    )
    from orbitlab_tasks.formation.bridge_study.followers import FollowerControllers, run_followers
    from orbitlab_tasks.formation.bridge_study.launch import StudyResult, run_study, score
    from orbitlab_tasks.formation.bridge_study.leader import (
        LeaderCfg,
        LeaderController,
        gravity_gradient,
        hill_frame,
        run_leader,
    )
    from orbitlab_tasks.formation.bridge_study.recorder import recording_adapter_class
    from orbitlab_tasks.formation.bridge_study.simulator import build_scene, serve

_EXPORTS = {
    "FLYERS": "orbitlab_tasks.formation.bridge_study.config",
    "MODULE": "orbitlab_tasks.formation.bridge_study.config",
    "PLAN_MSG_TYPE": "orbitlab_tasks.formation.bridge_study.config",
    "PLAN_TOPIC": "orbitlab_tasks.formation.bridge_study.config",
    "FollowerControllers": "orbitlab_tasks.formation.bridge_study.followers",
    "LeaderCfg": "orbitlab_tasks.formation.bridge_study.leader",
    "LeaderController": "orbitlab_tasks.formation.bridge_study.leader",
    "LinkCfg": "orbitlab_tasks.formation.bridge_study.config",
    "StudyCfg": "orbitlab_tasks.formation.bridge_study.config",
    "StudyResult": "orbitlab_tasks.formation.bridge_study.launch",
    "build_scene": "orbitlab_tasks.formation.bridge_study.simulator",
    "gravity_gradient": "orbitlab_tasks.formation.bridge_study.leader",
    "hill_frame": "orbitlab_tasks.formation.bridge_study.leader",
    "recording_adapter_class": "orbitlab_tasks.formation.bridge_study.recorder",
    "run_followers": "orbitlab_tasks.formation.bridge_study.followers",
    "run_leader": "orbitlab_tasks.formation.bridge_study.leader",
    "run_study": "orbitlab_tasks.formation.bridge_study.launch",
    "score": "orbitlab_tasks.formation.bridge_study.launch",
    "serve": "orbitlab_tasks.formation.bridge_study.simulator",
}

__all__ = [
    "FLYERS",
    "MODULE",
    "PLAN_MSG_TYPE",
    "PLAN_TOPIC",
    "FollowerControllers",
    "LeaderCfg",
    "LeaderController",
    "LinkCfg",
    "StudyCfg",
    "StudyResult",
    "build_scene",
    "gravity_gradient",
    "hill_frame",
    "recording_adapter_class",
    "run_followers",
    "run_leader",
    "run_study",
    "score",
    "serve",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
