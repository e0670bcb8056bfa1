"""The task registry: one entry per task, looked up by a forgiving spelling of its name.

A task package registers each task once, with everything the command line needs:

    register_task(TaskSpec(
        name="Docking",
        env_cfg=env_cfg,                  # num_envs -> ManagerBasedRLEnvCfg (RL: actions from a policy)
        baseline_cfg=baseline_cfg,        # the same task driven by its non-learned agent graph
        agents={"rsl_rl": "rsl_rl_ppo_docking"},   # tuned agent config per library (configs/agent/)
        success="soft capture: probe latched at < 0.1 m/s closing speed",
    ))

`make_env("docking", num_envs=64, variant="play")` then builds it; train, play, export,
record, replay and the benchmarks all build their envs here. Names are matched without
regard to case, `-`/`_` or the Gymnasium id's `Orbitlab-...-v0` wrapping, so `Docking`,
`docking`, `DOCKING` and `Orbitlab-Docking-v0` are one task; an unknown name is an
`ArgumentError` with a "did you mean" suggestion.

The registry sits beside `orbitlab.rl` in the import order: it knows envs, not tasks. The
first lookup imports the task packages of `TASK_PACKAGES` (each registers its tasks on
import), as Gymnasium imports an env's module on `make`.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from orbitlab import limits
from orbitlab.cli.args import ArgumentError

if TYPE_CHECKING:  # the registry itself loads neither torch nor MuJoCo
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv, ManagerBasedRLEnvCfg

EnvCfgFactory = Callable[..., "ManagerBasedRLEnvCfg"]
"""num_envs -> a fresh env config."""


@dataclass(frozen=True)
class LazyFactory:
    """An env config factory named 'module:function', imported on its first call, so a task
    package registers its tasks without loading their configs (torch, MuJoCo): a process
    that imports only a task's numpy parts (the bridge study's controllers) stays light."""

    path: str

    def __call__(self, *args: Any, **kwargs: Any) -> ManagerBasedRLEnvCfg:
        module, _, name = self.path.partition(":")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)


Variant = Literal["train", "play", "baseline"]
"""train: the RL config with its curriculum; play: the RL config at full difficulty (no
curriculum), for evaluation and play; baseline: the non-learned agent, full difficulty."""

TASK_PACKAGES: list[str] = ["orbitlab_tasks"]
"""Packages imported on the first lookup; importing one registers its tasks."""

ENV_FIELDS = ("decimation", "episode_length_s")
"""Env config fields settable from the command line (`env.<field>=...`)."""
SCENE_FIELDS = (
    "timestep_s",
    "integrator",
    "nthread",
    "torch_threads",
    "contacts_per_world",
    "constraint_rows_per_world",
)
"""Scene fields settable from the command line (`env.scene.<field>=...`)."""
ORBIT_FIELDS = ("coupling",)
"""Orbit-layer fields settable from the command line (`env.scene.orbit.<field>=...`)."""
FIELD_RANGES: dict[str, tuple[Callable[[float], bool], str]] = {
    "decimation": (
        lambda v: 1 <= v <= limits.MAX_DECIMATION,
        f"in [1, {limits.MAX_DECIMATION}] (physics steps per env step)",
    ),
    "episode_length_s": (
        lambda v: 0.0 < v <= limits.MAX_EPISODE_LENGTH_S,
        f"in (0, {limits.MAX_EPISODE_LENGTH_S:g}] s",
    ),
    "timestep_s": (
        lambda v: limits.MIN_TIMESTEP_S <= v <= limits.MAX_TIMESTEP_S,
        f"in [{limits.MIN_TIMESTEP_S:g}, {limits.MAX_TIMESTEP_S:g}] s",
    ),
    "nthread": (
        lambda v: 0 <= v <= limits.max_threads(),
        f"in [0, {limits.max_threads()}] (0: all cores; at most 4 per CPU of this machine)",
    ),
    "torch_threads": (
        lambda v: 1 <= v <= limits.max_threads(),
        f"in [1, {limits.max_threads()}] (at most 4 per CPU of this machine)",
    ),
}
"""What each settable numeric env/scene field allows beyond its type."""
NULLABLE_COUNTS: dict[str, int] = {
    "contacts_per_world": limits.MAX_CONTACTS_PER_WORLD,
    "constraint_rows_per_world": limits.MAX_CONSTRAINT_ROWS_PER_WORLD,
}
"""Integer fields that also take null (the scene's worst case), with their upper bounds."""
INTEGRATOR_NAMES = ("RK4", "Euler", "implicit", "implicitfast")
"""MuJoCo integrators by their MJCF names (`orbitlab.sim.spec.INTEGRATORS`, without MuJoCo)."""
COUPLINGS = ("stage", "held")
"""Orbit-layer couplings (`orbitlab.sim.orbit_layer.OrbitLayerCfg.coupling`)."""
FIELD_CHOICES: dict[str, tuple[str, ...]] = {"integrator": INTEGRATOR_NAMES, "coupling": COUPLINGS}
"""The values each settable text env/scene field allows."""
NULLABLE_CHOICES = frozenset({"integrator"})
"""Text fields that also take null (the scene's default)."""


@dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """Everything the command line knows about one task."""

    name: str
    """The registered name, e.g. 'Docking' (Gymnasium id: 'Orbitlab-Docking-v0')."""
    env_cfg: EnvCfgFactory
    """The RL config: actions from a policy, with the task's training curriculum."""
    baseline_cfg: EnvCfgFactory | None = None
    """The task driven by its non-learned agent graph (None: no baseline)."""
    play_env_cfg: EnvCfgFactory | None = None
    """The evaluation / play variant; None: `env_cfg` without its curriculum (full difficulty)."""
    agents: Mapping[str, str] = field(default_factory=dict)
    """Library ('rsl_rl', 'sb3', 'rl_games') -> name of its tuned agent config
    (`configs/agent/<name>.yaml`); the first is the task's default agent."""
    success: str = ""
    """The success criterion, one line with units."""
    summary: str = ""
    """What the task is, one line."""
    status: Callable[..., Any] | None = None
    """env -> `orbitlab.demos.status.TaskReading`: what the recorder's status line shows
    about the goal (distance and closing speed, or an attitude / rate error); a
    `LazyFactory` keeps the registration light. None: time, device and counts only."""
    pilot: Callable[..., Any] | None = None
    """env -> a scripted operator for the recorder's `device=pilot`
    (`orbitlab.devices.pilot`): demos recorded without a person. None: no pilot."""

    @property
    def gym_id(self) -> str:
        return f"Orbitlab-{self.name}-v0"

    @property
    def config_name(self) -> str:
        """The hydra option of the `task` group: 'docking_velocity'."""
        return self.name.lower().replace("-", "_")

    def default_agent(self, fallback: str = "rsl_rl_ppo") -> str:
        """The tuned agent config this task trains with unless told otherwise."""
        return next(iter(self.agents.values()), fallback)


_TASKS: dict[str, TaskSpec] = {}


def key(name: str) -> str:
    """The lookup key of a spelling: lower case, '_' as '-', without 'orbitlab-' / '-v0'."""
    text = str(name).strip().lower().replace("_", "-")
    text = text.split(":", 1)[-1]  # 'orbitlab_tasks:Orbitlab-Docking-v0'
    return text.removeprefix("orbitlab-").removesuffix("-v0")


_ORIGINS: dict[str, tuple[str, str]] = {}
"""Lookup key -> (module, description) of where its task was registered."""
_CONTESTED: dict[str, str] = {}
"""Lookup key -> the one-line error of a second registration from another source: the
name is refused until one of the two is renamed."""
_BROKEN: dict[str, str] = {}
"""Task source -> the one-line error it failed to load with."""
_loading: str | None = None
"""The task source `_load` is importing (a module name or a .py path)."""


class DuplicateTaskError(ValueError):
    """A task name registered by two different sources."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.key = key(name)


def _origin() -> tuple[str, str]:
    """(module, description) of the current `register_task` call's caller: the module's
    name, and for the description its file too when `_load` imports a .py path."""
    module = str(sys._getframe(2).f_globals.get("__name__", "?"))
    if _loading is not None and _loading.endswith(".py"):
        return module, f"{module} ({_loading})"
    return module, module


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add `spec`. The same source registering a name again replaces its entry (a module
    reload); another source registering a name already taken raises DuplicateTaskError
    naming both, and the name is refused by `get_task` from then on."""
    if not isinstance(spec.name, str) or not spec.name or key(spec.name) != spec.name.lower():
        raise ValueError(f"task name {spec.name!r}: use letters, digits and '-' (e.g. 'Docking')")
    name, (module, origin) = key(spec.name), _origin()
    first = _ORIGINS.get(name)
    if name in _TASKS and first is not None and first[0] != module:
        message = (
            f"task '{spec.name}' is registered twice: by {first[1]} and by {origin}; rename "
            "one of them"
        )
        _CONTESTED[name] = message
        raise DuplicateTaskError(spec.name, message)
    _TASKS[name] = spec
    _ORIGINS[name] = (module, origin)
    return spec


TASK_MODULES_VARIABLE = "ORBITLAB_TASK_MODULES"
"""Environment variable naming more task modules to import on the first lookup: module
names or paths of .py files, separated by commas (e.g. `examples/station_keeping.py`), so
that `orbitlab train task=<their task>` finds a task defined outside a package."""
ENTRY_POINT_GROUP = "orbitlab.tasks"
"""Installed packages declaring an entry point in this group are imported on the first
lookup (`[project.entry-points."orbitlab.tasks"] my_tasks = "my_tasks"`)."""
_loaded: set[str] = set()


def _import_task_module(name: str) -> None:
    """Import a module by name, or a .py file by path (as a module named after the file)."""
    if not name.endswith(".py"):
        importlib.import_module(name)
        return
    path = Path(name).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no file '{name}'")
    if not path.stem.isidentifier():
        raise ValueError(f"'{path.name}' is no module name (letters, digits, '_')")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"'{name}' cannot be imported")
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(path.stem)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if previous is None:
            sys.modules.pop(path.stem, None)
        else:
            sys.modules[path.stem] = previous
        raise


