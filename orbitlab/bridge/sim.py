"""What the bridge drives: an orbitlab Scene (one world), or a light-weight stand-in.

Both adapters offer the same small interface to the server:
* `topics()`: the TopicSpecs they publish ('out') and accept ('in');
* `apply(namespace, topic, values)`: a new command vector (held until changed);
* `step(nstep)`: advance `nstep` physics steps of `physics_dt` seconds;
* `time_s`: simulation time since the start or last reset, s;
* `payloads(keys)`: the current payload of each due output topic;
* `reset()`: back to the initial state.

Telemetry per spacecraft (namespace = entity name, or `SceneAdapterCfg.namespaces`'s):
* Basilisk's `sc_states`, `hill_trans_state` and `hill_rot_state`, every field filled
  (`basilisk`; the Hill states relative to an unforced reference orbit, as Basilisk's, see
  `reference`); the only telemetry in 'ros' mode (`SceneAdapterCfg.basilisk_only`);
* hub mode also: `hill_states` (HillStatesMsgPayload): r_BH_H (m) and v_BH_H (m/s, rate in
  the rotating frame) relative to orbitlab's chief (the frame the scene is simulated in,
  which the scene's total external force moves) in its Hill axes, sigma_BH (MRP) and q_BH (w, x, y,
  z; rotates body vectors into Hill axes) of the body relative to the Hill frame,
  omega_BH_B (rad/s, body axes); one topic per sensor (OrbitlabSensorMsgPayload: `values`,
  `names`), at the sensor's rate; `<group>_output` per actuator group
  (OrbitlabActuatorMsgPayload: `command`, `output`); and the environment
  (`env/environment`): elapsed_s (s), t_j2000 (s), eclipse (1 lit, 0 shadow), sun_eci (unit),
  mag_field_eci (T), atm_density (kg/m^3), chief r_N (m), v_N (m/s). (No payload field is
  named `sim_time`: the public node takes any frame with one for a clock frame.)
Commands per spacecraft: `cmd_force`, `cmd_torque` (body wrench: allocated to its thrusters),
`thr_array_cmd_force` (per-thruster forces, N, in the group's order), `cmd_wheel_torque`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from orbitlab.bridge import protocol
from orbitlab.bridge.basilisk import MSG_TYPES, RateDifference, ThrustAccount, spacecraft_payloads
from orbitlab.bridge.reference import ReferenceOrbit
from orbitlab.bridge.topics import TopicSpec
from orbitlab.orbit.frames import hill_frame
from orbitlab.orbit.rotations import matrix_to_quat, quat_to_matrix
from orbitlab.orbit.rotations import quat_to_mrp as mrp

Key = tuple[str, str]


# ----------------------------------------------------------------------- the scene
__all__ = ["SceneAdapter", "SceneAdapterCfg", "StandInCfg", "StandInSim", "matrix_to_quat"]


@dataclass(kw_only=True)
class SceneAdapterCfg:
    world: int = 0
    """Which world of the scene is bridged."""
    sensors: bool = True
    """Publish sensor readings (hub mode)."""
    actuator_outputs: bool = True
    """Publish each actuator group's command and output (hub mode)."""
    basilisk_only: bool = False
    """Publish only Basilisk's topics and bsk_msgs types ('ros' mode: the public node drops
    anything else): sc_states, hill_trans_state, hill_rot_state."""
    namespaces: dict[str, str] = field(default_factory=dict)
    """Entity name -> namespace on the wire (e.g. {'leader': 'leaderSc'}); others keep
    their entity name."""


