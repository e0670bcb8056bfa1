"""Roll out an agent (baseline graph, random or zero actions) and score the episodes.

Besides success, return and time, the score measures what each world's first episode
cost and where it ended, generically for any task:

* thruster groups: the impulse sum_i integral |F_i| dt (N s) and the delta-v it buys,
  sum_i integral |F_i| / m dt (m/s; m the mass of the entity carrying thruster i), from
  each physics step's applied force (after PWM, lag and failures);
* every actuator group: its control effort, integral sum_i |u_i| dt of the applied
  output in the group's units times seconds (wheels N m s, magnetorquers A m^2 s, CMG
  gimbal rates rad, thrusters N s);
* the task's reward terms at the episode's last step, unweighted (each term's own
  units; e.g. Pointing's 'error' in rad, Detumble's 'rate' in rad/s), and among them
  the terms named like '*error*'.

These cover each world's first episode up to its end or, for worlds still running,
up to the end of the rollout. They are measured by `StepMeters`, which wraps the env's
actuator groups' `apply` and its reward manager's `compute` for the rollout only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, Self

import torch

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.fw.terms import KernelTerm
from orbitlab.stats import bootstrap_mean_interval

EFFORT_UNITS = {"thrusters": "N s", "wheels": "N m s", "magnetorquers": "A m^2 s", "cmgs": "rad"}
"""Units of a group's control effort (output units x s), by element kind."""


@dataclass
class Score:
    """Scores over the episodes that ended within the rollout; the cost and final-error
    fields cover every world's first episode (up to the rollout's end if still running)."""

    episodes: int
    """Episodes that ended (success, failure or time-out)."""
    success_rate: float
    """Fraction of ended episodes that ended by the 'success' termination."""
    mean_return: float
    """Mean undiscounted return of the ended episodes."""
    mean_success_time_s: float
    """Mean episode duration of the successful ones, s (nan if none)."""
    mean_delta_v_mps: float | None = None
    """Mean thruster delta-v per world, sum over thrusters of integral |F| / m dt, m/s
    (None when the env has no thruster group)."""
    mean_impulse_ns: float | None = None
    """Mean total thruster impulse per world, integral sum |F| dt, N s (None: no thrusters)."""
    control_effort: dict[str, float] = field(default_factory=dict)
    """Mean control effort per actuator group, integral sum_i |u_i| dt (see units)."""
    control_effort_units: dict[str, str] = field(default_factory=dict)
    """Units of each group's control effort."""
    final_terms: dict[str, float] = field(default_factory=dict)
    """Mean unweighted value of each (non-zero-weight) reward term at the episode's last
    step, in the term's own units."""
    final_errors: dict[str, float] = field(default_factory=dict)
    """The final_terms whose names contain 'error'."""
    final_errors_ci95: dict[str, tuple[float, float]] = field(default_factory=dict)
    """95 % interval of each final error's mean over the worlds (percentile bootstrap,
    `orbitlab.stats.bootstrap_mean_interval`)."""
    worlds: int = 0
    """Worlds whose first episode the cost and final-error fields average over."""

    def __str__(self) -> str:
        text = (
            f"episodes {self.episodes}, success {100 * self.success_rate:.1f}%, "
            f"return {self.mean_return:.3f}, time to success "
            f"{self.mean_success_time_s:.1f} s"
        )
        if self.mean_delta_v_mps is not None:
            text += f", delta-v {self.mean_delta_v_mps:.4g} m/s"
        for name, value in self.control_effort.items():
            text += f", effort {name} {value:.3g} {self.control_effort_units.get(name, '')}"
        for name, value in self.final_errors.items():
            text += f", final {name} {value:.4g}"
        return text


class StepObserver(Protocol):
    """Something that watches a rollout (a recorder, a live viewer)."""

    def observe(
        self,
        env: ManagerBasedRLEnv,
        terms: dict[str, torch.Tensor],
        outputs: dict[str, torch.Tensor],
    ) -> None:
        """Called after reset and after every env step's physics, before finished worlds
        reset. `terms`: each reward term's unweighted value this step, (num_envs,) (empty
        after reset); `outputs`: each actuator group's applied output averaged over the
        step's physics steps, (num_envs, num) in the group's units (zeros after reset)."""

    def episode_ended(self, ended: torch.Tensor) -> None:
        """Called after every env step with the worlds whose first episode has ended."""


