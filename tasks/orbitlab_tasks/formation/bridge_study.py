"""The formation study over the ZeroMQ bridge: simulator, leader and followers as three processes.

    python -m orbitlab_tasks.formation.bridge_study sim --out DIR [--seconds 160 --seed 0]
    python -m orbitlab_tasks.formation.bridge_study leader --out DIR --pub-port P --sub-port S \\
        --heartbeat-port H [--seconds 160]
    python -m orbitlab_tasks.formation.bridge_study followers --out DIR --pub-port P ...

`run_study` (and `scripts/formation_bridge_study.py`) starts the three with subprocess:

* **sim** (`serve`): one world of the Formation scene (the task's RL scene, reset like the
  in-process study: leader at the chief, followers at their slots plus the seeded noise) behind
  a `BridgeServer` on free ports, ticking every 0.2 s of simulated time (4 physics steps) in
  lockstep (it steps only when all six command topics, cmd_force and cmd_torque of the three
  flyers, have a message newer than the last state), as fast as the controllers allow (accel
  0). So results do not depend on machine speed. Thruster allocation and PWM happen here,
  from the body wrench commands. A recorder (`RecordingAdapter`) logs the true Hill states
  and the applied commands after every tick; the ports go to `DIR/endpoints.json`, the log to
  `DIR/sim.npz` and the counters to `DIR/sim.json`.
* **leader** (`run_leader`): the scenario's scripted leader (CW-LQR toward the waypoint of the
  schedule + quaternion PD, the gains of `agents.LEADER_GAINS`), the law of
  `nmpc.LeaderPlanNode` rolled out over the NMPC horizon as its shared plan. Each tick it reads
  the leader's `hill_states` and `sc_states` and the environment (chief r_N, v_N), publishes
  its plan on the client topic `/leader/orbitlab/out/plan` (relayed by the bridge to the other
  clients: `BridgeCfg.relay_topics`) and then its `cmd_force` / `cmd_torque`.
* **followers** (`run_followers`): both followers' `FormationNmpc` (`nmpc.follower_nmpc_cfg`:
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
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from orbitlab_tasks.formation import geometry as geo

FLYERS = (geo.LEADER, *geo.FOLLOWERS)
"""Leader, follower_1, follower_2."""
PLAN_TOPIC = "plan"
"""The leader's shared predicted trajectory: /leader/orbitlab/out/plan (relayed)."""
PLAN_MSG_TYPE = "OrbitlabPlanMsgPayload"
"""Message type of the plan: `time` (s, the state it starts from) and `states` (H + 1, 13)."""
MU_EARTH_M3_S2 = 398600.4418e9
"""Gravitational parameter of the point-mass gradient used for the reference point, m^3/s^2."""
MODULE = "orbitlab_tasks.formation.bridge_study"


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


def _key(ns: str, topic: str) -> tuple[str, str]:
    return (ns, topic)


