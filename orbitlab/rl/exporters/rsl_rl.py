"""The exportable actor of an rsl-rl checkpoint of a `scripts/train.py` run.

`model_<it>.pt` beside `.hydra/config.yaml`, loaded weights-only; the run's task gives the
observation layout (the actor's observation groups, concatenated in order).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from orbitlab.rl.exporters.common import PolicySource, task_env, task_observations
from orbitlab.rl.exporters.quiet import quiet


def _split_groups(obs: torch.Tensor, groups: list[str], dims: list[int]):
    """The concatenated (batch, obs_dim) observations as rsl-rl's TensorDict of groups."""
    from tensordict import TensorDict

    parts = torch.split(obs, dims, dim=-1)
    return TensorDict(dict(zip(groups, parts, strict=True)), batch_size=[obs.shape[0]])


def rsl_rl_source(
    checkpoint: Path, run_cfg: dict[str, Any], num_real_obs: int = 16
) -> PolicySource:
    """The actor of an rsl-rl checkpoint, rebuilt as `orbitlab.rl.rsl_rl.load_policy` does.

    The export module is rsl-rl's own TorchScript-ready copy of the actor (`as_jit()`:
    observation normalizer, MLP, deterministic output). Needs the run's task for the
    observation layout; `num_real_obs` worlds are reset for real observations.
    """
    from orbitlab.rl.policies import require_loadable_agent
    from orbitlab.rl.rsl_rl import (
        OrbitlabOnPolicyRunner,
        RslRlVecEnvWrapper,
        runner_cfg_from_agent,
    )

    require_loadable_agent(run_cfg.get("agent") or {}, checkpoint)
    env = task_env(run_cfg, max(1, num_real_obs))
    if env is None:
        raise ValueError("an rsl-rl export needs the run config's task.name")
    try:
        wrapper = RslRlVecEnvWrapper(env)
        with quiet():
            runner = OrbitlabOnPolicyRunner(
                wrapper, runner_cfg_from_agent(run_cfg["agent"], env), log_dir=None, device="cpu"
            )
        runner.load(str(checkpoint), map_location="cpu")
        actor = runner.get_inference_policy(device="cpu")
        if getattr(actor, "is_recurrent", False) or not hasattr(actor, "as_jit"):
            raise ValueError(
                f"only feed-forward rsl-rl actors can be exported, got {type(actor).__name__}"
            )
        groups = list(actor.obs_groups)
        shapes = env.observation_manager.shapes
        dims = [int(np.prod(shapes[group])) for group in groups]

        def reference(batch: torch.Tensor) -> torch.Tensor:
            with torch.inference_mode():
                return actor(_split_groups(batch, groups, dims))

        real_obs = task_observations(env, groups, reference)
    finally:
        env.close()

    module = actor.as_jit().to("cpu").eval()
    return PolicySource(
        "rsl_rl", module, int(actor.obs_dim), reference, real_obs if num_real_obs > 0 else None
    )
