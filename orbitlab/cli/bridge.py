"""Serve one world of a task's scene over the external bridge (ZeroMQ, ROS 2 topic style).

    orbitlab bridge task=formation                 # or: python scripts/bridge.py ...
    orbitlab bridge task=formation rate_hz=20 accel=10
    orbitlab bridge task=formation lockstep=true accel=0
    orbitlab bridge task=formation mode=ros require_bridge=true   # public ROS 2 node
    orbitlab bridge task=formation mode=ros rate_hz=5 lockstep=true accel=0 \
        namespaces="{leader: leaderSc, follower_1: followerSc_1, follower_2: followerSc_2}" \
        lockstep_topics=followerSc_1/cmd_force,followerSc_2/cmd_force

Arguments are key=value: task (case-insensitive task name), rate_hz (bridge ticks per
simulated second, rounded to whole physics steps; 0: every physics step), accel (simulated
seconds per wall second; 0: as fast as possible), lockstep (step only when every claimed
command topic has a fresh message), require_bridge (wait for a heartbeat, pause without one),
mode (hub: the simulator binds all ports, for orbitlab Clients; ros: connect to the public
ROS 2 node's command and heartbeat ports), host, pub_port, sub_port, heartbeat_port (0: a
free port, hub mode), duration (wall s, 0: until Ctrl-C), telemetry_rate_hz (default
publisher rate limit), log (logging level), lockstep_topics (comma-separated 'ns/topic' or
full topic names lockstep waits for; default: those commanded or claimed), namespaces
('{entity: namespace, ...}': names on the wire, e.g. the bsk-ros2-mpc demo's leaderSc,
followerSc_1, followerSc_2; or 'bsk_mpc' for exactly that mapping).

In ros mode only Basilisk's topics and bsk_msgs types are published (sc_states,
hill_trans_state, hill_rot_state), topic names are printed as the node creates them
(/<ns>/bsk/<in|out>/<topic>), and the simulation never runs more than a bounded window of
frames ahead of what the node has consumed (`orbitlab.bridge.flow`).

The simulation is a bare Scene of the task's RL config with one world: every spacecraft is
commanded through the bridge (body force/torque -> its thruster group's allocation and PWM;
wheel torques where it has wheels), no agent graph or policy runs inside.
"""

from __future__ import annotations

import logging
import signal
import sys

from orbitlab.cli import (
    FALSE,
    TRUE,
    ArgumentError,
    integer,
    number,
    parse_key_values,
    zero_or_number,
)
from orbitlab.limits import MAX_ACCEL, MAX_RATE_HZ, MIN_ACCEL, MIN_RATE_HZ

DEFAULTS = {
    "task": "formation",
    "rate_hz": "0",
    "accel": "1",
    "lockstep": "false",
    "require_bridge": "false",
    "mode": "hub",
    "host": "127.0.0.1",
    "pub_port": "5550",
    "sub_port": "5551",
    "heartbeat_port": "5552",
    "duration": "0",
    "telemetry_rate_hz": "0",
    "log": "INFO",
    "lockstep_topics": "",
    "namespaces": "",
}
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
BSK_MPC_NAMESPACES = {
    "leader": "leaderSc",
    "follower_1": "followerSc_1",
    "follower_2": "followerSc_2",
}
"""The public bsk-ros2-mpc demo's namespaces (`namespaces=bsk_mpc`)."""


def parse(argv: list[str]) -> dict[str, str]:
    args = parse_key_values(argv, DEFAULTS)
    for key in ("lockstep", "require_bridge"):
        if args[key].lower() not in TRUE + FALSE:
            raise SystemExit(f"{key} must be true or false, got '{args[key]}'")
    if args["mode"] not in ("hub", "ros"):
        raise SystemExit(f"mode must be hub or ros, got '{args['mode']}'")
    if args["log"].upper() not in LOG_LEVELS:
        raise SystemExit(f"log={args['log']!r} is invalid: expected one of {', '.join(LOG_LEVELS)}")
    namespace_map(args["namespaces"])  # checked here, before the scene is built
    for key, convert in NUMBERS.items():
        try:
            convert(key, args[key])
        except ArgumentError as error:
            raise SystemExit(str(error)) from None
    return args


NUMBERS = {
    "rate_hz": zero_or_number(MIN_RATE_HZ, MAX_RATE_HZ, "every physics step"),
    "accel": zero_or_number(MIN_ACCEL, MAX_ACCEL, "as fast as possible"),
    "telemetry_rate_hz": zero_or_number(MIN_RATE_HZ, MAX_RATE_HZ, "no limit"),
    "duration": number(min=0.0),
    **dict.fromkeys(("pub_port", "sub_port", "heartbeat_port"), integer(min=0, max=65535)),
}
"""Numeric arguments and their checks (before `build` converts them)."""


def namespace_map(text: str) -> dict[str, str]:
    """`{a: b, c: d}` (braces optional) or 'bsk_mpc' -> {'a': 'b', 'c': 'd'}; SystemExit
    naming the bad item."""
    text = text.strip()
    if text == "bsk_mpc":
        return dict(BSK_MPC_NAMESPACES)
    body = text.removeprefix("{").removesuffix("}").strip()
    out: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in body.split(","))):
        key, sep, value = (x.strip().strip("'\"") for x in item.partition(":"))
        if not sep or not key or not value:
            raise SystemExit(
                f"namespaces: item '{item}' must be 'entity: namespace' (e.g. "
                "namespaces='{leader: leaderSc}')"
            )
        out[key] = value
    return out


