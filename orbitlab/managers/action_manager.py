"""Actions: policy outputs mapped to actuator groups or to agent-graph inputs.

Every term takes a slice of the action vector, scales and clips it, and hands
it on once per environment step; actuator groups hold commands between steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import mujoco
import torch

from orbitlab import sync
from orbitlab.actuators.thrusters import ThrusterGroup, sigma_delta_pulses
from orbitlab.managers.base import term_table
from orbitlab.sim import health
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


@dataclass(kw_only=True)
class ActionTermCfg:
    """An action term; `class_type` builds it with (cfg, env)."""

    class_type: type
    """The ActionTerm subclass."""
    scale: float | tuple[float, ...] = 1.0
    """Command units per unit of action (per component or one for all)."""
    offset: float | tuple[float, ...] = 0.0
    """Added after scaling."""
    clip: tuple[float, float] | None = (-1.0, 1.0)
    """Clip of the raw action before scaling (None: no clip)."""


class ActionTerm(Stateful):
    """Maps `dim` raw action components to a command."""

    state_attrs: ClassVar[tuple[str, ...]] = ()

    dim: int

    def __init__(self, cfg: ActionTermCfg, env: ManagerBasedRLEnv):
        self.cfg, self.env = cfg, env

    def process(self, raw: torch.Tensor) -> torch.Tensor:
        if self.cfg.clip is not None:
            raw = raw.clamp(*self.cfg.clip)
        scale = torch.as_tensor(self.cfg.scale, dtype=torch.float64, device=raw.device)
        offset = torch.as_tensor(self.cfg.offset, dtype=torch.float64, device=raw.device)
        return raw.to(torch.float64) * scale + offset

    def apply(self, command: torch.Tensor) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def actuator_group(self, key: str):
        """The scene's actuator group `key` ('entity/group'); ValueError naming the groups
        the scene has."""
        actuators = self.env.scene.actuators
        if key not in actuators:
            raise ValueError(f"action: no actuator group '{key}' (have: {', '.join(actuators)})")
        return actuators[key]

    def reset(self, env_ids: torch.Tensor) -> None:
        """Restart the per-world state of `env_ids` at an episode start, after the reset
        events (their new state is in place); default nothing."""


class ActuatorAction(ActionTerm):
    def __init__(self, cfg: ActuatorActionCfg, env: ManagerBasedRLEnv):
        super().__init__(cfg, env)
        self.group = self.actuator_group(cfg.group)
        self.dim = self.group.num

    def apply(self, command):
        self.group.set_command(command)


class BinaryGripperAction(ActionTerm):
    """Open or close a gripper: an action >= 0 commands its servos' open positions, < 0 the
    closed ones (one component, whatever the number of servos)."""

    def __init__(self, cfg: BinaryGripperActionCfg, env: ManagerBasedRLEnv):
        super().__init__(cfg, env)
        self.group = self.actuator_group(cfg.group)
        self.dim = 1
        kw = {"dtype": torch.float64, "device": env.device}
        count = self.group.num
        self.open = torch.as_tensor(cfg.open, **kw).expand(count).clone()
        self.closed = torch.as_tensor(cfg.closed, **kw).expand(count).clone()

    def apply(self, command):
        self.group.set_command(torch.where(command >= 0.0, self.open, self.closed))


class JointVelocityAction(ActionTerm):
    """Joint rates (rad/s) integrated into the targets of a group of MuJoCo position servos.

    Each env step the targets move by rate x the env step and are clamped to the servos'
    control ranges, so the action's scale is the joints' rate limit; a reset restarts the
    targets from the joints' positions (after the reset events).
    """

    state_attrs = ("target",)

    def __init__(self, cfg: JointVelocityActionCfg, env: ManagerBasedRLEnv):
        super().__init__(cfg, env)
        self.group = self.actuator_group(cfg.group)
        m = env.scene.mj_model
        ids = self.group.ids.cpu().numpy()
        servo = (m.actuator_trntype[ids] == mujoco.mjtTrn.mjTRN_JOINT) & (
            m.actuator_biastype[ids] == mujoco.mjtBias.mjBIAS_AFFINE
        )
        if not (self.group.kind == "mujoco" and servo.all()):
            raise ValueError(
                f"action: actuator group '{cfg.group}' must be MuJoCo position servos on joints"
            )
        adr = m.jnt_qposadr[m.actuator_trnid[ids, 0]]
        self.qpos_adr = torch.as_tensor(adr, dtype=torch.long, device=env.device)
        self.dim = int(ids.size)
        low, high = self.group.limits()
        self.low = low.to(device=env.device, dtype=torch.float64)
        self.high = high.to(device=env.device, dtype=torch.float64)
        self.step_dt = env.step_dt
        self.target = self._joint_positions().clone()
        self.home: torch.Tensor | None = None
        if cfg.home_rad is not None:
            home = torch.as_tensor(cfg.home_rad, dtype=torch.float64, device=env.device)
            if home.shape not in ((), (self.dim,)) or cfg.home_time_constant_s <= 0.0:
                raise ValueError(
                    f"action: home_rad={cfg.home_rad!r} needs one value or {self.dim} (one per "
                    f"joint) and home_time_constant_s={cfg.home_time_constant_s!r} > 0"
                )
            self.home = home.expand(self.dim)

    def apply(self, command):
        rate = command
        if self.home is not None:
            rate = command - (self.target - self.home) / self.cfg.home_time_constant_s
        moved = self.target + rate * self.step_dt
        self.target.copy_(torch.minimum(torch.maximum(moved, self.low), self.high))
        self.group.set_command(self.target)

    def _joint_positions(self) -> torch.Tensor:
        return self.env.scene.view.array("qpos")[:, self.qpos_adr].to(torch.float64)

    def reset(self, env_ids):
        self.target[env_ids] = self._joint_positions()[env_ids]
        self.group.set_command(self.target[env_ids], env_ids)


class ThrusterWrenchAction(ActionTerm):
    state_attrs = ("remainder",)

    dim = 6

    def __init__(self, cfg: ThrusterWrenchActionCfg, env: ManagerBasedRLEnv):
        super().__init__(cfg, env)
        group = self.actuator_group(cfg.group)
        if not isinstance(group, ThrusterGroup):
            raise TypeError(
                f"action: actuator group '{cfg.group}' is a {type(group).__name__}, "
                "not a thruster group"
            )
        self.group = group
        self.group.allocator()
        self.remainder: torch.Tensor | None = None
        """Impulse per thruster carried to later periods, N s (`pulse_modulation`)."""
        if cfg.pulse_modulation:
            period = group.cfg.pwm_period_s
            if group.cfg.mode != "pwm" or abs(env.step_dt - period) > 1e-9:
                raise ValueError(
                    f"action: pulse_modulation needs '{cfg.group}' in pwm mode with its PWM "
                    f"period ({period} s) equal to the env step ({env.step_dt} s)"
                )
            self.remainder = torch.zeros(
                (env.num_envs, group.num), dtype=torch.float64, device=env.device
            )
            self.decay = math.exp(-period / cfg.pulse_leak_time_constant_s)

    def apply(self, command):
        self.group.set_wrench_command(command)
        if self.remainder is not None:
            self._modulate(self.remainder)

    def _modulate(self, remainder: torch.Tensor) -> None:
        """Replace the allocated forces by this period's sigma-delta pulses."""
        group, period = self.group, self.group.cfg.pwm_period_s
        gain = group.gain.clamp_min(1e-12)  # command = force / gain: compare real impulses
        force = group.command * group.gain
        out, self.remainder = sigma_delta_pulses(
            force,
            remainder,
            group.high,
            group.high * group.cfg.min_on_time_s,
            period,
            self.decay,
        )
        group.set_command(out / gain)

    def reset(self, env_ids):
        if self.remainder is not None:
            self.remainder[env_ids] = 0.0