class SceneAdapter:
    """Bridges world `cfg.world` of an orbitlab Scene."""

    def __init__(self, scene, cfg: SceneAdapterCfg | None = None):
        import torch

        from orbitlab.actuators.momentum import ReactionWheelGroup
        from orbitlab.actuators.thrusters import ThrusterGroup

        self.scene, self.cfg = scene, cfg or SceneAdapterCfg()
        if not 0 <= self.cfg.world < scene.num_envs:
            raise ValueError(f"world {self.cfg.world} not in [0, {scene.num_envs})")
        self._torch = torch
        self.physics_dt = float(scene.physics_dt)
        self._worlds = torch.tensor([self.cfg.world], device=scene.device)
        self._steps = 0
        self.free = {n: h for n, h in scene.entities.items() if h.free}
        self.thrusters: dict[str, object] = {}
        self.wheels: dict[str, object] = {}
        for key, group in scene.actuators.items():
            entity = key.split("/", 1)[0]
            if isinstance(group, ThrusterGroup) and entity not in self.thrusters:
                self.thrusters[entity] = group
            if isinstance(group, ReactionWheelGroup) and entity not in self.wheels:
                self.wheels[entity] = group
        self.ns = _namespaces(self.cfg.namespaces, list(scene.entities))
        """Entity -> namespace on the wire."""
        self.entity = {ns: name for name, ns in self.ns.items()}
        """Namespace on the wire -> entity."""
        self._wrench = {name: np.zeros(6) for name in self.thrusters}
        self._dirty: set[str] = set()
        self._cache_time = -1.0
        self._states: dict[str, dict[str, dict]] = {}
        m = scene.mj_model
        self._com_b = {
            n: np.array(m.body_ipos[h.root_body], dtype=float) for n, h in self.free.items()
        }
        self._accounts = {n: ThrustAccount(h.mass_kg) for n, h in self.free.items()}
        self._omega_dot = {n: RateDifference() for n in self.free}
        self._hill_rate_dot = RateDifference()
        orbit = scene.cfg.orbit
        self.reference = ReferenceOrbit(orbit.central_body, orbit.use_j2)
        """The unforced origin of the Basilisk Hill states (`orbitlab.bridge.reference`)."""
        self._start_reference()
        self._thrust_dir = {
            n: g.direction.cpu().numpy() for n, g in self.thrusters.items() if n in self.free
        }

    # ----------------------------------------------------------------- topics
    def topics(self) -> list[TopicSpec]:
        specs = []
        for name in self.free:
            ns = self.ns[name]
            for topic, msg_type in MSG_TYPES.items():
                specs.append(
                    TopicSpec(namespace=ns, topic=topic, msg_type=msg_type, direction="out")
                )
            if not self.cfg.basilisk_only:
                specs.append(
                    TopicSpec(
                        namespace=ns,
                        topic="hill_states",
                        msg_type="HillStatesMsgPayload",
                        direction="out",
                    )
                )
        if self.cfg.sensors and not self.cfg.basilisk_only:
            for key, sensor in self.scene.sensors.items():
                entity, sname = key.split("/", 1)
                period = sensor.period_steps * self.physics_dt
                rate = 1.0 / period if sensor.period_steps > 1 else 0.0
                specs.append(
                    TopicSpec(
                        namespace=self.ns[entity],
                        topic=sname,
                        direction="out",
                        msg_type="OrbitlabSensorMsgPayload",
                        max_rate_hz=rate,
                    )
                )
        if self.cfg.actuator_outputs and not self.cfg.basilisk_only:
            for key in self.scene.actuators:
                entity, gname = key.split("/", 1)
                specs.append(
                    TopicSpec(
                        namespace=self.ns[entity],
                        topic=f"{gname}_output",
                        direction="out",
                        msg_type="OrbitlabActuatorMsgPayload",
                    )
                )
        if not self.cfg.basilisk_only:
            specs.append(
                TopicSpec(
                    namespace=protocol.ENV_NS,
                    topic=protocol.ENV_TOPIC,
                    direction="out",
                    msg_type="OrbitlabEnvironmentMsgPayload",
                )
            )
        for name, group in self.thrusters.items():
            for topic in ("cmd_force", "cmd_torque"):
                specs.append(
                    TopicSpec(
                        namespace=self.ns[name],
                        topic=topic,
                        direction="in",
                        msg_type=protocol.COMMAND_TOPICS[topic].msg_type,
                    )
                )
            specs.append(
                TopicSpec(
                    namespace=self.ns[name],
                    topic="thr_array_cmd_force",
                    direction="in",
                    msg_type=protocol.THRUST_ARRAY.msg_type,
                    length=group.num,
                    bounds=_bounds(group),
                )
            )
        for name, group in self.wheels.items():
            specs.append(
                TopicSpec(
                    namespace=self.ns[name],
                    topic="cmd_wheel_torque",
                    direction="in",
                    msg_type=protocol.WHEEL_TORQUE.msg_type,
                    length=group.num,
                    bounds=_bounds(group),
                )
            )
        return specs

    # --------------------------------------------------------------- commands
    def apply(self, namespace: str, topic: str, values: list[float]) -> None:
        """Hold a command: body force (N) / torque (N m) -> the entity's thruster group by
        allocation and PWM; per-thruster forces (N) -> its thruster group's command (PWM as
        configured); wheel torques (N m) -> its wheel group."""
        torch = self._torch
        entity = self.entity[namespace]
        if topic in ("cmd_wheel_torque", "thr_array_cmd_force"):
            group = (self.wheels if topic == "cmd_wheel_torque" else self.thrusters)[entity]
            group.set_command(torch.tensor([values], dtype=torch.float64), self._worlds)
            if topic == "thr_array_cmd_force":
                self._dirty.discard(entity)  # the latest command wins over a held wrench
            return
        wrench = self._wrench[entity]
        if topic == "cmd_force":
            wrench[:3] = values
        else:
            wrench[3:] = values
        self._dirty.add(entity)  # allocated once before the next step (force + torque)

    # ------------------------------------------------------------- simulation
    def step(self, nstep: int = 1) -> None:
        torch = self._torch
        for name in self._dirty:
            self.thrusters[name].set_wrench_command(
                torch.tensor(self._wrench[name][None], dtype=torch.float64), self._worlds
            )
        self._dirty.clear()
        for _ in range(nstep):  # step by step: the thrust Delta-V of every PWM step
            self.scene.step(1)
            self._steps += 1
            self._account()

    def _account(self) -> None:
        """Add the last physics step's thrust to each spacecraft's `ThrustAccount`."""
        w = self.cfg.world
        qpos = self.scene.view.array("qpos")[w].double().cpu().numpy()
        for name, h in self.free.items():
            group = self.thrusters.get(name)
            if group is None:
                force_b = np.zeros(3)
            else:
                force_b = group.output[w].double().cpu().numpy() @ self._thrust_dir[name]
            quat = qpos[h.qpos_adr + 3 : h.qpos_adr + 7]
            self._accounts[name].add(force_b, quat, self.physics_dt)

    @property
    def time_s(self) -> float:
        return self._steps * self.physics_dt

    def reset(self) -> None:
        self.scene.reset()
        self._steps = 0
        self._cache_time = -1.0
        for w in self._wrench.values():
            w[:] = 0.0
        self._dirty.clear()
        for account in self._accounts.values():
            account.reset()
        self._omega_dot = {n: RateDifference() for n in self.free}
        self._hill_rate_dot = RateDifference()
        self._start_reference()

    def _start_reference(self) -> None:
        """Start the unforced reference at the world's chief state, now."""
        view, w = self.scene.view, self.cfg.world
        R = view.array("R")[w].double().cpu().numpy() * 1e3
        V = view.array("V")[w].double().cpu().numpy() * 1e3
        self.reference.reset(R, V, self.time_s)

    # -------------------------------------------------------------- telemetry
    def _entity_states(self) -> dict[str, dict[str, dict]]:
        if self._cache_time == self.time_s:
            return self._states
        view, w, t = self.scene.view, self.cfg.world, self.time_s
        qpos = view.array("qpos")[w].double().cpu().numpy()
        qvel = view.array("qvel")[w].double().cpu().numpy()
        R = view.array("R")[w].double().cpu().numpy() * 1e3
        V = view.array("V")[w].double().cpu().numpy() * 1e3
        C, omega_h = (np.asarray(x[w].cpu().numpy(), dtype=float) for x in view.hill())
        R_ref, V_ref = self.reference.at(t)
        C_ref, omega_ref = hill_frame(R_ref, V_ref)
        hill_rate_dot = self._hill_rate_dot(t, omega_ref)
        states = {}
        for name, h in self.free.items():
            pos, quat = qpos[h.qpos_adr : h.qpos_adr + 3], qpos[h.qpos_adr + 3 : h.qpos_adr + 7]
            vel, rate = qvel[h.dof_adr : h.dof_adr + 3], qvel[h.dof_adr + 3 : h.dof_adr + 6]
            states[name] = spacecraft_payloads(
                chief_r_m=R,
                chief_v_m_s=V,
                reference_r_m=R_ref,
                reference_v_m_s=V_ref,
                hill_from_eci=C_ref,
                hill_rate_n=omega_ref,
                pos_m=pos,
                vel_m_s=vel,
                quat=quat,
                rate_b=rate,
                com_b_m=self._com_b[name],
                account=self._accounts[name],
                omega_dot_b=self._omega_dot[name](t, rate),
                hill_rate_dot_n=hill_rate_dot,
            )
            if not self.cfg.basilisk_only:
                Rbn = quat_to_matrix(quat)
                q_bh = matrix_to_quat(C @ Rbn)
                states[name]["hill_states"] = {
                    "r_BH_H": (C @ pos).tolist(),
                    "v_BH_H": (C @ (vel - np.cross(omega_h, pos))).tolist(),
                    "sigma_BH": mrp(q_bh).tolist(),
                    "q_BH": q_bh.tolist(),
                    "omega_BH_B": (rate - Rbn.T @ omega_h).tolist(),
                }
        self._states, self._cache_time = states, t
        return states

    def _environment(self) -> dict:
        view, w = self.scene.view, self.cfg.world

        def get(name):
            return view.array(name)[w].cpu().numpy().tolist()

        return {
            "elapsed_s": self.time_s,
            "t_j2000": get("t"),
            "eclipse": get("eclipse"),
            "sun_eci": get("sun_eci"),
            "mag_field_eci": get("mag_field_eci"),
            "atm_density": get("atm_density"),
            "r_N": (view.array("R")[w].cpu().numpy() * 1e3).tolist(),
            "v_N": (view.array("V")[w].cpu().numpy() * 1e3).tolist(),
        }

    def payloads(self, keys: list[Key]) -> dict[Key, dict]:
        out, w = {}, self.cfg.world
        for ns, topic in keys:
            entity = self.entity.get(ns, ns)
            if entity in self.free and (topic in MSG_TYPES or topic == "hill_states"):
                out[(ns, topic)] = self._entity_states()[entity][topic]
            elif ns == protocol.ENV_NS and topic == protocol.ENV_TOPIC:
                out[(ns, topic)] = self._environment()
            elif topic.endswith("_output") and f"{entity}/{topic[:-7]}" in self.scene.actuators:
                group = self.scene.actuators[f"{entity}/{topic[:-7]}"]
                out[(ns, topic)] = {
                    "command": group.command[w].tolist(),
                    "output": group.output[w].tolist(),
                }
            else:
                sensor = self.scene.sensors[f"{entity}/{topic}"]
                names = list(getattr(sensor, "names", ()) or ())
                out[(ns, topic)] = {"values": sensor.value[w].tolist(), "names": names}
        return out