def task_name(name: str) -> str:
    """The registered task name of any spelling (`orbitlab.registry`: case, `_`/`-` and the
    gym id forgiven); SystemExit with "did you mean" for an unknown one."""
    from orbitlab.registry import ArgumentError, get_task

    try:
        return get_task(name).name
    except ArgumentError as error:
        raise SystemExit(str(error)) from None


def build(args: dict[str, str]):
    """(BridgeServer, task name) for the parsed arguments; SystemExit with one line for an
    argument the task or the network refuses (nothing left open)."""
    import zmq

    from orbitlab.bridge import BridgeCfg, BridgeServer, SceneAdapter, SceneAdapterCfg
    from orbitlab.envs.gym import load_cfg
    from orbitlab.scene.scene import Scene
    from orbitlab_tasks import task_entry

    name = task_name(args["task"])
    cfg = load_cfg(task_entry(name).env_cfg, num_envs=1)
    scene = Scene(cfg.scene)
    bridge_cfg = BridgeCfg(
        host=args["host"],
        pub_port=int(args["pub_port"]),
        sub_port=int(args["sub_port"]),
        heartbeat_port=int(args["heartbeat_port"]),
        mode=args["mode"],
        rate_hz=float(args["rate_hz"]),
        accel=float(args["accel"]),
        lockstep=args["lockstep"].lower() in TRUE,
        require_bridge=args["require_bridge"].lower() in TRUE,
        telemetry_rate_hz=float(args["telemetry_rate_hz"]),
        lockstep_topics=tuple(t.strip() for t in args["lockstep_topics"].split(",") if t.strip())
        or None,
    )
    try:
        adapter = SceneAdapter(
            scene,
            SceneAdapterCfg(
                basilisk_only=args["mode"] == "ros", namespaces=namespace_map(args["namespaces"])
            ),
        )
        return BridgeServer(adapter, bridge_cfg), name
    except ValueError as error:
        raise SystemExit(str(error)) from None
    except zmq.ZMQError as error:
        raise SystemExit(socket_problem(args, error)) from None


def socket_problem(args: dict[str, str], error: Exception) -> str:
    """One line for a port that cannot be bound or connected: the key, its value, why."""
    text = str(error)
    address = text.rpartition("addr=")[2].strip("')\"") if "addr=" in text else ""
    port = address.rpartition(":")[2]
    keys = [k for k in ("pub_port", "sub_port", "heartbeat_port") if args[k] == port]
    named = f"{keys[0]}={port}" if keys and port != "0" else f"host={args['host']!r}"
    reason = text.split(" (addr=")[0]
    hint = (
        "another process holds the port: give another one, or 0 for a free one"
        if "in use" in reason
        else "expected a local address or host name, e.g. 127.0.0.1"
    )
    return f"{named}: cannot use {address or args['host']}: {reason} ({hint})"


def describe(server, name: str) -> str:
    from orbitlab.bridge import protocol

    lines = [
        (
            f"orbitlab bridge: task {name}, {server.cfg.mode} mode, tick {server.tick_s:g} s "
            f"({server.nstep} physics steps), accel {server.cfg.accel:g}"
            f"{' (as fast as possible)' if server.cfg.accel == 0 else ''}, lockstep "
            f"{server.cfg.lockstep}, require_bridge {server.cfg.require_bridge}"
        )
    ]
    lines += [f"  {role:9s} {endpoint}" for role, endpoint in server.endpoints.items()]
    prefix = protocol.ROS_PREFIX if server.cfg.mode == "ros" else protocol.OWN_PREFIX
    for spec in server.topic_specs():
        rate = f" (<= {spec.max_rate_hz:g} Hz)" if spec.max_rate_hz else ""
        path = protocol.topic_path(spec.namespace, spec.topic, spec.direction, prefix)
        lines.append(f"  {spec.direction:3s} {path}  [{spec.msg_type}]{rate}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if any(item in ("-h", "--help") for item in argv):
        print(__doc__)
        print("Defaults: " + " ".join(f"{key}={value!r}" for key, value in DEFAULTS.items()))
        return 0
    try:
        args = parse(argv)
        logging.basicConfig(level=args["log"].upper(), format="%(asctime)s %(message)s")
        server, name = build(args)
    except SystemExit as error:
        if not isinstance(error.code, str):
            raise
        # a bad argument or a port that cannot be used: one line, status 2, and nothing
        # left running (build closes what it opened)
        print(f"orbitlab bridge: {error.code}", file=sys.stderr, flush=True)
        return 2
    print(describe(server, name), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: server.stop())
    duration = float(args["duration"]) or None
    try:
        stats = server.run(duration_s=duration)
    except KeyboardInterrupt:
        stats = server.stats
    finally:
        server.close()
    print(f"stopped at t = {server.sim.time_s:.3f} s: {stats}")
    handshakes = server.table.handshakes.values()
    confirmed = sum(h.confirmed and h.success for h in handshakes)
    line = f"topics: {confirmed}/{len(handshakes)} confirmed, {stats.requests_sent} requests sent"
    if server.flow is not None:
        line += f"; flow control: at most {server.flow.max_in_flight} frames in flight"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
