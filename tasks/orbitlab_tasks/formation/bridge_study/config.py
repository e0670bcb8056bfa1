"""The bridge study's settings and names shared by its three processes (numpy only)."""

from __future__ import annotations

from dataclasses import dataclass

from orbitlab_tasks.formation import constants as geo

FLYERS = (geo.LEADER, *geo.FOLLOWERS)
"""Leader, follower_1, follower_2."""
PLAN_TOPIC = "plan"
"""The leader's shared predicted trajectory: /leader/orbitlab/out/plan (relayed)."""
PLAN_MSG_TYPE = "OrbitlabPlanMsgPayload"
"""Message type of the plan: `time` (s, the state it starts from) and `states` (H + 1, 13)."""
MODULE = "orbitlab_tasks.formation.bridge_study"
PROGRESS_FILE = "sim_time.txt"
"""The simulator's simulated time so far (s, rewritten about twice a wall second), which
`launch.run_study` shows as a progress bar."""


@dataclass(kw_only=True)
class StudyCfg:
    """The three-process study: duration, seed, timing and timeouts."""

    seconds: float = 160.0
    """Simulated time to run, s (a whole number of control periods)."""
    seed: int = 0
    """Seed of the followers' initial slot noise (and the actuators' random streams)."""
    control_period_s: float = 0.2
    """Bridge tick = controller period, s (the spec's 5 Hz)."""
    host: str = "127.0.0.1"
    """Interface the simulator binds."""
    startup_timeout_s: float = 180.0
    """Wall s to wait for the simulator's ports and for the first state."""
    step_timeout_s: float = 120.0
    """Wall s a controller waits for the next state before giving up."""
    linger_s: float = 1.0
    """Wall s the simulator keeps re-sending its final state before it exits."""
    run_timeout_s: float = 3600.0
    """Wall s after which `run_study` kills the processes."""


@dataclass(kw_only=True)
class LinkCfg:
    """Where a controller finds the simulator (hub mode: the simulator binds all three)."""

    host: str = "127.0.0.1"
    pub_port: int = 0
    """The simulator's telemetry PUB port."""
    sub_port: int = 0
    """The simulator's command SUB port."""
    heartbeat_port: int = 0
    """The simulator's heartbeat SUB port."""


def key(ns: str, topic: str) -> tuple[str, str]:
    """The client's key of a topic: (namespace, topic)."""
    return (ns, topic)


def states_keys(flyers) -> list[tuple[str, str]]:
    """The keys of each flyer's `hill_states` and `sc_states`."""
    return [key(f, t) for f in flyers for t in ("hill_states", "sc_states")]