# ------------------------------------------------------------------------ simulator
def _recording_adapter_class():
    from orbitlab.bridge import SceneAdapter

    class RecordingAdapter(SceneAdapter):
        """A `SceneAdapter` that logs, after every step, the true Hill state of each flyer
        (relative to the chief), the slot and attitude errors of the followers and the body
        wrench each flyer held during the step."""

        def __init__(self, scene, cfg=None, stop_s: float = math.inf) -> None:
            super().__init__(scene, cfg)
            self.stop_s = stop_s
            self.log: dict[str, list] = {
                k: []
                for k in ("t", "pos", "vel", "quat", "rate", "wrench", "error", "attitude_error")
            }

        def step(self, nstep: int = 1) -> None:
            held = np.stack([self._wrench[f].copy() for f in FLYERS])
            super().step(nstep)
            if self.time_s <= self.stop_s + 1e-9:
                self.record(held)

        def record(self, wrench: np.ndarray) -> None:
            from orbitlab_tasks.formation.ros_state import mrp_to_quat

            states = self._entity_states()
            trans = [states[f]["hill_trans_state"] for f in FLYERS]
            pos = np.array([h["r_DC_H"] for h in trans])
            quat = np.array([mrp_to_quat(states[f]["hill_rot_state"]["sigma_BR"]) for f in FLYERS])
            offsets = np.array([geo.SLOT_OFFSETS_M[f] for f in geo.FOLLOWERS])
            error = np.linalg.norm(pos[1:] - pos[0] - offsets, axis=-1)
            dots = np.abs(quat[1:] @ quat[0]).clip(max=1.0)
            log = self.log
            log["t"].append(self.time_s)
            log["pos"].append(pos)
            log["vel"].append(np.array([h["v_DC_H"] for h in trans]))
            log["quat"].append(quat)
            log["rate"].append(np.array([states[f]["sc_states"]["omega_BN_B"] for f in FLYERS]))
            log["wrench"].append(wrench)
            log["error"].append(error)
            log["attitude_error"].append(2.0 * np.arccos(dots))

    return RecordingAdapter


def build_scene(seed: int):
    """The Formation task's scene (one world), reset as the env resets it with `seed`:
    leader at the chief co-rotating with the Hill frame, followers at their slots plus uniform
    noise (`formation_env_cfg.INITIAL_NOISE`), drawn from the event stream (`stream_seed(seed, "events")`)."""
    import torch

    from orbitlab.envs.gym import load_cfg
    from orbitlab.scene.scene import Scene
    from orbitlab.seeding import stream_seed
    from orbitlab_tasks import task_entry
    from orbitlab_tasks.formation import mdp
    from orbitlab_tasks.formation.formation_env_cfg import INITIAL_NOISE

    torch.manual_seed(seed)
    scene = Scene(load_cfg(task_entry("Formation").env_cfg, num_envs=1).scene)
    for name, group in scene.actuators.items():
        group.generator.manual_seed(stream_seed(seed, f"actuators/{name}", group.cfg.seed))
    for sensor in scene.sensors.values():
        sensor.reseed(seed)
    ids = scene.all_worlds
    scene.reset(ids)
    events = SimpleNamespace(
        generator=torch.Generator(device=scene.device).manual_seed(stream_seed(seed, "events"))
    )
    mdp.reset_formation(
        SimpleNamespace(scene=scene, device=scene.device, event_manager=events),
        ids,
        **INITIAL_NOISE,
    )
    scene.data.forward(ids.cpu().numpy())
    scene.refresh_sensors(ids)
    return scene