class StepMeters:
    """Integrates the actuator groups' applied outputs per physics step and captures the
    reward terms per env step, by wrapping the actuator stage's `apply`, the reward manager's
    `compute` and its term functions on their instances, for the rollout only
    (`install()` / `remove()`, or a `with` block)."""

    def __init__(self, env: ManagerBasedRLEnv, observers: Sequence[StepObserver] = ()):
        self.env, self.observers = env, list(observers)
        scene = env.scene
        n, dt = env.num_envs, env.physics_dt
        kw = {"dtype": torch.float64, "device": env.device}
        self.dt = dt
        self.groups = dict(scene.actuators)
        self.effort = {name: torch.zeros(n, **kw) for name in self.groups}
        """Running integral sum_i |u_i| dt per group (this episode), (num_envs,)."""
        self.step_output = {name: torch.zeros((n, g.num), **kw) for name, g in self.groups.items()}
        """Each group's applied output averaged over the last env step's physics steps."""
        self._step_sum = {name: torch.zeros((n, g.num), **kw) for name, g in self.groups.items()}
        self._substeps = 0
        self.thrusters = {name: g for name, g in self.groups.items() if g.kind == "thrusters"}
        self.delta_v = torch.zeros(n, **kw)
        """Running thruster delta-v, m/s (this episode)."""
        self._inv_mass = {name: self._inverse_mass(g) for name, g in self.thrusters.items()}
        self.terms: dict[str, torch.Tensor] = {}
        """Unweighted reward terms of the last env step, (num_envs,) each (the terms the
        reward manager evaluates: those of non-zero weight)."""
        self._raw: dict[str, torch.Tensor] = {}
        self._funcs: dict = {}
        self._installed = False

    def _inverse_mass(self, group) -> torch.Tensor:
        """1 / mass (1/kg) of the entity carrying each thruster of `group`, (num,)."""
        inverse = []
        for body in group.bodies.tolist():
            owner = [e for e in self.env.scene.entities.values() if body in e.body_ids]
            mass = (
                owner[0].mass_kg
                if owner
                else float(
                    self.env.scene.mj_model.body_subtreemass[
                        self.env.scene.mj_model.body_rootid[body]
                    ]
                )
            )
            inverse.append(1.0 / mass if mass > 0.0 else 0.0)
        return torch.tensor(inverse, dtype=torch.float64, device=self.env.device)

    # ---------------------------------------------------------------- wrapping
    def install(self) -> Self:
        stage = self.env.scene.actuator_stage
        stage.apply = self._metered_apply(stage.apply)  # type: ignore[method-assign]
        manager = self.env.reward_manager
        manager.compute = self._metered_compute(manager.compute)  # type: ignore[method-assign]
        self._funcs = manager._funcs
        manager._funcs = {
            k: f if isinstance(f, KernelTerm) else self._captured(k, f)
            for k, f in self._funcs.items()
        }
        self._installed = True
        return self

    def remove(self) -> None:
        if not self._installed:
            return
        del self.env.scene.actuator_stage.apply  # back to the class's method
        del self.env.reward_manager.compute
        self.env.reward_manager._funcs = self._funcs
        self._installed = False

    def __enter__(self) -> Self:
        return self.install()

    def __exit__(self, *exc) -> None:
        self.remove()

    def _metered_apply(self, apply: Callable[[], None]) -> Callable[[], None]:
        """The actuator stage's `apply`, then every group's output of this physics step."""

        def metered() -> None:
            apply()
            for name, group in self.groups.items():
                out = group.output.abs()
                self.effort[name] += out.sum(-1) * self.dt
                self._step_sum[name] += group.output
                if name in self._inv_mass:
                    self.delta_v += (out @ self._inv_mass[name]) * self.dt
            self._substeps += 1

        return metered

    def _captured(self, name: str, func: Callable[..., torch.Tensor]):
        """`func` (a reward term), keeping its unweighted value of this step."""

        def capture(env: ManagerBasedRLEnv, **params) -> torch.Tensor:
            value = func(env, **params)
            self._raw[name] = torch.as_tensor(value).to(torch.float64) + 0.0  # no -0.0
            return value

        return capture

    def _metered_compute(self, compute: Callable[[float], torch.Tensor]):
        def metered(dt: float) -> torch.Tensor:
            self._raw.clear()
            reward = compute(dt)
            manager = self.env.reward_manager
            for name, value in manager.kernel_term_values.items():  # not wrapped: a kernel's
                if manager.terms[name].weight != 0.0:
                    self._raw[name] = value + 0.0  # a copy, as a wrapped term's (no -0.0)
            self.terms = {k: self._raw[k] for k in manager.terms if k in self._raw}
            count = max(self._substeps, 1)
            for k, total in self._step_sum.items():
                self.step_output[k] = total / count
                total.zero_()
            self._substeps = 0
            for observer in self.observers:
                observer.observe(self.env, self.terms, self.step_output)
            return reward

        return metered

    def clear(self, worlds: torch.Tensor) -> None:
        """Restart the running integrals of `worlds` (bool mask) for their next episode."""
        for value in (*self.effort.values(), self.delta_v):
            value.masked_fill_(worlds, 0.0)