def _bounds(group) -> tuple[tuple[float, float], ...]:
    """An actuator group's command range per element (world 0), for `TopicSpec.bounds`."""
    low, high = group.low.reshape(-1, group.num)[0], group.high.reshape(-1, group.num)[0]
    return tuple(zip(low.tolist(), high.tolist(), strict=True))


def _namespaces(mapping: dict[str, str], entities: list[str]) -> dict[str, str]:
    """Entity -> wire namespace: `mapping` checked (known entities, distinct plain names)."""
    for entity, ns in mapping.items():
        if entity not in entities:
            raise ValueError(
                f"namespaces: unknown entity '{entity}' (known: {', '.join(entities)})"
            )
        if not isinstance(ns, str) or not ns or "/" in ns or ns.strip() != ns:
            raise ValueError(
                f"namespaces: '{entity}' -> {ns!r} must be a non-empty name without '/' or spaces"
            )
    names = {e: mapping.get(e, e) for e in entities}
    if len(set(names.values())) != len(names) or protocol.ENV_NS in set(mapping.values()):
        raise ValueError(f"namespaces must be distinct (and not 'env'), got {names}")
    return names


# ------------------------------------------------------------------- the stand-in
@dataclass(kw_only=True)
class StandInCfg:
    """A light-weight stand-in for the simulation: rigid bodies integrated in numpy, no orbit.
    Used to measure the bridge alone."""

    num_spacecraft: int = 1
    physics_dt: float = 0.01
    """Step, s."""
    mass_kg: float = 17.8
    inertia_kgm2: float = 0.315
    prefix: str = "sc"
    """Namespaces are f'{prefix}{i}'."""