def serve(cfg: StudyCfg, out: Path) -> dict[str, Any]:
    """Simulator process: serve the scene until `cfg.seconds` of simulated time, then write
    `out/sim.npz` (the recorder's log) and `out/sim.json` (counters); returns the counters."""
    from orbitlab.bridge import BridgeCfg, BridgeServer, SceneAdapterCfg

    out.mkdir(parents=True, exist_ok=True)
    scene = build_scene(cfg.seed)
    adapter = _recording_adapter_class()(
        scene, SceneAdapterCfg(sensors=False, actuator_outputs=False), stop_s=cfg.seconds
    )
    lockstep = tuple(f"{f}/{t}" for f in FLYERS for t in ("cmd_force", "cmd_torque"))
    server = BridgeServer(
        adapter,
        BridgeCfg(
            host=cfg.host,
            pub_port=0,
            sub_port=0,
            heartbeat_port=0,
            mode="hub",
            rate_hz=1.0 / cfg.control_period_s,
            accel=0.0,
            lockstep=True,
            lockstep_topics=lockstep,
            relay_topics=(f"{geo.LEADER}/{PLAN_TOPIC}",),
        ),
    )
    try:
        if abs(server.tick_s - cfg.control_period_s) > 1e-9:
            raise ValueError(
                f"control period {cfg.control_period_s} s is not a whole number of "
                f"physics steps ({adapter.physics_dt} s)"
            )
        ticks = round(cfg.seconds / server.tick_s)
        ports = {k: int(v.rsplit(":", 1)[1]) for k, v in server.endpoints.items()}
        tmp = out / "endpoints.json.tmp"
        tmp.write_text(
            json.dumps(
                {
                    "host": cfg.host,
                    "pub_port": ports["telemetry"],
                    "sub_port": ports["commands"],
                    "heartbeat_port": ports["heartbeat"],
                    "pid": os.getpid(),
                }
            )
        )
        tmp.replace(out / "endpoints.json")
        start = time.monotonic()
        first, last = None, start
        while server.stats.ticks < ticks:
            now = time.monotonic()
            limit = cfg.startup_timeout_s if first is None else cfg.step_timeout_s
            if now - last > limit:
                raise TimeoutError(
                    f"no complete round of commands for {limit} s (t = {adapter.time_s:.2f} s)"
                )
            # waits of more than lockstep_republish_s re-send the state to late joiners
            if server.tick(max_wait_s=1.0):
                last = time.monotonic()
                first = first or last
        loop_s = time.monotonic() - (first or start)
        server.tick(max_wait_s=cfg.linger_s)  # re-send the final state while controllers exit
        stats = asdict(server.stats)
        inputs = {  # the wrench topics the controllers use (not thr_array_cmd_force)
            s.spec.path: s.received
            for s in server.table.inputs.values()
            if s.spec.topic in ("cmd_force", "cmd_torque")
        }
    finally:
        server.close()
    log = {k: np.asarray(v) for k, v in adapter.log.items()}
    np.savez(out / "sim.npz", **log)
    summary = {
        "ticks": ticks,
        "tick_s": server.tick_s,
        "sim_time_s": adapter.time_s,
        "loop_wall_s": loop_s,
        "stats": stats,
        "received": inputs,
    }
    (out / "sim.json").write_text(json.dumps(summary, indent=2))
    return summary


