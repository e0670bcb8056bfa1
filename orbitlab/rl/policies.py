"""Load a trained policy from a `scripts/train.py` run, whatever library trained it.

A run directory holds the resolved hydra config (`.hydra/config.yaml`) and the
checkpoints; `agent.library` names the library (rsl_rl, sb3, rl_games).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.rl.checkpoints import CheckpointError, require_trust

Policy = Callable[[], torch.Tensor]
"""Returns the next (num_envs, action_dim) actions for the env's current observations."""


def run_config(checkpoint: str | Path) -> dict[str, Any]:
    """The resolved train config of the run that wrote `checkpoint`: the
    `.hydra/config.yaml` of its directory or of the nearest parent (rl-games keeps
    checkpoints in `<run>/nn/`). FileNotFoundError without one; CheckpointError when it is
    not readable."""
    import yaml
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    checkpoint = Path(checkpoint)
    if not checkpoint.exists():
        raise FileNotFoundError(f"checkpoint '{checkpoint}' does not exist")
    folders = checkpoint.resolve().parents
    found = [d / ".hydra" / "config.yaml" for d in folders[:3] if (d / ".hydra").is_dir()]
    if not found:
        raise FileNotFoundError(
            f"no saved run config (.hydra/config.yaml) beside the "
            f"checkpoint {checkpoint} or above it"
        )
    saved = found[0]
    try:
        config = OmegaConf.to_container(OmegaConf.load(saved), resolve=False)
    except (OSError, ValueError, yaml.YAMLError, OmegaConfBaseException) as error:
        raise CheckpointError(
            f"run config {saved} is not readable: {(str(error).strip().splitlines() or [''])[0]}"
        ) from None
    agent, task = (config.get("agent"), config.get("task")) if isinstance(config, dict) else (0, 0)
    if not isinstance(agent, dict) or not isinstance(task, dict) or "name" not in task:
        raise CheckpointError(
            f"run config {saved} is no scripts/train.py config (it needs agent: and task.name)"
        )
    return config


AGENT_KEYS = {
    "rsl_rl": ("num_steps_per_env", "hidden_dims", "learning_rate", "init_std", "save_interval"),
    "sb3": ("algorithm",),
    "rl_games": ("algo", "model", "network", "config"),
}
"""The agent keys each library's policy loader reads."""


def agent_defaults(library: str) -> dict[str, Any]:
    """Every key of the packaged agent configs of `library` (orbitlab/configs/agent/*.yaml)
    with its first value: the shape a saved agent section of that library must have."""
    import yaml

    merged: dict[str, Any] = {}
    for path in sorted((Path(__file__).resolve().parents[1] / "configs" / "agent").glob("*.yaml")):
        config = yaml.safe_load(path.read_text())
        if isinstance(config, dict) and config.get("library") == library:
            merged = {**config, **merged}
    return merged


def require_loadable_agent(agent: dict[str, Any], checkpoint: str | Path) -> None:
    """CheckpointError, one line naming the key and what is allowed, unless the agent
    section of `checkpoint`'s run config has the shape its library's loader reads."""
    problem = agent_problem(agent)
    if problem is not None:
        raise CheckpointError(f"the run config of {checkpoint}: {problem}")


def agent_problem(agent: dict[str, Any]) -> str | None:
    """What is wrong with a saved agent section, in one line naming the key and what is
    allowed (the types and ranges of `orbitlab train`'s checks), or None if it can load."""
    from orbitlab.cli import ArgumentError
    from orbitlab.rl.train.checks import check_value

    library = agent.get("library")
    if not isinstance(library, str) or library not in AGENT_KEYS:
        return f"agent.library={library!r} is invalid: expected one of {', '.join(AGENT_KEYS)}"
    missing = [key for key in AGENT_KEYS[library] if key not in agent]
    if missing:
        return (
            f"agent.{missing[0]} is missing: an agent of library {library} needs "
            f"{', '.join(AGENT_KEYS[library])}"
        )
    defaults = agent_defaults(library)
    try:
        for key, value in agent.items():
            check_value(f"agent.{key}", value, defaults.get(key))
    except ArgumentError as error:
        return str(error)
    return None


def load_policy(
    env: ManagerBasedRLEnv,
    checkpoint: str | Path,
    run_cfg: dict[str, Any] | None = None,
    trust_checkpoint: bool = False,
) -> Policy:
    """A deterministic policy (the actor's mean action) reading `env`'s observations.

    rsl-rl checkpoints load weights-only (a crafted pickle is refused, CheckpointError);
    sb3 and rl-games checkpoints are pickles, which can run code: they load only with
    `trust_checkpoint` (else UntrustedCheckpointError). An agent section of the wrong shape
    (a key missing, a list for a mapping, text for a number) is a one-line CheckpointError
    naming the key and what is allowed.
    """
    run_cfg = run_cfg if run_cfg is not None else run_config(checkpoint)
    agent = run_cfg["agent"]
    library = agent.get("library")
    if not isinstance(library, str) or library not in AGENT_KEYS:
        require_loadable_agent(agent, checkpoint)  # names the key and the libraries
    if library == "rsl_rl":
        from orbitlab.rl.rsl_rl import load_policy as load

        require_loadable_agent(agent, checkpoint)
        return load(env, str(checkpoint), agent)
    if library == "sb3":
        from orbitlab.rl.train.sb3 import load_policy as load

        require_trust(checkpoint, trust_checkpoint, "the Stable-Baselines3 checkpoint")
        require_loadable_agent(agent, checkpoint)
        return load(env, Path(checkpoint), agent)
    if library == "rl_games":
        from orbitlab.rl.train.rl_games import load_policy as load

        require_trust(checkpoint, trust_checkpoint, "the rl-games checkpoint")
        require_loadable_agent(agent, checkpoint)
        return load(env, Path(checkpoint), agent)
    raise ValueError(
        f"cannot load a policy trained with library '{library}' (known: rsl_rl, sb3, rl_games)"
    )
