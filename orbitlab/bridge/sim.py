"""What the bridge drives: an orbitlab Scene (one world), or a light-weight stand-in.

Both adapters offer the same small interface to the server:
* `topics()`: the TopicSpecs they publish ('out') and accept ('in');
* `apply(namespace, topic, values)`: a new command vector (held until changed);
* `step(nstep)`: advance `nstep` physics steps of `physics_dt` seconds;
* `time_s`: simulation time since the start or last reset, s;
* `payloads(keys)`: the current payload of each due output topic;
* `reset()`: back to the initial state.

Telemetry per spacecraft (namespace = entity name):
* `sc_states` (SCStatesMsgPayload, Basilisk fields): r_BN_N (m) and v_BN_N (m/s) of the body
  origin in inertial (ECI) axes, sigma_BN (MRP, body relative to inertial), omega_BN_B (rad/s);
* `hill_states` (HillStatesMsgPayload): r_BH_H (m) and v_BH_H (m/s, rate in the rotating
  frame) relative to the chief in Hill axes (x radial, y along-track, z orbit normal),
  sigma_BH (MRP) and q_BH (w, x, y, z; rotates body vectors into Hill axes) of the body
  relative to the Hill frame, omega_BH_B (rad/s, body axes);
* one topic per sensor (OrbitlabSensorMsgPayload: `values`, `names`), at the sensor's rate;
* `<group>_output` per actuator group (OrbitlabActuatorMsgPayload: `command`, `output`).
The environment (`env/environment`): sim_time (s), t_j2000 (s), eclipse (1 lit, 0 shadow),
sun_eci (unit), mag_field_eci (T), atm_density (kg/m^3), chief r_N (m), v_N (m/s).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orbitlab.bridge import protocol
from orbitlab.bridge.topics import TopicSpec

Key = tuple[str, str]


# ------------------------------------------------------------------ rotations (numpy)
def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4) (w, x, y, z)."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            1 - 2 * (y * y + z * z),
            2 * (x * y - w * z),
            2 * (x * z + w * y),
            2 * (x * y + w * z),
            1 - 2 * (x * x + z * z),
            2 * (y * z - w * x),
            2 * (x * z - w * y),
            2 * (y * z + w * x),
            1 - 2 * (x * x + y * y),
        ],
        -1,
    ).reshape(*q.shape[:-1], 3, 3)


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., 4) (w, x, y, z), w >= 0, of rotation matrices (..., 3, 3)."""
    m = np.asarray(m, dtype=float)
    w = np.sqrt(np.maximum(0.0, 1 + m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2])) / 2
    x = np.sqrt(np.maximum(0.0, 1 + m[..., 0, 0] - m[..., 1, 1] - m[..., 2, 2])) / 2
    y = np.sqrt(np.maximum(0.0, 1 - m[..., 0, 0] + m[..., 1, 1] - m[..., 2, 2])) / 2
    z = np.sqrt(np.maximum(0.0, 1 - m[..., 0, 0] - m[..., 1, 1] + m[..., 2, 2])) / 2
    x = np.copysign(x, m[..., 2, 1] - m[..., 1, 2])
    y = np.copysign(y, m[..., 0, 2] - m[..., 2, 0])
    z = np.copysign(z, m[..., 1, 0] - m[..., 0, 1])
    q = np.stack([w, x, y, z], -1)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def mrp(q: np.ndarray) -> np.ndarray:
    """Modified Rodrigues parameters (..., 3) of quaternions (w, x, y, z), |sigma| <= 1."""
    q = np.where(q[..., :1] < 0.0, -q, q)
    return q[..., 1:] / (1.0 + q[..., :1])