class ThrusterForceAction(ThrusterWrenchAction):
    dim = 3

    def apply(self, command):
        super().apply(torch.cat([command, torch.zeros_like(command)], -1))


class GraphInputAction(ActionTerm):
    def __init__(self, cfg: GraphInputActionCfg, env: ManagerBasedRLEnv):
        super().__init__(cfg, env)
        self.dim = int(cfg.dim)
        # Zero until the first action, so that the graph can run before it.
        env.agent_inputs[cfg.key] = torch.zeros(
            (env.num_envs, self.dim), dtype=torch.float64, device=env.device
        )

    def apply(self, command):
        self.env.agent_inputs[self.cfg.key].copy_(command)  # the graph holds this tensor


@dataclass(kw_only=True)
class ActuatorActionCfg(ActionTermCfg):
    """Drive an actuator group directly ('entity/group'); dim = its element count."""

    class_type: type = ActuatorAction
    group: str = ""
    """Actuator group key, e.g. 'sat/wheels'."""


@dataclass(kw_only=True)
class BinaryGripperActionCfg(ActionTermCfg):
    """A gripper opened (action >= 0) or closed (< 0) through an actuator group's commands
    ('entity/group'); the action has one component."""

    class_type: type = BinaryGripperAction
    group: str = ""
    """Actuator group key, e.g. 'bot/gripper'."""
    open: float | tuple[float, ...] = 0.0
    """The group's commands when open (one for all elements or one each)."""
    closed: float | tuple[float, ...] = 0.0
    """The group's commands when closed."""