def _mean(values: torch.Tensor) -> float:
    return float(values.to(torch.float64).mean()) if values.numel() else float("nan")


def rollout(
    env: ManagerBasedRLEnv,
    policy: str | Callable[[], torch.Tensor] = "baseline",
    max_steps: int | None = None,
    seed: int = 0,
    observers: Sequence[StepObserver] = (),
) -> Score:
    """Run every env until each has ended one episode (or `max_steps` env steps).

    `policy`: 'baseline' (the config's agent graph; no actions), 'random' (uniform in
    [-1, 1]), 'zero', or a callable returning the next (num_envs, action_dim) actions
    (e.g. a trained actor reading the env's current observations). `observers` (e.g. an
    `orbitlab.viz.Recorder`) see every step of the same run (see `StepObserver`).
    """
    generator = torch.Generator(device=env.device).manual_seed(seed)
    n, dim = env.num_envs, env.action_manager.total_dim
    steps = max_steps or env.max_episode_length
    returns = torch.zeros(n, device=env.device)
    ended = torch.zeros(n, dtype=torch.bool, device=env.device)
    success = torch.zeros(n, dtype=torch.bool, device=env.device)
    duration = torch.zeros(n, device=env.device)
    final_return = torch.zeros(n, device=env.device)
    meters = StepMeters(env, observers)
    final_effort = {k: torch.zeros_like(v) for k, v in meters.effort.items()}
    final_dv = torch.zeros_like(meters.delta_v)
    final_terms: dict[str, torch.Tensor] = {}
    env.reset()
    for observer in observers:
        observer.observe(env, {}, meters.step_output)
    with meters:
        for _ in range(steps):
            if callable(policy):
                action = policy()
            elif policy == "random":
                action = 2 * torch.rand((n, dim), generator=generator, device=env.device) - 1
            else:
                action = torch.zeros((n, dim), device=env.device)
            length = env.episode_length_buf.clone()
            _, reward, terminated, truncated, _ = env.step(action)
            returns += reward
            done = (terminated | truncated) & ~ended
            won = done & env.termination_manager.last.get("success", torch.zeros_like(done))
            success |= won
            duration = torch.where(done, (length + 1).float() * env.step_dt, duration)
            final_return = torch.where(done, returns, final_return)
            returns = torch.where(terminated | truncated, 0.0, returns)
            live = ~ended  # still in its first episode during this step
            for k, v in meters.effort.items():
                final_effort[k] = torch.where(live, v, final_effort[k])
            final_dv = torch.where(live, meters.delta_v, final_dv)
            for k, v in meters.terms.items():
                previous = final_terms.get(k, torch.full_like(v, float("nan")))
                final_terms[k] = torch.where(live, v, previous)
            meters.clear(terminated | truncated)
            ended |= done
            for observer in observers:
                observer.episode_ended(ended)
            if bool(ended.all()):
                break
    count = int(ended.sum())
    won_time = duration[success]
    has_thrusters = bool(meters.thrusters)
    impulse = sum((final_effort[k] for k in meters.thrusters), torch.zeros_like(final_dv))
    terms = {k: _mean(v) for k, v in final_terms.items()}
    errors = [k for k in terms if "error" in k.lower()]
    return Score(
        episodes=count,
        success_rate=float(success.sum()) / max(count, 1),
        mean_return=float(final_return[ended].mean()) if count else float("nan"),
        mean_success_time_s=float(won_time.mean()) if won_time.numel() else float("nan"),
        mean_delta_v_mps=_mean(final_dv) if has_thrusters else None,
        mean_impulse_ns=_mean(impulse) if has_thrusters else None,
        control_effort={k: _mean(v) for k, v in final_effort.items()},
        control_effort_units={
            k: EFFORT_UNITS.get(g.kind, "output x s") for k, g in meters.groups.items()
        },
        final_terms=terms,
        final_errors={k: terms[k] for k in errors},
        final_errors_ci95={
            k: bootstrap_mean_interval(final_terms[k].double().cpu().numpy()) for k in errors
        },
        worlds=n,
    )