# ----------------------------------------------------------------------- the scene
@dataclass(kw_only=True)
class SceneAdapterCfg:
    world: int = 0
    """Which world of the scene is bridged."""
    sensors: bool = True
    """Publish sensor readings."""
    actuator_outputs: bool = True
    """Publish each actuator group's command and output."""


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
        self._wrench = {name: np.zeros(6) for name in self.thrusters}
        self._dirty: set[str] = set()
        self._cache_time = -1.0
        self._states: dict[str, dict[str, dict]] = {}

    # ----------------------------------------------------------------- topics
    def topics(self) -> list[TopicSpec]:
        specs = []
        for name in self.free:
            specs.append(
                TopicSpec(
                    namespace=name,
                    topic="sc_states",
                    msg_type="SCStatesMsgPayload",
                    direction="out",
                )
            )
            specs.append(
                TopicSpec(
                    namespace=name,
                    topic="hill_states",
                    msg_type="HillStatesMsgPayload",
                    direction="out",
                )
            )
        if self.cfg.sensors:
            for key, sensor in self.scene.sensors.items():
                entity, sname = key.split("/", 1)
                period = sensor.period_steps * self.physics_dt
                rate = 1.0 / period if sensor.period_steps > 1 else 0.0
                specs.append(
                    TopicSpec(
                        namespace=entity,
                        topic=sname,
                        direction="out",
                        msg_type="OrbitlabSensorMsgPayload",
                        max_rate_hz=rate,
                    )
                )
        if self.cfg.actuator_outputs:
            for key in self.scene.actuators:
                entity, gname = key.split("/", 1)
                specs.append(
                    TopicSpec(
                        namespace=entity,
                        topic=f"{gname}_output",
                        direction="out",
                        msg_type="OrbitlabActuatorMsgPayload",
                    )
                )
        specs.append(
            TopicSpec(
                namespace=protocol.ENV_NS,
                topic=protocol.ENV_TOPIC,
                direction="out",
                msg_type="OrbitlabEnvironmentMsgPayload",
            )
        )
        for name in self.thrusters:
            for topic in ("cmd_force", "cmd_torque"):
                specs.append(
                    TopicSpec(
                        namespace=name,
                        topic=topic,
                        direction="in",
                        msg_type=protocol.COMMAND_TOPICS[topic].msg_type,
                    )
                )
        for name, group in self.wheels.items():
            specs.append(
                TopicSpec(
                    namespace=name,
                    topic="cmd_wheel_torque",
                    direction="in",
                    msg_type=protocol.WHEEL_TORQUE.msg_type,
                    length=group.num,
                )
            )
        return specs

    # --------------------------------------------------------------- commands
    def apply(self, namespace: str, topic: str, values: list[float]) -> None:
        """Hold a command: body force (N) / torque (N m) -> the entity's thruster group by
        allocation and PWM; wheel torques (N m) -> its wheel group."""
        torch = self._torch
        if topic == "cmd_wheel_torque":
            group = self.wheels[namespace]
            group.set_command(torch.tensor([values], dtype=torch.float64), self._worlds)
            return
        wrench = self._wrench[namespace]
        if topic == "cmd_force":
            wrench[:3] = values
        else:
            wrench[3:] = values
        self._dirty.add(namespace)  # allocated once before the next step (force + torque)

    # ------------------------------------------------------------- simulation
    def step(self, nstep: int = 1) -> None:
        torch = self._torch
        for name in self._dirty:
            self.thrusters[name].set_wrench_command(
                torch.tensor(self._wrench[name][None], dtype=torch.float64), self._worlds
            )
        self._dirty.clear()
        self.scene.step(nstep)
        self._steps += nstep

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

    # -------------------------------------------------------------- telemetry
    def _entity_states(self) -> dict[str, dict[str, dict]]:
        if self._cache_time == self.time_s:
            return self._states
        view, w = self.scene.view, self.cfg.world
        qpos = view.array("qpos")[w].double().cpu().numpy()
        qvel = view.array("qvel")[w].double().cpu().numpy()
        R = view.array("R")[w].cpu().numpy() * 1e3
        V = view.array("V")[w].cpu().numpy() * 1e3
        C, omega_h = (x[w].cpu().numpy() for x in view.hill())
        states = {}
        for name, h in self.free.items():
            pos, quat = qpos[h.qpos_adr : h.qpos_adr + 3], qpos[h.qpos_adr + 3 : h.qpos_adr + 7]
            vel, rate = qvel[h.dof_adr : h.dof_adr + 3], qvel[h.dof_adr + 3 : h.dof_adr + 6]
            Rbn = quat_to_matrix(quat)
            Rbh = C @ Rbn
            q_bh = matrix_to_quat(Rbh)
            states[name] = {
                "sc_states": {
                    "r_BN_N": (R + pos).tolist(),
                    "v_BN_N": (V + vel).tolist(),
                    "sigma_BN": mrp(quat / np.linalg.norm(quat)).tolist(),
                    "omega_BN_B": rate.tolist(),
                },
                "hill_states": {
                    "r_BH_H": (C @ pos).tolist(),
                    "v_BH_H": (C @ (vel - np.cross(omega_h, pos))).tolist(),
                    "sigma_BH": mrp(q_bh).tolist(),
                    "q_BH": q_bh.tolist(),
                    "omega_BH_B": (rate - Rbn.T @ omega_h).tolist(),
                },
            }
        self._states, self._cache_time = states, self.time_s
        return states

    def _environment(self) -> dict:
        view, w = self.scene.view, self.cfg.world

        def get(name):
            return view.array(name)[w].cpu().numpy().tolist()

        return {
            "sim_time": self.time_s,
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
            if topic in ("sc_states", "hill_states") and ns in self.free:
                out[(ns, topic)] = self._entity_states()[ns][topic]
            elif ns == protocol.ENV_NS and topic == protocol.ENV_TOPIC:
                out[(ns, topic)] = self._environment()
            elif topic.endswith("_output") and f"{ns}/{topic[:-7]}" in self.scene.actuators:
                group = self.scene.actuators[f"{ns}/{topic[:-7]}"]
                out[(ns, topic)] = {
                    "command": group.command[w].tolist(),
                    "output": group.output[w].tolist(),
                }
            else:
                sensor = self.scene.sensors[f"{ns}/{topic}"]
                names = list(getattr(sensor, "names", ()) or ())
                out[(ns, topic)] = {"values": sensor.value[w].tolist(), "names": names}
        return out


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