def _load() -> None:
    """Import every task source once: TASK_PACKAGES, installed entry points, then the
    modules named by ORBITLAB_TASK_MODULES."""
    global _loading
    if _loading is not None:  # a task module looking tasks up while it loads: no recursion
        return
    sources = [(item, "task package") for item in TASK_PACKAGES]
    try:
        points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
        sources += [(ep.module, f"entry point '{ep.name}'") for ep in points]
    except Exception as error:  # noqa: BLE001 - broken package metadata: report, go on
        _report_broken(f"entry points '{ENTRY_POINT_GROUP}'", "installed packages", error)
    extra = os.environ.get(TASK_MODULES_VARIABLE, "")
    sources += [(item.strip(), TASK_MODULES_VARIABLE) for item in extra.split(",") if item.strip()]
    for source, how in sources:
        if source in _loaded:
            continue
        _loaded.add(source)
        before = set(_TASKS)
        _loading = source
        try:
            _import_task_module(source)
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # noqa: BLE001 - one broken module spoils no other
            for name in set(_TASKS) - before:  # a half-loaded module registers nothing
                del _TASKS[name]
                _ORIGINS.pop(name, None)
            _report_broken(source, how, error)
        finally:
            _loading = None


def _report_broken(source: str, how: str, error: BaseException) -> None:
    """Remember and print (stderr, once) one line naming a task source that failed to load
    and its error; the other sources' tasks stay usable."""
    if isinstance(error, DuplicateTaskError):
        reason = str(error)
    else:
        text = str(error).strip().splitlines()
        reason = f"{type(error).__name__}: {text[0] if text else repr(error)}"
        if isinstance(error, SystemExit):
            reason = f"it called sys.exit({error.code!r})"
    message = f"task module '{source}' ({how}) failed to load: {reason}; its tasks are unavailable"
    _BROKEN[source] = message
    if not isinstance(error, DuplicateTaskError):  # that one is the error of its task name
        print(f"orbitlab: {message}", file=sys.stderr, flush=True)


