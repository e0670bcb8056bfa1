"""Behaviour cloning from a demo file with robomimic's BC, and the cloned policy acting in
a task's env.

    policy = train_bc("demos/capture_arm.hdf5", steps=4000)
    rate = evaluate(policy, ManagerBasedRLEnv(cfg), episodes=32)

The demo file's observation keys are the env's policy observation terms (the recorder
writes them so: `orbitlab.demos.record.split_obs`), so the cloned policy reads the env's
`obs["policy"]` split by the same terms. robomimic 0.3 (low-dimensional BC only) is needed:
`pip install --no-deps robomimic==0.3.0` (see docs/demos.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


def open_dataset(path: str | Path) -> tuple[Any, list[str], dict]:
    """robomimic's `SequenceDataset` over every demo of `path` (one step per sample, no
    normalization), its low-dimensional observation keys and its shape metadata."""
    from orbitlab.demos.robomimic_check import stub_torchvision

    stub_torchvision()
    import h5py
    from robomimic.utils import file_utils, obs_utils
    from robomimic.utils.dataset import SequenceDataset

    path = str(path)
    with h5py.File(path, "r") as f:
        first = min(f["data"].keys(), key=lambda n: int(n.split("_")[-1]))
        obs_keys = list(f["data"][first]["obs"].keys())
    obs_utils.initialize_obs_utils_with_obs_specs({"obs": {"low_dim": obs_keys, "rgb": []}})
    shapes = file_utils.get_shape_metadata_from_dataset(dataset_path=path, all_obs_keys=obs_keys)
    dataset = SequenceDataset(
        hdf5_path=path,
        obs_keys=obs_keys,
        dataset_keys=("actions", "rewards", "dones"),
        load_next_obs=True,
        frame_stack=1,
        seq_length=1,
        pad_frame_stack=True,
        pad_seq_length=True,
        get_pad_mask=False,
        goal_mode=None,
        hdf5_cache_mode="all",
        hdf5_use_swmr=True,
        hdf5_normalize_obs=False,
        filter_by_attribute=None,
    )
    return dataset, obs_keys, shapes


def make_bc(
    obs_keys: list[str],
    shapes: dict,
    hidden: tuple[int, ...] = (1024, 1024),
    learning_rate: float = 1e-4,
    batch_size: int = 100,
):
    """robomimic's deterministic BC (an MLP on the low-dimensional observations, L2 loss) on
    the CPU, with its default config but for the given sizes."""
    from robomimic.algo import algo_factory
    from robomimic.config import config_factory

    config = config_factory("bc")
    with config.unlocked():
        config.observation.modalities.obs.low_dim = obs_keys
        config.observation.modalities.obs.rgb = []
        config.train.batch_size = batch_size
        config.algo.actor_layer_dims = hidden
        config.algo.optim_params.policy.learning_rate.initial = learning_rate
    return algo_factory(
        algo_name="bc",
        config=config,
        obs_key_shapes=shapes["all_shapes"],
        ac_dim=shapes["ac_dim"],
        device=torch.device("cpu"),
    )


@dataclass
class BCPolicy:
    """A robomimic BC model acting on an env's policy observations: `policy(obs) -> action`
    (N, action_dim) float32 in [-1, 1], from `obs["policy"]` (N, D) split into the model's
    observation keys."""

    model: Any
    obs_keys: list[str]
    losses: list[float]
    """The mean action loss of each block of training steps (`train_bc`'s `log_every`)."""

    @torch.no_grad()
    def __call__(self, env: ManagerBasedRLEnv, obs: torch.Tensor) -> torch.Tensor:
        from orbitlab.demos.record import term_slices

        slices = term_slices(env)
        missing = [k for k in self.obs_keys if k not in slices]
        if missing:
            raise ValueError(f"the env's policy observations lack the demos' terms {missing}")
        batch = {k: obs[:, slices[k]].to(torch.float32).cpu() for k in self.obs_keys}
        self.model.set_eval()
        action = self.model.get_action(batch)
        return action.clamp(-1.0, 1.0).to(env.device)


def train_bc(
    path: str | Path,
    steps: int = 4000,
    batch_size: int = 100,
    hidden: tuple[int, ...] = (1024, 1024),
    learning_rate: float = 1e-4,
    seed: int = 0,
    log_every: int = 500,
) -> BCPolicy:
    """Train robomimic's BC on every demo of `path` for `steps` gradient steps (batches of
    `batch_size` samples drawn with replacement, seeded)."""
    from torch.utils.data import DataLoader, RandomSampler

    torch.manual_seed(seed)
    dataset, obs_keys, shapes = open_dataset(path)
    model = make_bc(obs_keys, shapes, hidden, learning_rate, batch_size)
    sampler = RandomSampler(
        dataset,
        replacement=True,
        num_samples=steps * batch_size,
        generator=torch.Generator().manual_seed(seed),
    )
    loader = iter(DataLoader(dataset, batch_size=batch_size, sampler=sampler))
    model.set_train()
    losses, block = [], []
    for step in range(steps):
        batch = model.process_batch_for_training(next(loader))
        info = model.train_on_batch(batch, epoch=step // log_every, validate=False)
        block.append(float(info["losses"]["action_loss"]))
        if len(block) == log_every or step == steps - 1:
            losses.append(sum(block) / len(block))
            block = []
    return BCPolicy(model, obs_keys, losses)


@dataclass
class Evaluation:
    """Episodes a policy finished in an env and how they ended."""

    episodes: int
    successes: int

    @property
    def success_rate(self) -> float:
        return self.successes / max(self.episodes, 1)


def evaluate(policy: BCPolicy, env: ManagerBasedRLEnv, seed: int = 1) -> Evaluation:
    """One episode in each of the env's worlds (reset with `seed`), run to its end; an
    episode is a success where the task's `success` termination ended it."""
    obs, _ = env.reset(seed=seed)
    n = env.num_envs
    ended = torch.zeros(n, dtype=torch.bool, device=env.device)
    success = torch.zeros_like(ended)
    while not bool(ended.all()):
        obs, _, terminated, truncated, _ = env.step(policy(env, obs["policy"]))
        last = env.termination_manager.last
        if "success" in last:
            success |= last["success"] & ~ended
        ended |= terminated | truncated
    return Evaluation(episodes=n, successes=int(success.sum()))