@dataclass(kw_only=True)
class JointVelocityActionCfg(ActionTermCfg):
    """Joint rates integrated into the targets of MuJoCo position servos ('entity/group');
    `scale` is the rate per unit action, rad/s (the joints' rate limit)."""

    class_type: type = JointVelocityAction
    group: str = ""
    """Actuator group key, e.g. 'bot/arm' (MuJoCo position servos on joints)."""
    end_effector: str | None = None
    """The site the joints move, 'entity/site' (e.g. 'bot/grasp'): teleoperation maps a 6-DOF
    device command to its twist through the generalized Jacobian (None: no teleoperation)."""
    home_rad: float | tuple[float, ...] | None = None
    """A pose the targets return to (rad, one for all or one per joint): each step the rate
    is the action's less (target - home) / `home_time_constant_s`, so a held action keeps
    the arm at home + rate x time constant and no action brings it home (None: pure rate
    integration)."""
    home_time_constant_s: float = 2.0
    """How fast the targets return home, s."""


@dataclass(kw_only=True)
class ThrusterWrenchActionCfg(ActionTermCfg):
    """A body wrench (6) allocated to a thruster group's non-negative forces."""

    class_type: type = ThrusterWrenchAction
    group: str = ""
    """Thruster group key, e.g. 'chaser/rcs'."""
    pulse_modulation: bool = False
    """Pass the allocated forces through sigma-delta pulse modulation
    (`orbitlab.actuators.thrusters.sigma_delta_pulses`): a force whose pulse is shorter
    than the valves' minimum on-time is carried over and fired as a minimum pulse once the
    impulse adds up, instead of being dropped by the PWM. Without it, every request below
    F_max x min_on_time / PWM period per thruster (2.2 N for 22 N, 10 ms, 0.1 s) gives no
    thrust at all: a dead zone in which a learning policy gets no gradient. Needs the
    group in pwm mode with its PWM period equal to the env step (one action per pulse)."""
    pulse_leak_time_constant_s: float = 10.0
    """With `pulse_modulation`: an unfired remainder decays with this time constant, s."""


@dataclass(kw_only=True)
class ThrusterForceActionCfg(ThrusterWrenchActionCfg):
    """A body force (3) allocated to a thruster group with zero net torque (attitude is left
    to another actuator, e.g. wheels driven by the agent graph)."""

    class_type: type = ThrusterForceAction


@dataclass(kw_only=True)
class GraphInputActionCfg(ActionTermCfg):
    """Feed the agent graph's value `key` (a learned policy replaces the graph's prefix)."""

    class_type: type = GraphInputAction
    key: str = ""
    """Graph value the action provides, e.g. 'wrench_body'."""
    dim: int = 6
    """Number of components."""


class ActionManager(Stateful):
    """Splits the policy action across its terms (in order) and applies each."""

    state_attrs = ("action", "prev_action", "terms")

    def __init__(self, terms: dict[str, ActionTermCfg], env: ManagerBasedRLEnv):
        self.env = env
        self.terms = {name: cfg.class_type(cfg, env) for name, cfg in terms.items()}
        self.total_dim = sum(t.dim for t in self.terms.values())
        self.action = torch.zeros((env.num_envs, self.total_dim), device=env.device)
        self.prev_action = torch.zeros_like(self.action)
        self._refuse_nonfinite = sync.host_reads_are_free(env.device)

    def process(self, action: torch.Tensor) -> None:
        """Check `action` (num_envs, total_dim) and hand each term its slice.

        A NaN or inf is refused with a ValueError on the CPU, before anything is applied; on
        a GPU, where that check would wait for the device, the envs holding one are frozen
        instead (health code NONFINITE_ACTION, `orbitlab.sim.health`: the step ends and
        resets them, reward 0) and their action is taken as zero."""
        action = torch.as_tensor(action, device=self.env.device, dtype=torch.float32)
        if action.shape != self.action.shape:
            raise ValueError(
                f"action must have shape {tuple(self.action.shape)}, got {tuple(action.shape)}"
            )
        if self._refuse_nonfinite:
            if not torch.isfinite(action).all():
                bad = torch.nonzero(~torch.isfinite(action).all(-1))[:, 0].tolist()
                raise ValueError(f"action has NaN or inf in envs {bad[:10]}; nothing was applied")
        else:
            finite = torch.isfinite(action)
            self.env.scene.actuator_context.freeze_worlds(
                ~finite.all(-1), slice(None), health.NONFINITE_ACTION
            )
            action = torch.where(finite, action, 0.0)
        self.prev_action.copy_(self.action)
        self.action.copy_(action)
        start = 0
        for term in self.terms.values():
            term.apply(term.process(action[:, start : start + term.dim]))
            start += term.dim

    def reset(self, env_ids: torch.Tensor) -> dict[str, float]:
        self.action[env_ids] = 0.0
        self.prev_action[env_ids] = 0.0
        for term in self.terms.values():
            term.reset(env_ids)
        return {}

    def __str__(self) -> str:
        return term_table(
            "ActionManager", [(n, t.dim) for n, t in self.terms.items()], ("term", "dim")
        )
