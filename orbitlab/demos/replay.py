"""Replay recorded demos and check that they reproduce bit-exactly.

mode 'actions': restore the demo's initial state, step its actions and compare every
recorded state (flattened, bitwise), observation term, next observation and reward.
mode 'states': for each step, set the recorded state, compare the observation it holds,
step the recorded action and compare the next observation, reward and next state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from orbitlab.demos.hdf5 import DemoReader
from orbitlab.demos.record import split_obs, term_slices
from orbitlab.envs.state import get_state, set_state

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


@dataclass
class ReplayResult:
    """Largest absolute differences found replaying one demo (0.0: bit-exact)."""

    demo: str
    steps: int = 0
    state_diff: float = 0.0
    obs_diff: float = 0.0
    reward_diff: float = 0.0
    mismatched: list[str] = field(default_factory=list)
    """First few '<step>:<what>' that differed bitwise."""

    @property
    def exact(self) -> bool:
        return not self.mismatched


def _diff(a: np.ndarray, b: np.ndarray) -> tuple[bool, float]:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False, float("inf")
    same = np.array_equal(
        np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8)
    )
    return same, 0.0 if same else float(
        np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64)))
    )


def _flat_state(env: ManagerBasedRLEnv, layout) -> np.ndarray:
    state = get_state(env, [0])
    known = {e.key for e in layout.entries}
    return layout.flatten({k: v for k, v in state.items() if k in known})[0]


def replay_demo(
    env: ManagerBasedRLEnv,
    reader: DemoReader,
    demo: str,
    mode: str = "actions",
    on_step: Callable[[int], None] | None = None,
) -> ReplayResult:
    """Replay `demo` of `reader` in the 1-world `env`; see the module docstring."""
    if mode not in ("actions", "states"):
        raise ValueError(f"mode must be 'actions' or 'states', got {mode!r}")
    layout = reader.layout(demo)
    states = reader.states(demo)
    actions = reader.array(demo, "actions")
    rewards = reader.array(demo, "rewards")
    obs, next_obs = reader.obs(demo, "obs"), reader.obs(demo, "next_obs")
    slices = term_slices(env)
    result = ReplayResult(demo)

    def check(what: str, t: int, a, b, attr: str) -> None:
        same, d = _diff(a, b)
        setattr(result, attr, max(getattr(result, attr), d))
        if not same and len(result.mismatched) < 10:
            result.mismatched.append(f"{t}:{what}")

    import torch

    set_state(env, reader.initial_state(demo), [0])
    for t in range(len(actions)):
        if mode == "states":
            set_state(env, layout.unflatten(states[t]), [0])
        check("state", t, _flat_state(env, layout), states[t], "state_diff")
        current = split_obs(env.obs_buf["policy"], slices)
        for term, values in obs.items():
            check(f"obs/{term}", t, current[term], values[t], "obs_diff")
        out, reward, _, _, extras = env.step(torch.as_tensor(actions[t][None]))
        final = extras["final_obs"] if "final_obs" in extras else out["policy"]
        after = split_obs(final, slices)
        for term, values in next_obs.items():
            check(f"next_obs/{term}", t, after[term], values[t], "obs_diff")
        check("reward", t, np.float64(reward[0]), rewards[t], "reward_diff")
        if mode == "states" and t + 1 < len(actions):
            check("next_state", t, _flat_state(env, layout), states[t + 1], "state_diff")
        result.steps += 1
        if on_step is not None:
            on_step(t)
    return result
