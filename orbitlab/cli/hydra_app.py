"""The one hydra front end of every `orbitlab` command.

* `CONFIG_DIR`: the configs shipped inside the package (`orbitlab/configs/`: `train.yaml`,
  `agent/*.yaml`), so an installed wheel trains from any directory.
* `register_configs()`: the `task` group, generated from `orbitlab.registry` (one option per
  task, named like 'docking_velocity'), each carrying the task's name and its command-line
  settable env fields under `env:` (so `env.episode_length_s=120` is a plain override, shown
  by `--cfg job` and type-checked like any other key); and one config per key=value command
  (play, eval, export, record, replay) built from its typed `Arg` spec.
* `normalize(argv)`: any spelling of a task (`task=Docking`, `task=Orbitlab-Docking-v0`)
  becomes its option name, and a training run without `agent=` gets the task's tuned agent.
* `run_app(...)`: hydra's main over `argv`; a hydra error or an orbitlab `UserError` is one
  line on stderr (status 2 for arguments, 1 for files), `verbose=true` shows the traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orbitlab.cli.args import REQUIRED, Arg, ArgumentError, UserError, wants_verbose

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
"""orbitlab/configs/: train.yaml and the agent group (package data)."""

QUIET_HYDRA = {
    "defaults": [
        {"override hydra/job_logging": "none"},
        {"override hydra/hydra_logging": "none"},
        "_self_",
    ],
    "hydra": {"run": {"dir": "."}, "output_subdir": None},
}
"""hydra settings of commands that write no run directory (no .hydra/, no log file)."""


def register_configs() -> None:
    """Store the `task` group of the train config in hydra's ConfigStore."""
    from hydra.core.config_store import ConfigStore

    from orbitlab.registry import env_defaults, tasks
    from orbitlab.rl.run_dirs import register_resolver

    register_resolver()  # the run directory of configs/train.yaml
    store = ConfigStore.instance()
    for spec in tasks():
        node = {"task": {"name": spec.name}, "env": env_defaults(spec.env_cfg(1))}
        store.store(group="task", name=spec.config_name, node=node, package="_global_")


def register_command(name: str, args: dict[str, Arg], env: bool = True) -> None:
    """Store a key=value command's config (its `task` is a plain key there, so the train
    config's `task` group is taken out of the ConfigStore of this process); with `env`, an
    `env:` node for env config overrides (`env.<field>=...`)."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    store.repo.pop("task", None)
    node = {**QUIET_HYDRA, **arg_defaults(args), **({"env": {}} if env else {})}
    store.store(name=name, node=node)


def arg_defaults(args: dict[str, Arg]) -> dict[str, Any]:
    """A hydra node of typed defaults from a command's `Arg` spec (REQUIRED keys: null)."""
    import yaml

    node: dict[str, Any] = {"verbose": False}
    for key, arg in args.items():
        text = arg.default
        node[key] = None if text in (REQUIRED, "") else yaml.safe_load(text)
    return node


def as_argv(cfg: dict[str, Any], args: dict[str, Arg]) -> list[str]:
    """The key=value items a command's `main(argv)` takes, from a composed config."""
    items = []
    for key in ("verbose", *args):
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, list):  # `nworld=[1,64]`, as typed (the list converters)
            text = "[" + ",".join(str(v) for v in value) + "]"
        else:
            text = str(value).lower() if isinstance(value, bool) else str(value)
        items.append(f"{key}={text}")
    return items


# ------------------------------------------------------------------ argv
def task_option(value: str) -> str:
    """The `task` group option of one spelling, or of a comma-separated sweep of them."""
    from orbitlab.registry import get_task

    if any(mark in value for mark in "[]()$"):  # hydra sweep syntax: left to hydra
        return value
    return ",".join(get_task(item).config_name for item in value.split(","))


