"""Record demonstrations of one world of a task driven by a teleoperation device.

`env_args(task, ...)` describes the env in robomimic's `env_args` form (type 2, robomimic's
EnvType.GYM_TYPE: the tasks are registered Gymnasium envs, `Orbitlab-<Task>-v0`);
`make_env(env_args)` rebuilds it for replay. `record(...)` runs the teleoperation loop.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from orbitlab.demos.hdf5 import DemoWriter, EpisodeBuffer
from orbitlab.demos.status import StatusLine
from orbitlab.demos.teleop import TeleopMapping
from orbitlab.envs.state import get_state
from orbitlab.rl.progress import progress_bar

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

GYM_ENV_TYPE = 2
"""robomimic's EnvType.GYM_TYPE (robomimic.envs.env_base.EnvType)."""


def config_to_dict(obj: Any, depth: int = 0) -> Any:
    """A JSON-friendly view of a config: dataclasses as dicts, callables as 'module:name',
    tensors and arrays as lists, anything else as its repr."""
    if depth > 12:
        return repr(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {"_type": type(obj).__name__}
        for f in dataclasses.fields(obj):
            out[f.name] = config_to_dict(getattr(obj, f.name), depth + 1)
        return out
    if isinstance(obj, dict):
        return {str(k): config_to_dict(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [config_to_dict(v, depth + 1) for v in obj]
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        return np.asarray(obj.cpu() if isinstance(obj, torch.Tensor) else obj).tolist()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismethod(obj):
        return f"{obj.__module__}:{obj.__qualname__}"
    return repr(obj)


def env_args(
    task: str, seed: int = 0, backend: str = "cpu", curriculum: bool = False, cfg: Any = None
) -> dict[str, Any]:
    """robomimic `env_args`: env_name, type, env_kwargs (what `make_env` needs) and the
    full config as far as it serializes (`orbitlab_cfg`)."""
    key = task.removeprefix("Orbitlab-").removesuffix("-v0")
    out = {
        "env_name": f"Orbitlab-{key}-v0",
        "type": GYM_ENV_TYPE,
        "env_kwargs": {
            "task": key,
            "num_envs": 1,
            "seed": int(seed),
            "backend": backend,
            "curriculum": bool(curriculum),
        },
    }
    if cfg is not None:
        out["orbitlab_cfg"] = config_to_dict(cfg)
    return out


def make_cfg(kwargs: dict[str, Any]):
    """The task config described by `env_args(...)['env_kwargs']`."""
    from orbitlab.registry import make_env_cfg

    cfg = make_env_cfg(
        kwargs["task"],
        int(kwargs.get("num_envs", 1)),
        # demonstrations at the task's full difficulty unless recorded with the curriculum
        variant="train" if kwargs.get("curriculum", False) else "play",
        backend=kwargs.get("backend", "cpu"),
        seed=int(kwargs.get("seed", 0)),
    )
    if "nthread" in kwargs:
        cfg.scene.nthread = int(kwargs["nthread"])
    return cfg


def make_env(args: dict[str, Any]):
    """A fresh env from robomimic `env_args` written by `env_args`."""
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

    return ManagerBasedRLEnv(make_cfg(args["env_kwargs"]))


def term_slices(env: ManagerBasedRLEnv, group: str = "policy") -> dict[str, slice]:
    """Column slices of each term in a concatenated observation group (term dims found by
    evaluating each term function once: terms must not change state when called)."""
    manager = env.observation_manager
    cfg = manager.groups[group]
    out, start = {}, 0
    for name, term in cfg.terms.items():
        value = manager.term_value(group, name)
        dim = int(value.reshape(env.num_envs, -1).shape[1]) * (term.history_length + 1)
        out[name] = slice(start, start + dim)
        start += dim
    total = env.observation_manager.shapes[group]
    if (start,) != tuple(total):
        raise RuntimeError(
            f"observation group '{group}': term dims sum to {start}, the group has {tuple(total)}"
        )
    return out


def split_obs(obs: torch.Tensor, slices: dict[str, slice]) -> dict[str, np.ndarray]:
    """A (1, D) group observation as {term: (d,) float32}."""
    row = obs[0].detach().cpu().numpy().astype(np.float32)
    return {name: row[s].copy() for name, s in slices.items()}


@dataclass
class RecordStats:
    """What a recording session did."""

    episodes: int = 0
    kept: int = 0
    discarded: int = 0
    successes: int = 0


class DemoProgress:
    """A progress bar over the demos kept (tqdm on a terminal, else silent), its postfix the
    current episode's steps and the episodes so far; none when not `enabled` (a status
    line shows the same counts)."""

    def __init__(self, num_demos: int, enabled: bool = True):
        self.bar = progress_bar("recording", num_demos, unit="demo") if enabled else None

    def step(self, stats: RecordStats, steps: int) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"episode {stats.episodes + 1}: {steps} steps", refresh=False)

    def kept(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def record(
    env: ManagerBasedRLEnv,
    device,
    writer: DemoWriter,
    num_demos: int,
    rate_hz: float = 0.0,
    keep: str = "success",
    max_steps: int = 0,
    seed: int = 0,
    log: Callable[[str], None] = print,
    should_stop: Callable[[], bool] | None = None,
    status: StatusLine | None = None,
    viewer=None,
) -> RecordStats:
    """Teleoperate world 0 of `env` until `num_demos` demos are written.

    Args:
        env: a 1-world env. device: an `orbitlab.devices.Device`.
        writer: where kept episodes go. keep: 'success' or 'all'.
        rate_hz: env steps per wall-clock second (0: as fast as possible).
        max_steps: end an episode after this many env steps (0: the task's own limit);
            such an episode is not a success.
        seed: `env.reset(seed=seed)` at the start.
        should_stop: optional extra stop condition, polled every loop.
        status: the operator's status line (`orbitlab.demos.status.StatusLine`: time,
            goal distance / error, device, demo counts), updated at its own bounded rate;
            it replaces the progress bar. None: the progress bar alone.
        viewer: a live viewer (`orbitlab.viz.viewer.open_viewer`) shown world 0 after
            every env step.
    Buttons: 'pause' (toggled by the device; no env step while paused), 'reset'
    (discard the episode in progress and reset), 'quit' (stop; the episode in progress
    is discarded).
    """
    if keep not in ("success", "all"):
        raise ValueError(f"keep must be 'success' or 'all', got {keep!r}")
    if env.num_envs != 1:
        raise ValueError("record needs a 1-world env (num_envs=1)")
    mapping = TeleopMapping(env, device)
    slices = term_slices(env)
    requested = {"reset": False}
    device.add_callback("reset", lambda: requested.__setitem__("reset", True))
    stats = RecordStats()
    obs, _ = env.reset(seed=seed)
    device.reset()
    episode = EpisodeBuffer()
    period = 1.0 / rate_hz if rate_hz > 0 else 0.0
    next_tick = time.perf_counter()
    has_success = "success" in env.termination_manager.last
    bar = DemoProgress(num_demos, enabled=status is None)
    if status is not None:
        print_log = log

        def log(text: str) -> None:
            status.clear()
            print_log(text)

    try:
        while stats.kept < num_demos:
            if status is not None:
                status.update(stats.kept, len(episode), paused=device.paused)
            command = device.advance()
            if device.quit_requested or (should_stop is not None and should_stop()):
                break
            if requested["reset"]:
                requested["reset"] = False
                stats.discarded += 1
                log(f"reset: episode of {len(episode)} steps discarded")
                obs, _ = env.reset()
                mapping.reset()
                episode = EpisodeBuffer()
                bar.step(stats, 0)
                continue
            if device.paused:
                time.sleep(0.02)
                next_tick = time.perf_counter()
                continue
            if period:
                delay = next_tick - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                next_tick = max(next_tick + period, time.perf_counter() - period)
            state = get_state(env, [0])
            action = mapping(command)
            obs_terms = split_obs(obs["policy"], slices)
            obs, reward, terminated, truncated, extras = env.step(action)
            if viewer is not None:
                viewer.observe(env, {}, {})
            cut = max_steps > 0 and len(episode) + 1 >= max_steps
            done = bool(terminated[0] or truncated[0]) or cut
            final = extras["final_obs"] if "final_obs" in extras else obs["policy"]
            episode.add(
                obs_terms,
                action[0].cpu().numpy(),
                float(reward[0]),
                done,
                split_obs(final, slices),
                state,
            )
            bar.step(stats, len(episode))
            if not done:
                continue
            success = bool(has_success and env.termination_manager.last["success"][0] and not cut)
            stats.episodes += 1
            stats.successes += int(success)
            if keep == "all" or success:
                name = writer.add(
                    episode,
                    {
                        "success": success,
                        "seed": seed,
                        "terminated": bool(terminated[0]) and not cut,
                    },
                )
                stats.kept += 1
                bar.kept()
                log(
                    f"{name}: {len(episode)} steps, success={success} "
                    f"({stats.kept}/{num_demos} kept, {stats.episodes} episodes)"
                )
            else:
                stats.discarded += 1
                log(f"episode of {len(episode)} steps not a success: discarded")
            if cut and not (terminated[0] or truncated[0]):
                obs, _ = env.reset()
            mapping.reset()
            episode = EpisodeBuffer()
        if status is not None:  # the final counts
            status.update(stats.kept, len(episode), paused=device.paused, force=True)
    finally:
        bar.close()
        if status is not None:
            status.close()
    return stats
