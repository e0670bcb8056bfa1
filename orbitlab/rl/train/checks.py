"""Checks of a resolved `scripts/train.py` config, before training starts or a run directory
exists, each failure one line naming the key, its value and what is allowed.

Two kinds of rule:
* `RANGES`: ranges of the keys orbitlab reads (num_envs >= 1, agent.learning_rate > 0, ...),
  matched on the dotted key, or on the last part of it under `agent.` (rl-games nests
  `config.learning_rate`);
* the type of every value against the same key of the defaults (the composed config without
  value overrides): an int stays an int, a float a number, a bool a bool, a list a list, so
  `agent.learning_rate=abc` fails here and not deep inside a training library. Keys that the
  defaults lack (added with `+key=...`) and keys whose default is null are not typed.

`ValidateConfig` runs the checks as a hydra callback (`hydra.callbacks` in
configs/train.yaml): `on_run_start` comes before hydra creates the run directory, and
`on_multirun_start` composes and checks every job of a sweep before the sweep directory
exists. The functions take plain dicts, so they work for any front end.
"""

from __future__ import annotations

import math
import os
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from orbitlab.cli import ArgumentError
from orbitlab.limits import (
    MAX_INIT_STD,
    MAX_ITERATIONS,
    MAX_LEARNING_RATE,
    MAX_NUM_ENVS,
    MAX_SEED,
    episode_problem,
)
from orbitlab.registry import (
    ENV_FIELDS,
    FIELD_CHOICES,
    FIELD_RANGES,
    NULLABLE_CHOICES,
    NULLABLE_COUNTS,
    ORBIT_FIELDS,
    SCENE_FIELDS,
)

Rule = Callable[[Any], str | None]
"""A range rule: None if the value is allowed, else what is allowed."""


def at_least(low: float, integer: bool = True) -> Rule:
    """A rule: a number >= low (an int when `integer`)."""
    kind = "an integer" if integer else "a number"

    def rule(value: Any) -> str | None:
        return None if _number(value, integer) and value >= low else f"expected {kind} >= {low}"

    return rule


def between(low: int, high: int) -> Rule:
    """A rule: an integer in [low, high] (high: what the machine can hold or the documented
    bound of `orbitlab.limits`)."""

    def rule(value: Any) -> str | None:
        ok = _number(value, True) and low <= value <= high
        return None if ok else f"expected an integer in [{low}, {high}]"

    return rule


def positive(value: Any) -> str | None:
    """A rule: a finite number > 0."""
    return None if _number(value, False) and value > 0 else "expected a finite number > 0"


def up_to(high: float) -> Rule:
    """A rule: a finite number in (0, high]."""

    def rule(value: Any) -> str | None:
        ok = _number(value, False) and 0 < value <= high
        return None if ok else f"expected a finite number in (0, {high:g}]"

    return rule


def fraction(value: Any) -> str | None:
    """A rule: a number in (0, 1]."""
    return None if _number(value, False) and 0 < value <= 1 else "expected a number in (0, 1]"


def one_of(*options: str) -> Rule:
    """A rule: one of `options`."""

    def rule(value: Any) -> str | None:
        return None if value in options else f"expected one of {', '.join(options)}"

    return rule


def bool_or_path(value: Any) -> str | None:
    """A rule: true, false or a non-empty path."""
    ok = isinstance(value, bool) or (isinstance(value, str) and value.strip() != "")
    return None if ok else "expected true, false or a run directory / checkpoint path"


def bool_or_null(value: Any) -> str | None:
    """A rule: true, false or null."""
    return None if value is None or isinstance(value, bool) else "expected true, false or null"


MAX_ROLLOUT_STEPS = 100_000
"""Steps per env and iteration a rollout buffer may hold (num_steps_per_env, n_steps,
horizon_length): with num_envs worlds they size the training's largest allocation."""
MAX_BATCH = 1 << 24
"""Samples of one minibatch (batch_size, minibatch_size)."""
MAX_UNITS = 1 << 16
"""Units of one hidden layer."""


def directory_path(value: Any) -> str | None:
    """A rule: a directory that exists or can be made (its nearest existing ancestor is a
    writable directory)."""
    if not isinstance(value, str) or not value.strip():
        return "expected a directory path"
    path = Path(value).expanduser().absolute()
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        return f"expected a directory path ({existing} is a file)"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"expected a directory that can be written ({existing} cannot)"
    return None