def normalize(argv: list[str], tuned_agent: bool) -> list[str]:
    """`argv` with task spellings as option names and, when `tuned_agent` and no `agent=`
    is given, the tuned agent of the (single) task: `task=docking` trains with
    `agent=rsl_rl_ppo_docking`."""
    from orbitlab.registry import get_task

    out, task, has_agent = [], "detumble_rw", False
    for item in argv:
        key, sep, value = item.partition("=")
        if sep and key.lstrip("+~") == "task":
            value = task_option(value)
            task, item = value, f"{key}={value}"
        has_agent = has_agent or bool(sep and key.lstrip("+~") == "agent")
        out.append(item)
    if tuned_agent and not has_agent and "," not in task and task.isidentifier():
        # beside the other overrides: hydra's parser takes them as one run of positionals
        first = next((i for i, a in enumerate(out) if "=" in a and not a.startswith("-")), None)
        out.insert(len(out) if first is None else first, f"agent={get_task(task).default_agent()}")
    return out


# ------------------------------------------------------------------ running
def run_app(
    prog: str,
    body: Callable[[Any], None],
    argv: list[str],
    config_name: str,
    config_path: str | None = None,
    doc: str = "",
) -> int:
    """Run `body(cfg)` under hydra (the config `config_name`, from `config_path` or the
    ConfigStore) with `argv` as the command line; one-line errors (module docstring).
    `--help` prints `doc` above the config, as the help of `orbitlab <prog>`."""
    import hydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    register_help(prog, doc, groups=config_path is not None)
    app = hydra.main(version_base="1.3", config_path=config_path, config_name=config_name)(body)
    saved = sys.argv
    sys.argv = [prog, *with_override(argv, f"hydra/help={HELP}")]
    try:
        if wants_verbose(argv):
            app()
            return 0
        os.environ["HYDRA_FULL_ERROR"] = "1"  # hydra raises instead of printing several lines
        app()
    except UserError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 2 if isinstance(error, ArgumentError) else 1
    except (HydraException, OmegaConfBaseException) as error:
        print(f"{prog}: {one_line(error)}", file=sys.stderr)
        return 2
    except SystemExit as done:  # hydra exits after `--help`
        if done.code not in (0, None):
            raise
    finally:
        sys.argv = saved
    return 0


HELP = "orbitlab"
"""The option of hydra's `hydra/help` group that `run_app` stores and selects."""


def register_help(prog: str, doc: str, groups: bool) -> None:
    """Store hydra's `--help` page of `orbitlab <prog>`: usage, `doc`, the config groups (if
    `groups`) and the composed config; hydra's own header would name the python module."""
    from hydra.core.config_store import ConfigStore

    usage = f"usage: orbitlab {prog} [key=value ...] [--cfg job] [--help]"
    group_list = "== Config groups (group=option) ==\n\n$APP_CONFIG_GROUPS\n\n" if groups else ""
    node = {
        "app_name": f"orbitlab {prog}",
        "header": f"{usage}\n\n{escaped(doc.strip())}\n" if doc.strip() else f"{usage}\n",
        "footer": "--cfg job: the composed config; --hydra-help: hydra's own options\n",
        "template": "${hydra.help.header}\n"
        + group_list
        + "== Config (defaults; override any key with key=value) ==\n\n$CONFIG\n"
        + "${hydra.help.footer}",
    }
    ConfigStore.instance().store(group="hydra/help", name=HELP, node=node, provider="orbitlab")


def escaped(text: str) -> str:
    """`text` taken literally by OmegaConf (no `${...}` interpolation) and by the
    `string.Template` that hydra fills the help template with (`$` as `$$`)."""
    return text.replace("$", "$$").replace("${", "\\${")


def with_override(argv: list[str], override: str) -> list[str]:
    """`argv` with `override` beside the other overrides (hydra's parser takes them as one
    run of positionals): before the first `key=value` item, else at the end."""
    first = next((i for i, a in enumerate(argv) if "=" in a and not a.startswith("-")), None)
    return [*argv[:first], override, *argv[first:]] if first is not None else [*argv, override]


def one_line(error: BaseException) -> str:
    """hydra's multi-line messages (and their cause) joined into one line."""
    message = str(error).split("Config search path:")[0]  # hydra lists its search path
    parts = [line.strip() for line in message.splitlines() if line.strip()]
    cause = error.__cause__
    if cause is not None and str(cause).strip():
        parts.append(f"({str(cause).strip().splitlines()[0]})")
    return " ".join(parts) or type(error).__name__