def broken_sources() -> dict[str, str]:
    """Task source -> the one-line error it failed to load with (empty: all loaded)."""
    _load()
    return dict(_BROKEN)


def tasks() -> list[TaskSpec]:
    """Every registered task, in registration order."""
    _load()
    return list(_TASKS.values())


def get_task(name: str) -> TaskSpec:
    """The task `name` designates (any spelling of the module docstring); ArgumentError with
    the closest names otherwise."""
    _load()
    if key(name) in _CONTESTED:
        raise ArgumentError(_CONTESTED[key(name)])
    spec = _TASKS.get(key(name))
    if spec is None:
        known = [s.name for s in _TASKS.values()]
        close = difflib.get_close_matches(key(name), list(_TASKS), n=1, cutoff=0.5)
        hint = f"did you mean '{_TASKS[close[0]].name}'? " if close else ""
        broken = f"; {'; '.join(_BROKEN.values())}" if _BROKEN else ""
        raise ArgumentError(f"unknown task '{name}': {hint}(known: {', '.join(known)}{broken})")
    return spec


# ------------------------------------------------------------------ building envs
def env_defaults(cfg: ManagerBasedRLEnvCfg) -> dict[str, Any]:
    """The command-line settable values of `cfg` (ENV_FIELDS, SCENE_FIELDS, reward weights)
    as a nested dict, the shape `env.<...>=value` overrides take."""
    values: dict[str, Any] = {name: getattr(cfg, name) for name in ENV_FIELDS}
    values["scene"] = {name: getattr(cfg.scene, name) for name in SCENE_FIELDS}
    values["scene"]["orbit"] = {name: getattr(cfg.scene.orbit, name) for name in ORBIT_FIELDS}
    values["rewards"] = {name: {"weight": term.weight} for name, term in cfg.rewards.items()}
    return values