RANGES: dict[str, Rule] = {
    "runs_root": directory_path,
    "num_envs": between(1, MAX_NUM_ENVS),
    "seed": between(0, MAX_SEED),
    "eval_num_envs": between(0, MAX_NUM_ENVS),
    "select_num_envs": between(1, MAX_NUM_ENVS),
    "backend": one_of("cpu", "warp"),
    "resume": bool_or_path,
    "select_best": bool_or_null,
    "agent.max_iterations": between(1, MAX_ITERATIONS),
    "agent.save_interval": at_least(1),
    "agent.num_steps_per_env": between(1, MAX_ROLLOUT_STEPS),
    "agent.n_steps": between(1, MAX_ROLLOUT_STEPS),
    "agent.batch_size": between(1, MAX_BATCH),
    "agent.n_epochs": between(1, 10_000),
    "agent.steps_per_iteration": between(1, MAX_ROLLOUT_STEPS),
    "agent.init_std": up_to(MAX_INIT_STD),
    "agent.init_mean_scale": up_to(1.0),
    "agent.library": one_of("rsl_rl", "sb3", "rl_games"),
    # anywhere under agent. (rl-games nests them under config.)
    "learning_rate": up_to(MAX_LEARNING_RATE),
    "gamma": fraction,
    "horizon_length": between(1, MAX_ROLLOUT_STEPS),
    "minibatch_size": between(1, MAX_BATCH),
    "mini_epochs": between(1, 10_000),
    "agent.hidden_dims[]": between(1, MAX_UNITS),
    "units[]": between(1, MAX_UNITS),
}


def _env_field_rule(name: str) -> Rule:
    """A rule from `orbitlab.registry.FIELD_RANGES` (the env fields' one definition)."""
    test, allowed = FIELD_RANGES[name]

    def rule(value: Any) -> str | None:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return None if number and test(value) else f"must be {allowed}"

    return rule


RANGES.update({f"env.{name}": _env_field_rule(name) for name in ENV_FIELDS if name in FIELD_RANGES})
RANGES.update(
    {f"env.scene.{name}": _env_field_rule(name) for name in SCENE_FIELDS if name in FIELD_RANGES}
)


def _choice_rule(name: str) -> Rule:
    """A rule from `orbitlab.registry.FIELD_CHOICES`: one of the names (or null where
    `NULLABLE_CHOICES` allows it)."""
    choices, nullable = FIELD_CHOICES[name], name in NULLABLE_CHOICES
    allowed = ", ".join(choices) + (" or null" if nullable else "")

    def rule(value: Any) -> str | None:
        ok = value in choices or (nullable and value is None)
        return None if ok else f"must be one of {allowed}"

    return rule


RANGES.update(
    {f"env.scene.{name}": _choice_rule(name) for name in SCENE_FIELDS if name in FIELD_CHOICES}
)
RANGES.update({f"env.scene.orbit.{name}": _choice_rule(name) for name in ORBIT_FIELDS})


def _count_rule(name: str) -> Rule:
    """A rule from `orbitlab.registry.NULLABLE_COUNTS`: an integer in [1, bound] or null."""
    bound = NULLABLE_COUNTS[name]

    def rule(value: Any) -> str | None:
        ok = value is None or (_number(value, True) and 1 <= value <= bound)
        return (
            None if ok else f"must be an integer in [1, {bound}] or null (the scene's worst case)"
        )

    return rule


RANGES.update({f"env.scene.{name}": _count_rule(name) for name in NULLABLE_COUNTS})

UNTYPED = {"resume", "select_best", *(f"env.scene.{name}" for name in NULLABLE_COUNTS)}
"""Keys whose default's type does not say what is allowed (their range rule does)."""


def _number(value: Any, integer: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) if integer else math.isfinite(value)


def _kind(default: Any) -> tuple[str, Callable[[Any], bool]] | None:
    """(what is allowed, test) for values replacing `default`; None: anything."""
    if default is None:
        return None
    if isinstance(default, bool):
        return "true or false", lambda v: isinstance(v, bool)
    if isinstance(default, int):
        return "an integer", lambda v: _number(v, True)
    if isinstance(default, float):
        return "a finite number", lambda v: _number(v, False)
    if isinstance(default, str):
        return "text", lambda v: isinstance(v, str | int | float) and not isinstance(v, bool)
    if isinstance(default, list):
        return "a list", lambda v: isinstance(v, list)
    if isinstance(default, dict):
        return "a mapping", lambda v: isinstance(v, dict)
    return None


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, bool) else str(value).lower()
    return text if len(text) <= 80 else text[:77] + "..."


