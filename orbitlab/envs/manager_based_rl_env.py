"""The manager-based RL environment over a scene of `num_envs` orbit-coupled worlds.

One `step(action)`:
1. the action manager hands the action to actuator groups / agent-graph inputs;
2. `decimation` physics steps; before each, the agent graph (if any) runs with
   the latest sensor readings (by full and, when unique, short sensor name), the
   commands (by command name)
   and the action's graph inputs, and writes its outputs to actuator groups;
3. episode counters advance; commands update; terminations and rewards;
4. finished envs (terminal or timed out) are reset, alone; their episode
   statistics go to `extras["log"]` (0-d tensors on the device, or numbers, which the
   trainers' loggers read when they write); `extras["time_outs"]` marks truncations;
5. interval events fire; observations are computed (after the resets, so a
   reset env returns its first observation of the new episode).

All tensors are torch on the simulation's device, shaped (num_envs, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from orbitlab.envs.agent_readings import AgentReadings
from orbitlab.envs.step_end import StepEndLaunch
from orbitlab.managers.action_manager import ActionManager, ActionTermCfg
from orbitlab.managers.command_manager import CommandManager, CommandTermCfg
from orbitlab.managers.curriculum_manager import CurriculumManager
from orbitlab.managers.event_manager import EventManager
from orbitlab.managers.observation_manager import ObservationManager
from orbitlab.managers.reward_manager import RewardManager
from orbitlab.managers.termination_manager import TerminationManager
from orbitlab.managers.terms import (
    CurriculumTermCfg,
    EventTermCfg,
    ObservationGroupCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from orbitlab.scene.scene import Scene, SceneCfg
from orbitlab.seeding import stream_seed
from orbitlab.sensors.base import Sensor
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.sensors.rendering import CameraRenderer


@dataclass(kw_only=True)
class ManagerBasedRLEnvCfg:
    """An RL task: the scene plus its managers."""

    scene: SceneCfg
    """The world."""
    decimation: int = 10
    """Physics steps per environment step."""
    episode_length_s: float = 60.0
    """Episode time limit, s (a time-out, not a terminal state)."""
    actions: dict[str, ActionTermCfg] = field(default_factory=dict)
    observations: dict[str, ObservationGroupCfg] = field(default_factory=dict)
    rewards: dict[str, RewardTermCfg] = field(default_factory=dict)
    terminations: dict[str, TerminationTermCfg] = field(default_factory=dict)
    events: dict[str, EventTermCfg] = field(default_factory=dict)
    commands: dict[str, CommandTermCfg] = field(default_factory=dict)
    curriculum: dict[str, CurriculumTermCfg] = field(default_factory=dict)
    agent: Any = None
    """Optional agent graph factory `agent(env) -> (AgentGraph, {graph key: actuator group})`;
    it runs before every physics step with the sensors' values."""
    seed: int = 0
    """Seed of every random stream: events, observation noise, commands, actuator groups
    and sensor noise each draw from `orbitlab.seeding.stream_seed(seed, component)`."""
    render_size: tuple[int, int] = (480, 640)
    """`render()` image size (height, width), px."""
    fused_observations: bool = True
    """Build the observation groups without noise or history in one kernel launch
    (`orbitlab.managers.observation_pipeline`; the same values); False: every group by the
    torch pipeline."""