def apply_env_overrides(cfg: ManagerBasedRLEnvCfg, overrides: Mapping[str, Any]) -> None:
    """Set `overrides` (the shape of `env_defaults`) on `cfg`; ArgumentError naming an
    unknown key (`env.<key>`)."""
    for name, value in overrides.items():
        if name == "scene" and isinstance(value, Mapping):
            for scene_key, scene_value in value.items():
                if scene_key == "orbit" and isinstance(scene_value, Mapping):
                    for orbit_key, orbit_value in scene_value.items():
                        path = f"env.scene.orbit.{orbit_key}"
                        _set(cfg.scene.orbit, path, orbit_key, orbit_value, ORBIT_FIELDS)
                else:
                    path = f"env.scene.{scene_key}"
                    _set(cfg.scene, path, scene_key, scene_value, SCENE_FIELDS)
        elif name == "rewards" and isinstance(value, Mapping):
            for term, params in value.items():
                if term not in cfg.rewards:
                    raise ArgumentError(
                        f"env.rewards.{term}: no such reward term (known: {', '.join(cfg.rewards)})"
                    )
                for param, item in dict(params).items():
                    _set(cfg.rewards[term], f"env.rewards.{term}.{param}", param, item, ("weight",))
        else:
            _set(cfg, f"env.{name}", name, value, ENV_FIELDS)


def _shown(value: Any) -> str:
    """A value as the command line spells it (null for None)."""
    return "null" if value is None else repr(value)


def _set(target: Any, path: str, name: str, value: Any, allowed: tuple[str, ...]) -> None:
    """Set one field, its value of the type of the field's current value (an int where an
    int is, a finite number where a float is); ArgumentError naming path, value and type."""
    if name not in allowed:
        raise ArgumentError(
            f"{path}={_shown(value)}: not settable (settable: {', '.join(allowed)})"
        )
    if name in FIELD_CHOICES:
        nullable = name in NULLABLE_CHOICES
        if not (value in FIELD_CHOICES[name] or (nullable and value is None)):
            allowed = ", ".join(FIELD_CHOICES[name]) + (" or null" if nullable else "")
            raise ArgumentError(f"{path}={_shown(value)} is invalid: must be one of {allowed}")
        setattr(target, name, value)
        return
    if name in NULLABLE_COUNTS:
        whole = isinstance(value, int | float) and not isinstance(value, bool)
        if value is not None and not (
            whole and float(value).is_integer() and 1 <= value <= NULLABLE_COUNTS[name]
        ):
            raise ArgumentError(
                f"{path}={_shown(value)} is invalid: must be an integer in "
                f"[1, {NULLABLE_COUNTS[name]}] or null (the scene's worst case)"
            )
        setattr(target, name, None if value is None else int(value))
        return
    current = getattr(target, name)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(current, float) and not (number and math.isfinite(value)):
        raise ArgumentError(f"{path}={value!r} is invalid: expected a finite number")
    if isinstance(current, int) and not isinstance(current, bool):
        if not (number and float(value).is_integer()):
            raise ArgumentError(f"{path}={value!r} is invalid: expected an integer")
        value = int(value)
    allowed_range = FIELD_RANGES.get(name)
    if allowed_range is not None and not allowed_range[0](value):
        raise ArgumentError(f"{path}={value!r} is invalid: must be {allowed_range[1]}")
    setattr(target, name, float(value) if isinstance(current, float) else value)