def check_value(key: str, value: Any, default: Any) -> None:
    """ArgumentError unless `value` has the type of `default` (recursively for lists and
    mappings) and fits the range rule of `key`."""
    kind = None if key in UNTYPED else _kind(default)
    if kind is not None and not kind[1](value):
        raise ArgumentError(
            f"{key}={_show(value)} is invalid: expected {kind[0]} "
            f"(like the default {_show(default)})"
        )
    pattern = re.sub(r"\[\d+\]", "[]", key)
    rule = RANGES.get(pattern) or (
        RANGES.get(pattern.rsplit(".", 1)[-1]) if pattern.startswith("agent.") else None
    )
    problem = rule(value) if rule is not None else None
    if problem is not None:
        raise ArgumentError(f"{key}={_show(value)} is invalid: {problem}")
    if isinstance(value, dict) and isinstance(default, dict):
        for name, item in value.items():
            check_value(f"{key}.{name}", item, default.get(name))
    elif isinstance(value, list) and isinstance(default, list) and default:
        for index, item in enumerate(value):
            check_value(f"{key}[{index}]", item, default[0])


def check_train_config(cfg: dict[str, Any], defaults: dict[str, Any]) -> None:
    """ArgumentError for the first value of the resolved train config `cfg` (no `hydra` key)
    that breaks its default's type or its range rule (module docstring)."""
    for key, value in cfg.items():
        if key != "hydra":
            check_value(key, value, defaults.get(key))
    env = cfg.get("env")
    if isinstance(env, dict) and isinstance(env.get("scene"), dict):
        timestep, length = env["scene"].get("timestep_s"), env.get("episode_length_s")
        if isinstance(timestep, int | float) and isinstance(length, int | float):
            problem = episode_problem(float(timestep), float(length))
            if problem is not None:
                raise ArgumentError(
                    f"env.episode_length_s={length!r} with env.scene.timestep_s={timestep!r} "
                    f"is invalid: {problem}"
                )


# ------------------------------------------------------------------ hydra
def plain_config(config: Any) -> dict[str, Any]:
    """The resolved values of an OmegaConf train config, without its `hydra` node;
    ArgumentError naming a key whose interpolation cannot be resolved."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    out: dict[str, Any] = {}
    for key in config:
        if key == "hydra":
            continue
        try:
            value = config[key]
            out[key] = (
                OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
            )
        except OmegaConfBaseException as error:
            raise ArgumentError(
                f"{key}: cannot be resolved: {str(error).splitlines()[0]}"
            ) from None
    return out


def check_composed(config: Any, config_name: str | None) -> None:
    """Check a composed hydra train config against the defaults of its task and agent."""
    from hydra import compose

    choices = config.hydra.runtime.choices
    groups = [f"{group}={choices[group]}" for group in ("task", "agent") if group in choices]
    defaults = plain_config(compose(config_name=config_name or "train", overrides=groups))
    check_train_config(plain_config(config), defaults)


def sweep_jobs(config: Any) -> list[list[str]]:
    """The override lists of every job of a basic-sweeper multirun."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    arguments = OmegaConf.to_container(config.hydra.overrides.task, resolve=False)
    overrides = OverridesParser.create().parse_overrides(arguments)
    return [job for batch in BasicSweeper.split_arguments(overrides, None) for job in batch]


class ValidateConfig(Callback):
    """hydra callback: check the train config before any run directory is created.

    hydra turns an exception of a callback into a warning, so a failed check ends the
    process here: one line on stderr and exit status 2 (with the traceback when the
    config says `verbose: true`).
    """

    def on_run_start(self, config: Any, config_name: str | None = None, **_: Any) -> None:
        self._checked(lambda: check_composed(config, config_name), config)

    def on_multirun_start(self, config: Any, config_name: str | None = None, **_: Any) -> None:
        from hydra import compose

        def check() -> None:
            if config.hydra.sweeper.get("_target_", "").endswith("BasicSweeper"):
                for job in sweep_jobs(config):
                    composed = compose(
                        config_name=config_name or "train", overrides=job, return_hydra_config=True
                    )
                    check_composed(composed, config_name)
            else:  # another sweeper: the sweep's own values are checked in each job
                check_composed(config, config_name)

        self._checked(check, config)

    @staticmethod
    def _checked(check: Callable[[], None], config: Any) -> None:
        try:
            check()
        except ArgumentError as error:
            if config.get("verbose") is True:
                traceback.print_exc()
            print(f"train: {error}", file=sys.stderr)
            raise SystemExit(2) from None