class ManagerBasedRLEnv(Stateful):
    """Batched environment: `reset()`, `step(action)`, `render()`, torch tensors throughout."""

    state_attrs = ("episode_length_buf", "agent_inputs", "obs_buf")

    def __init__(self, cfg: ManagerBasedRLEnvCfg):
        if int(cfg.decimation) < 1:
            raise ValueError(f"decimation must be >= 1, got {cfg.decimation}")
        self.cfg = cfg
        self.seed = int(cfg.seed)
        torch.manual_seed(self.seed)
        self.scene = Scene(cfg.scene)
        self.num_envs = self.scene.num_envs
        self.device = self.scene.device
        self.physics_dt = self.scene.physics_dt
        self.step_dt = self.physics_dt * cfg.decimation
        self.max_episode_length_s = float(cfg.episode_length_s)
        self.max_episode_length = int(np.ceil(cfg.episode_length_s / self.step_dt))
        self.all_env_ids = torch.arange(self.num_envs, device=self.device)
        self.episode_length_buf = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        self.common_step_counter = 0
        self.unhealthy_count = 0
        """Worlds ended because the simulation froze them (orbitlab.sim.health), in all."""
        self.agent_inputs: dict[str, torch.Tensor] = {}
        self.extras: dict[str, Any] = {"log": {}}
        self._renderer: CameraRenderer | None = None
        self._renderer_camera: str | None = None
        self.agent, self.agent_outputs = cfg.agent(self) if cfg.agent is not None else (None, {})
        if self.agent is not None:
            # Worlds reset between env steps only, so each world's physics-step count is a
            # multiple of the decimation when an env step starts: the graph runs, at each
            # physics step, only the nodes some world may be due for.
            self.agent.compile(int(cfg.decimation))
        self.scene.sensor_stage.compile(int(cfg.decimation))  # likewise the sensors' timers
        self.command_manager = CommandManager(cfg.commands, self)
        self._seed_scene(self.seed)
        self.action_manager = ActionManager(cfg.actions, self)
        self._agent_readings = AgentReadings(self)
        self._held_outputs = self._held_agent_outputs()
        self.event_manager = EventManager(cfg.events, self)
        self.event_manager.apply("startup")
        # terminations first: a reward kernel term may read their flags (`StepArrays`)
        self.termination_manager = TerminationManager(cfg.terminations, self)
        self.reward_manager = RewardManager(cfg.rewards, self)
        self._step_end = StepEndLaunch(self)
        self.curriculum_manager = CurriculumManager(cfg.curriculum, self)
        self._reset_idx(self.all_env_ids)
        self.observation_manager = ObservationManager(
            cfg.observations, self, fused=cfg.fused_observations
        )
        self.obs_buf = self.observation_manager.compute()

    # ------------------------------------------------------------------- loop
    def reset(self, seed: int | None = None, env_ids: torch.Tensor | None = None):
        """Reset `env_ids` (default all); returns (observations, extras).

        An explicit reset ends no episode in the curriculum's sense: only episodes that
        ended inside `step()` (terminated or timed out) move the curriculum."""
        if seed is not None:
            self.reseed(int(seed))
        ids = self.all_env_ids if env_ids is None else torch.as_tensor(env_ids, device=self.device)
        self.extras = {"log": {}}
        self._reset_idx(ids, update_curriculum=False)
        self.obs_buf = self.observation_manager.compute()
        return self.obs_buf, self.extras

    def reseed(self, seed: int) -> None:
        """Restart every random stream from `seed` (events, observation noise, commands,
        actuators, sensor noise; each with `orbitlab.seeding.stream_seed(seed, component)`),
        so that `reset(seed=s)` reproduces the same episodes."""
        self.seed = seed
        torch.manual_seed(seed)
        self.event_manager.generator.manual_seed(stream_seed(seed, "events"))
        if hasattr(self, "observation_manager"):
            self.observation_manager.generator.manual_seed(stream_seed(seed, "observation"))
        self.command_manager.reseed(seed)
        self._seed_scene(seed)
        self.scene.view.episode.zero_()

    def _seed_scene(self, seed: int) -> None:
        """Seed the actuator groups' draws and the sensors' noise from `seed`."""
        for name, group in self.scene.actuators.items():
            group.generator.manual_seed(stream_seed(seed, f"actuators/{name}", group.cfg.seed))
        for sensor in self.scene.sensors.values():
            if isinstance(sensor, Sensor):
                sensor.reseed(seed)

    def step(self, action: torch.Tensor):
        """Apply `action` (num_envs, action_dim) for `decimation` physics steps.

        Returns (observations, reward, terminated, truncated, extras).
        """
        self.action_manager.process(action)
        for phase in range(self.cfg.decimation):
            self._run_agent(phase)
            self.scene.step(check=False, phase=phase)
        self.scene.check()  # once per env step: a blocking copy on a GPU
        self.episode_length_buf += 1
        self.common_step_counter += 1
        self.command_manager.compute(self.step_dt)
        self.termination_manager.compute()
        self.reward_manager.compute(self.step_dt)
        # A world the simulation froze (orbitlab.sim.health) ends here: terminated, neither
        # a success nor a time-out, reward 0, and reset below like any other (one kernel:
        # orbitlab.fw.step_end; the returned tensors are new).
        ends = self._step_end.run()
        terminated, truncated, reward, unhealthy = (
            ends.terminated.clone(),
            ends.truncated.clone(),
            ends.reward.clone(),
            ends.unhealthy,
        )
        self.extras = {"log": {}, "time_outs": truncated}
        # The step's one host read: which envs to reset (resets take host ids).
        done_ids = torch.nonzero(ends.done)[:, 0]
        if done_ids.numel():
            self._end_episodes(done_ids, unhealthy)
        self.event_manager.apply("interval", dt=self.step_dt)
        self.obs_buf = self.observation_manager.compute()
        return self.obs_buf, reward, terminated, truncated, self.extras

    def _end_episodes(self, done_ids: torch.Tensor, unhealthy: torch.Tensor) -> None:
        """Log frozen worlds, keep the final observation, reset `done_ids`."""
        num_unhealthy = int(unhealthy.sum())  # a read on a GPU, which keeps their reasons
        if num_unhealthy:
            self.unhealthy_count += num_unhealthy
            self.extras["log"]["Episode_Termination/sim_unhealthy"] = num_unhealthy
            self.extras["unhealthy_reasons"] = self.scene.data.unhealthy()
        if "policy" in self.cfg.observations:
            final_obs = self.observation_manager.compute(commit=False)["policy"]
            if num_unhealthy and isinstance(final_obs, torch.Tensor):
                final_obs = torch.nan_to_num(final_obs, nan=0.0, posinf=0.0, neginf=0.0)
            self.extras["final_obs"] = final_obs
        self._reset_idx(done_ids)

    def _run_agent(self, phase: int) -> None:
        """The agent graph at physics step `phase` of the env step."""
        if self.agent is None:
            return
        values = self.agent.step(self._agent_readings, self.scene.view.step_count, phase)
        for key, group in self.agent_outputs.items():
            if key in self._held_outputs and not self._held_outputs[key].updated:
                continue  # the group already holds this output (written once per update)
            self.scene.actuators[group].set_command(values[key])

    def _held_agent_outputs(self) -> dict[str, Any]:
        """Agent output key -> the node publishing it, for outputs whose actuator group
        nothing else commands: such a group is written only when that node updates."""
        if self.agent is None:
            return {}
        publisher = {k: node for node in self.agent.nodes for k in node.output_keys.values()}
        by_actions = {
            id(term.group) for term in self.action_manager.terms.values() if hasattr(term, "group")
        }
        return {
            key: publisher[key]
            for key, group in self.agent_outputs.items()
            if key in publisher and id(self.scene.actuators[group]) not in by_actions
        }

    def _reset_idx(self, env_ids: torch.Tensor, update_curriculum: bool = True) -> None:
        log = self.extras.setdefault("log", {})
        if update_curriculum:
            log.update(self.curriculum_manager.compute(env_ids))
        with self.scene.deferred_refresh(env_ids):  # one forward pass, after every event
            self.scene.reset(env_ids)
            self.event_manager.apply("reset", env_ids)
        for manager in (
            self.action_manager,
            self.reward_manager,
            self.termination_manager,
            self.command_manager,
        ):
            log.update(manager.reset(env_ids))
        if hasattr(self, "observation_manager"):
            self.observation_manager.reset(env_ids)
        if self.agent is not None:
            self.agent.reset(env_ids)
            for key in self.agent_inputs:
                self.agent_inputs[key][env_ids] = 0.0
        self.episode_length_buf[env_ids] = 0

    # ---------------------------------------------------------------- render
    def render(self, env_id: int = 0, camera: str | None = None) -> np.ndarray:
        """An RGB image (H, W, 3) uint8 of one env, markers included (offscreen GL)."""
        from orbitlab.envs.render import render_rgb

        return render_rgb(self, env_id, camera)

    def close(self) -> None:
        self._step_end.close()
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self._renderer_camera = None

    def __str__(self) -> str:
        managers = (
            self.action_manager,
            self.observation_manager,
            self.reward_manager,
            self.termination_manager,
            self.event_manager,
            self.command_manager,
            self.curriculum_manager,
        )
        return "\n".join(str(m) for m in managers)