_WRENCH_COLUMNS = {"cmd_force": slice(0, 3), "cmd_torque": slice(3, 6)}


class StandInSim:
    """Double integrators (translation and rotation rate) per spacecraft; attitude fixed."""

    def __init__(self, cfg: StandInCfg):
        self.cfg = cfg
        n = cfg.num_spacecraft
        self.names = [f"{cfg.prefix}{i}" for i in range(n)]
        self._index = {name: i for i, name in enumerate(self.names)}
        self.physics_dt = cfg.physics_dt
        self.pos, self.vel = np.zeros((n, 3)), np.zeros((n, 3))
        self.rate, self.wrench = np.zeros((n, 3)), np.zeros((n, 6))
        self._steps = 0

    def topics(self) -> list[TopicSpec]:
        specs = []
        for name in self.names:
            specs.append(
                TopicSpec(
                    namespace=name,
                    topic="sc_states",
                    msg_type="SCStatesMsgPayload",
                    direction="out",
                )
            )
            for topic in ("cmd_force", "cmd_torque"):
                specs.append(
                    TopicSpec(
                        namespace=name,
                        topic=topic,
                        direction="in",
                        msg_type=protocol.COMMAND_TOPICS[topic].msg_type,
                    )
                )
        return specs

    def apply(self, namespace: str, topic: str, values: list[float]) -> None:
        self.wrench[self._index[namespace], _WRENCH_COLUMNS[topic]] = values

    def step(self, nstep: int = 1) -> None:
        dt = self.physics_dt * nstep
        self.vel += self.wrench[:, :3] / self.cfg.mass_kg * dt
        self.pos += self.vel * dt
        self.rate += self.wrench[:, 3:] / self.cfg.inertia_kgm2 * dt
        self._steps += nstep

    @property
    def time_s(self) -> float:
        return self._steps * self.physics_dt

    def reset(self) -> None:
        for a in (self.pos, self.vel, self.rate, self.wrench):
            a[:] = 0.0
        self._steps = 0

    def payloads(self, keys: list[Key]) -> dict[Key, dict]:
        pos, vel, rate = self.pos.tolist(), self.vel.tolist(), self.rate.tolist()
        index, sigma = self._index, [0.0, 0.0, 0.0]
        return {
            key: {"r_BN_N": pos[i], "v_BN_N": vel[i], "sigma_BN": sigma, "omega_BN_B": rate[i]}
            for key in keys
            for i in (index[key[0]],)
        }