def make_env_cfg(
    task: str,
    num_envs: int,
    *,
    variant: Variant = "train",
    seed: int | None = None,
    backend: str | None = None,
    device: str | None = None,
    env: Mapping[str, Any] | None = None,
) -> ManagerBasedRLEnvCfg:
    """The config of `task` (any spelling) with `num_envs` worlds in the given `variant`,
    seed, backend ('cpu' | 'warp'), device and `env` overrides (`apply_env_overrides`)."""
    spec = get_task(task)
    num_envs = check_num_envs(num_envs)
    if variant == "baseline":
        if spec.baseline_cfg is None:
            raise ArgumentError(f"task '{spec.name}' has no baseline")
        cfg = spec.baseline_cfg(int(num_envs))
    elif variant == "play" and spec.play_env_cfg is not None:
        cfg = spec.play_env_cfg(int(num_envs))
    else:
        cfg = spec.env_cfg(int(num_envs))
    if variant != "train":
        cfg.curriculum = {}  # scored at the task's full difficulty
    cfg.scene.num_envs = check_num_envs(num_envs)
    if backend is not None:
        cfg.scene.backend = backend
    if device is not None:
        cfg.scene.device = device
    if seed is not None:
        cfg.seed = int(seed)
    apply_env_overrides(cfg, env or {})
    check_env_cfg(cfg)
    return cfg


def check_num_envs(num_envs: Any, key: str = "num_envs") -> int:
    """`num_envs` as an int in [1, `limits.MAX_NUM_ENVS`]; ArgumentError naming `key`."""
    number = isinstance(num_envs, int | float) and not isinstance(num_envs, bool)
    if not (number and float(num_envs).is_integer() and 1 <= num_envs <= limits.MAX_NUM_ENVS):
        raise ArgumentError(
            f"{key}={num_envs!r} is invalid: expected an integer in [1, {limits.MAX_NUM_ENVS}]"
        )
    return int(num_envs)


def check_env_cfg(cfg: ManagerBasedRLEnvCfg) -> None:
    """ArgumentError for a config whose values are each allowed but not together: more
    worlds than `limits.MAX_NUM_ENVS`, an episode of more than
    `limits.MAX_EPISODE_PHYSICS_STEPS` physics steps."""
    check_num_envs(cfg.scene.num_envs)
    problem = limits.episode_problem(float(cfg.scene.timestep_s), float(cfg.episode_length_s))
    if problem is not None:
        raise ArgumentError(
            f"env.episode_length_s={cfg.episode_length_s!r} with "
            f"env.scene.timestep_s={cfg.scene.timestep_s!r} is invalid: {problem}"
        )


def cost_warning(cfg: ManagerBasedRLEnvCfg) -> str | None:
    """The estimated-cost warning of `cfg` (`limits.step_cost_warning`), None if it is cheap."""
    return limits.step_cost_warning(
        int(cfg.scene.num_envs),
        int(cfg.decimation),
        float(cfg.scene.timestep_s),
        float(cfg.episode_length_s),
    )


def make_env(task: str, num_envs: int, **options: Any) -> ManagerBasedRLEnv:
    """A fresh batched env of `task`; `options` as for `make_env_cfg`. A long step or
    episode is announced on stderr with its estimated cost first; a task that cannot run
    with the given `env` overrides (a sensor period that is no whole number of the new
    timestep, ...) is an ArgumentError naming the overrides and the reason."""
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

    cfg = make_env_cfg(task, num_envs, **options)
    settable = {
        *ENV_FIELDS,
        *(f"scene.{name}" for name in SCENE_FIELDS),
        *(f"scene.orbit.{name}" for name in ORBIT_FIELDS),
    }
    overrides = {k: v for k, v in _flat(options.get("env") or {}).items() if k in settable}
    try:
        env = ManagerBasedRLEnv(cfg)
    except (ValueError, OverflowError) as error:
        if isinstance(error, ArgumentError) or not overrides:
            raise
        given = ", ".join(f"env.{k}={v!r}" for k, v in overrides.items())
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ArgumentError(
            f"{given}: task '{get_task(task).name}' cannot run with this: {reason}"
        ) from error
    warning = cost_warning(cfg)
    if warning is not None:
        print(f"orbitlab: {warning}", file=sys.stderr, flush=True)
    return env


def _flat(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{'scene.timestep_s': 0.1, ...} of nested overrides."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = value
    return out


def entry_point(factory: EnvCfgFactory) -> str:
    """'module:function' of a factory, for Gymnasium's registration (text entry points)."""
    if isinstance(factory, LazyFactory):
        return factory.path
    return f"{factory.__module__}:{factory.__qualname__}"