# -------------------------------------------------------------------------- frames
def hill_frame(r_n: np.ndarray, v_n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(C ECI -> Hill (3, 3), the Hill frame's angular velocity in ECI (3,) rad/s, point
    mass) of a chief at r_n (m), v_n (m/s)."""
    x = r_n / np.linalg.norm(r_n)
    h = np.cross(r_n, v_n)
    z = h / np.linalg.norm(h)
    C = np.stack([x, np.cross(z, x), z])
    return C, h / float(r_n @ r_n)


def gravity_gradient(r_n: np.ndarray) -> np.ndarray:
    """(3, 3) point-mass gravity gradient at r_n (m), 1/s^2: n^2 (3 r r^T - I)."""
    r = float(np.linalg.norm(r_n))
    u = r_n / r
    return MU_EARTH_M3_S2 / r**3 * (3.0 * np.outer(u, u) - np.eye(3))


def _attitude_error(q: np.ndarray, target: np.ndarray) -> np.ndarray:
    """q_e = target^* (x) q with w >= 0 (as `orbitlab.agent.attitude.attitude_error`)."""
    from orbitlab.agent.nmpc import quat_mul

    q = q / np.linalg.norm(q)
    t = target / np.linalg.norm(target)
    e = quat_mul(np.array([t[0], -t[1], -t[2], -t[3]]), q)
    return -e if e[0] < 0 else e


# -------------------------------------------------------------------------- leader
@dataclass(kw_only=True)
class LeaderCfg:
    """The scripted leader of the scenario (as in `agents.leader_nodes`)."""

    period_s: float = 0.2
    """Control period, s."""
    physics_dt_s: float = 0.05
    """Step of the reference point's integration, s (the scene's physics step)."""
    hold_s: float = geo.WAYPOINT_HOLD_S
    """Time at each waypoint, s."""
    waypoints: tuple = geo.WAYPOINTS
    """((x, y, z) m from the reference point, yaw deg about Hill z), cycled."""


class LeaderController:
    """The leader's CW-LQR + quaternion PD toward the waypoint schedule, its dead-reckoned
    reference point and its shared plan (numpy; the rollout of `nmpc.LeaderPlanNode`)."""

    def __init__(self, cfg: LeaderCfg | None = None) -> None:
        from orbitlab.agent import CwLqrCfg, CwLqrNode, mean_motion
        from orbitlab.agent.nmpc import FormationNmpc
        from orbitlab_tasks.formation.agents import LEADER_GAINS
        from orbitlab_tasks.formation.nmpc import follower_nmpc_cfg

        self.cfg = cfg = cfg or LeaderCfg()
        g = LEADER_GAINS
        lqr = CwLqrNode(
            CwLqrCfg(
                mean_motion_rad_s=mean_motion(geo.ORBIT_A_KM),
                mass_kg=geo.MASS_KG,
                q_pos=g.q_pos,
                q_vel=g.q_vel,
                r_force=g.r_force,
                max_force_n=g.max_force_n,
                period_s=cfg.period_s,
            ),
            "leader_lqr",
            1,
            cfg.physics_dt_s,
        )
        self.K = lqr.K.detach().cpu().numpy()
        self.max_force = lqr.max_force.detach().cpu().numpy()
        w, J = g.attitude_bandwidth_rad_s, geo.INERTIA_KGM2
        self.kp, self.kd = 2.0 * J * w * w, 2.0 * 0.9 * w * J
        self.inertia = np.diag([J, J, J])
        self.max_torque = g.max_torque_nm
        self.model = FormationNmpc(replace(follower_nmpc_cfg(dt_s=cfg.period_s), num_obstacles=0))
        self.steps = self.model.cfg.horizon_steps
        self.table = np.array([list(p) + list(geo.yaw_quat(yaw)) for p, yaw in cfg.waypoints])
        self.hold_steps = round(cfg.hold_s / cfg.period_s)
        self.d = np.zeros(3)
        """Reference point minus leader, ECI axes, m."""
        self.d_dot = np.zeros(3)
        """Its inertial rate, m/s."""
        self._held: tuple[np.ndarray, np.ndarray] | None = None
        """(force ECI N, gravity gradient) held since the last update."""

    def _law(
        self, x: np.ndarray, target_p: np.ndarray, target_v: np.ndarray, target_q: np.ndarray
    ) -> np.ndarray:
        """(6,) body wrench of the LQR + PD at the state x (13,)."""
        from orbitlab.agent.nmpc import quat_matrix

        error = np.concatenate([x[:3] - target_p, x[3:6] - target_v])
        force_hill = np.clip(-self.K @ error, -self.max_force, self.max_force)
        force_body = quat_matrix(x[6:10]).T @ force_hill
        w = x[10:13]
        torque = -self.kp * _attitude_error(x[6:10], target_q)[1:] - self.kd * w
        torque = torque + np.cross(w, self.inertia @ w)
        norm = float(np.linalg.norm(torque))
        if norm > self.max_torque:
            torque = torque * (self.max_torque / norm)
        return np.concatenate([force_body, torque])

    def advance_reference(self) -> None:
        """Integrate the reference point over one control period with the held command."""
        if self._held is None:
            return
        force_eci, G = self._held
        h = self.cfg.physics_dt_s
        for _ in range(round(self.cfg.period_s / h)):
            self.d_dot = self.d_dot + (G @ self.d - force_eci / geo.MASS_KG) * h
            self.d = self.d + self.d_dot * h

    def reference_hill(
        self, r_rel: np.ndarray, v_rel: np.ndarray, C: np.ndarray, omega: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The reference point's Hill position and velocity relative to the chief, from the
        leader's chief-relative ECI position r_rel (m) and velocity v_rel (m/s)."""
        p, v = r_rel + self.d, v_rel + self.d_dot
        return C @ p, C @ (v - np.cross(omega, p))

    def update(
        self, t: float, hill: dict, sc: dict, env: dict
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(wrench (6,), plan (H + 1, 13), reference point (3,) Hill m from the chief) at the
        state of time t: the leader's `hill_states` and `sc_states` and the environment."""
        self.advance_reference()
        r_n, v_n = np.asarray(env["r_n"], float), np.asarray(env["v_n"], float)
        C, omega = hill_frame(r_n, v_n)
        r_rel = np.asarray(sc["r_bn_n"], float) - r_n
        v_rel = np.asarray(sc["v_bn_n"], float) - v_n
        r, r_dot = self.reference_hill(r_rel, v_rel, C, omega)
        x = np.concatenate([hill["r_bh_h"], hill["v_bh_h"], hill["q_bh"], sc["omega_bn_b"]])
        k = round(t / self.cfg.period_s)
        dt = self.cfg.period_s
        wrench = None
        plan = np.empty((self.steps + 1, x.size))
        plan[0] = x
        state = x
        for n in range(self.steps):
            wp = self.table[((k + n) // self.hold_steps) % len(self.table)]
            u = self._law(state, r + r_dot * n * dt + wp[:3], r_dot, wp[3:7])
            if n == 0:
                wrench = u
            state = self.model.propagate(state, u)
            plan[n + 1] = state
        from orbitlab.agent.nmpc import quat_matrix

        force_eci = C.T @ quat_matrix(x[6:10]) @ wrench[:3]
        self._held = (force_eci, gravity_gradient(r_n))
        return wrench, plan, r


# ------------------------------------------------------------------------ followers
class FollowerControllers:
    """Both followers' NMPC (env-independent `FormationNmpc`), solved in turn like
    `FormationNmpcNode`: each keeps out of the leader's plan and of the other follower's plan
    of the previous update shifted by one step."""

    def __init__(self, period_s: float = 0.2) -> None:
        from orbitlab.agent.nmpc import FormationNmpc
        from orbitlab_tasks.formation.nmpc import follower_nmpc_cfg

        cfg = follower_nmpc_cfg(dt_s=period_s)
        self.problems = {f: FormationNmpc(cfg, geo.SLOT_OFFSETS_M[f]) for f in geo.FOLLOWERS}
        self.plans: dict[str, np.ndarray | None] = dict.fromkeys(geo.FOLLOWERS)
        self.solve_times_s: dict[str, list[float]] = {f: [] for f in geo.FOLLOWERS}
        self.iterations: dict[str, list[int]] = {f: [] for f in geo.FOLLOWERS}
        self.failures: dict[str, int] = dict.fromkeys(geo.FOLLOWERS, 0)

    def update(
        self, states: dict[str, np.ndarray], leader_plan: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Body wrench (6,) per follower from their 13-states and the leader's plan."""
        H = leader_plan.shape[0] - 1
        wrenches, plans = {}, {}
        for f in geo.FOLLOWERS:
            others = [leader_plan[:, :3]]
            for g in geo.FOLLOWERS:
                if g == f:
                    continue
                old = self.plans[g]
                others.append(
                    np.repeat(states[g][None, :3], H + 1, 0)
                    if old is None
                    else np.concatenate([old[1:, :3], old[-1:, :3]])
                )
            sol = self.problems[f].solve(states[f], leader_plan, others)
            wrenches[f], plans[f] = sol.wrench, sol.states
            self.solve_times_s[f].append(sol.solve_time_s)
            self.iterations[f].append(sol.iterations)
            self.failures[f] += int(not sol.success)
        self.plans.update(plans)
        return wrenches


# ------------------------------------------------------------------ controller loop
def _client(link: LinkCfg, client_id: str):
    from orbitlab.bridge import Client, ClientCfg

    return Client(
        ClientCfg(
            host=link.host,
            pub_port=link.pub_port,
            sub_port=link.sub_port,
            heartbeat_port=link.heartbeat_port,
            client_id=client_id,
        )
    )


def wait_tick(
    client, keys: list[tuple[str, str]], after: float, timeout_s: float
) -> dict[tuple[str, str], dict]:
    """Poll until every topic of `keys` has a message of one and the same time > `after`."""
    end = time.monotonic() + timeout_s
    while True:
        msgs = {k: client.latest(k) for k in keys}
        times = [m["time"] for m in msgs.values() if m is not None]
        if len(times) == len(keys) and min(times) > after + 1e-9 and max(times) - min(times) < 1e-9:
            return msgs
        remaining = end - time.monotonic()
        if remaining <= 0:
            missing = [k for k, m in msgs.items() if m is None or m["time"] <= after + 1e-9]
            raise TimeoutError(
                f"no state after t = {after:.3f} s within {timeout_s} s (waiting for {missing})"
            )
        client.poll(min(remaining, 0.05))


def _states_keys(flyers) -> list[tuple[str, str]]:
    return [_key(f, t) for f in flyers for t in ("hill_states", "sc_states")]


def run_leader(cfg: StudyCfg, link: LinkCfg, out: Path) -> dict[str, Any]:
    """Leader process: until the state at `cfg.seconds`, publish the plan and the commands of
    each tick; writes `out/leader.json` (compute times, reference point)."""
    controller = LeaderController(LeaderCfg(period_s=cfg.control_period_s))
    keys = [*_states_keys([geo.LEADER]), _key("env", "environment")]
    log: dict[str, list] = {"t": [], "reference_hill": [], "compute_s": []}
    with _client(link, "leader") as client:
        for topic in ("cmd_force", "cmd_torque"):
            client.advertise(geo.LEADER, topic)
        for k in keys:
            client.subscribe(k)
        client.wait_connected(cfg.startup_timeout_s)
        last, timeout = -math.inf, cfg.startup_timeout_s
        while True:
            msgs = wait_tick(client, keys, last, timeout)
            timeout = cfg.step_timeout_s
            start = time.perf_counter()
            last = t = msgs[keys[0]]["time"]
            wrench, plan, ref = controller.update(t, msgs[keys[0]], msgs[keys[1]], msgs[keys[2]])
            log["t"].append(t)
            log["reference_hill"].append(ref.tolist())
            if t >= cfg.seconds - 1e-6:
                break
            client.publish(
                geo.LEADER, PLAN_TOPIC, msg_type=PLAN_MSG_TYPE, time=t, states=plan.tolist()
            )
            client.publish_force(geo.LEADER, wrench[:3])
            client.publish_torque(geo.LEADER, wrench[3:])
            log["compute_s"].append(time.perf_counter() - start)
    summary = {"updates": len(log["compute_s"]), "last_time_s": last, **log}
    (out / "leader.json").write_text(json.dumps(summary))
    return summary


def run_followers(cfg: StudyCfg, link: LinkCfg, out: Path) -> dict[str, Any]:
    """Followers process: until the state at `cfg.seconds`, solve both NMPCs on each tick's
    states and the leader's plan of that tick; writes `out/followers.json` (solve times)."""
    controllers = FollowerControllers(cfg.control_period_s)
    keys = [*_states_keys(FLYERS), _key(geo.LEADER, PLAN_TOPIC)]
    updates, plan_wait = 0, []
    with _client(link, "followers") as client:
        for f in geo.FOLLOWERS:
            for topic in ("cmd_force", "cmd_torque"):
                client.advertise(f, topic)
        for k in keys:
            client.subscribe(k)
        client.wait_connected(cfg.startup_timeout_s)
        last, timeout = -math.inf, cfg.startup_timeout_s
        while True:
            state_keys = keys[:-1]
            msgs = wait_tick(client, state_keys, last, timeout)
            timeout = cfg.step_timeout_s
            last = t = msgs[state_keys[0]]["time"]
            if t >= cfg.seconds - 1e-6:
                break
            start = time.perf_counter()
            plan = wait_tick(client, [*state_keys, keys[-1]], last - 1e-6, timeout)[keys[-1]]
            plan_wait.append(time.perf_counter() - start)
            states = {}
            for f in geo.FOLLOWERS:
                hill, sc = msgs[_key(f, "hill_states")], msgs[_key(f, "sc_states")]
                states[f] = np.concatenate(
                    [hill["r_bh_h"], hill["v_bh_h"], hill["q_bh"], sc["omega_bn_b"]]
                )
            wrenches = controllers.update(states, np.asarray(plan["states"], float))
            for f, w in wrenches.items():
                client.publish_force(f, w[:3])
                client.publish_torque(f, w[3:])
            updates += 1
    summary = {
        "updates": updates,
        "last_time_s": last,
        "solve_s": controllers.solve_times_s,
        "iterations": controllers.iterations,
        "not_converged": controllers.failures,
        "plan_wait_s": plan_wait,
    }
    (out / "followers.json").write_text(json.dumps(summary))
    return summary


# ---------------------------------------------------------------------- launcher
@dataclass
class StudyResult:
    """What `run_study` measured (the formation error from the simulator's truth log)."""

    formation_error_m: float
    """Mean over followers and ticks of |rho_f - rho_leader - offset_f|, m."""
    max_formation_error_m: float
    attitude_error_deg: float
    """Mean follower-to-leader attitude error, deg."""
    sim_time_s: float
    ticks: int
    wall_s: float
    """Wall time of the whole run (process start to exit), s."""
    loop_wall_s: float
    """Wall time of the simulator's stepping loop (first step to last), s."""
    control_rate_hz: float
    """Command updates per spacecraft per simulated second."""
    wall_rate_hz: float
    """Control updates per wall second during the loop."""
    returncodes: dict[str, int]
    out: str
    sim: dict[str, Any] = field(default_factory=dict)
    leader: dict[str, Any] = field(default_factory=dict)
    followers: dict[str, Any] = field(default_factory=dict)
    commands: dict[str, list[str]] = field(default_factory=dict)
    """The command line of each process."""


def _command(role: str, cfg: StudyCfg, out: Path, link: LinkCfg | None = None) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        MODULE,
        role,
        "--out",
        str(out),
        "--seconds",
        repr(cfg.seconds),
        "--seed",
        str(cfg.seed),
        "--period",
        repr(cfg.control_period_s),
    ]
    if link is not None:
        cmd += [
            "--host",
            link.host,
            "--pub-port",
            str(link.pub_port),
            "--sub-port",
            str(link.sub_port),
            "--heartbeat-port",
            str(link.heartbeat_port),
        ]
    return cmd


def run_study(cfg: StudyCfg, out: Path) -> StudyResult:
    """Start the simulator, wait for its ports, start the leader and the followers, wait for
    all three to exit and score the simulator's log. Each process logs to `out/<role>.log`;
    on a timeout or failure the processes started here are killed (by their pid)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("endpoints.json", "sim.npz", "sim.json", "leader.json", "followers.json"):
        (out / name).unlink(missing_ok=True)
    env = dict(
        os.environ,
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
    )
    procs: dict[str, subprocess.Popen] = {}
    logs = []
    commands: dict[str, list[str]] = {}
    start = time.monotonic()

    def launch(role: str, cmd: list[str]) -> None:
        log = open(out / f"{role}.log", "w")  # noqa: SIM115 - closed below
        logs.append(log)
        commands[role] = cmd
        procs[role] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)

    try:
        launch("sim", _command("sim", cfg, out))
        endpoints = out / "endpoints.json"
        while not endpoints.exists():
            if procs["sim"].poll() is not None:
                raise RuntimeError(
                    f"the simulator exited ({procs['sim'].returncode}); see {out / 'sim.log'}"
                )
            if time.monotonic() - start > cfg.startup_timeout_s:
                raise TimeoutError("the simulator did not publish its ports in time")
            time.sleep(0.1)
        ports = json.loads(endpoints.read_text())
        link = LinkCfg(
            host=ports["host"],
            pub_port=ports["pub_port"],
            sub_port=ports["sub_port"],
            heartbeat_port=ports["heartbeat_port"],
        )
        launch("leader", _command("leader", cfg, out, link))
        launch("followers", _command("followers", cfg, out, link))
        for role, proc in procs.items():
            left = cfg.run_timeout_s - (time.monotonic() - start)
            try:
                proc.wait(timeout=max(left, 1.0))
            except subprocess.TimeoutExpired as error:
                raise TimeoutError(f"{role} still running after {cfg.run_timeout_s} s") from error
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        for log in logs:
            log.close()
    wall = time.monotonic() - start
    codes = {role: proc.returncode for role, proc in procs.items()}
    if any(codes.values()):
        raise RuntimeError(f"a process failed: {codes}; see the logs in {out}")
    return score(out, cfg, wall, codes, commands)


def score(
    out: Path, cfg: StudyCfg, wall_s: float, codes: dict[str, int], commands: dict[str, list[str]]
) -> StudyResult:
    """The study's result from the files the three processes wrote into `out`."""
    log = np.load(out / "sim.npz")
    sim = json.loads((out / "sim.json").read_text())
    leader = json.loads((out / "leader.json").read_text())
    followers = json.loads((out / "followers.json").read_text())
    error = log["error"]
    received = sim["received"]
    per_craft = min(received.values())
    return StudyResult(
        formation_error_m=float(error.mean()),
        max_formation_error_m=float(error.max()),
        attitude_error_deg=float(np.degrees(log["attitude_error"].mean())),
        sim_time_s=float(sim["sim_time_s"]),
        ticks=int(sim["ticks"]),
        wall_s=wall_s,
        loop_wall_s=float(sim["loop_wall_s"]),
        control_rate_hz=per_craft / max(float(sim["sim_time_s"]), 1e-9),
        wall_rate_hz=int(sim["ticks"]) / max(float(sim["loop_wall_s"]), 1e-9),
        returncodes=codes,
        out=str(out),
        sim=sim,
        leader=leader,
        followers=followers,
        commands=commands,
    )


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    """Entry point of the three processes: `sim`, `leader` or `followers`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("role", choices=("sim", "leader", "followers"))
    parser.add_argument("--out", required=True, help="folder for ports, logs and results")
    parser.add_argument("--seconds", type=float, default=StudyCfg.seconds)
    parser.add_argument("--seed", type=int, default=StudyCfg.seed)
    parser.add_argument("--period", type=float, default=StudyCfg.control_period_s)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--pub-port", type=int, default=0)
    parser.add_argument("--sub-port", type=int, default=0)
    parser.add_argument("--heartbeat-port", type=int, default=0)
    args = parser.parse_args(argv)
    cfg = StudyCfg(
        seconds=args.seconds, seed=args.seed, control_period_s=args.period, host=args.host
    )
    out = Path(args.out)
    link = LinkCfg(
        host=args.host,
        pub_port=args.pub_port,
        sub_port=args.sub_port,
        heartbeat_port=args.heartbeat_port,
    )
    if args.role == "sim":
        summary = serve(cfg, out)
        print(
            f"sim: {summary['ticks']} ticks, t = {summary['sim_time_s']:.2f} s, loop "
            f"{summary['loop_wall_s']:.1f} s wall, {summary['stats']}"
        )
    elif args.role == "leader":
        summary = run_leader(cfg, link, out)
        print(f"leader: {summary['updates']} updates, last state t = {summary['last_time_s']}")
    else:
        summary = run_followers(cfg, link, out)
        print(f"followers: {summary['updates']} updates, not converged {summary['not_converged']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
