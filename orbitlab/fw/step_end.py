"""The end of an env step as one Warp kernel: the episode flags and the reward of each world
from its health, its episode length and the termination and reward managers' outputs.

The rules are the env's (`ManagerBasedRLEnv.step`): a world the simulation froze (health
code not 0) is terminated, neither a time-out nor a success, and gets reward 0; a world
whose episode reached the time limit is truncated unless a terminal term also ended it.
"""

from __future__ import annotations

from orbitlab.quiet import wp  # Warp, started quietly

wp.set_module_options({"enable_backward": False})


@wp.struct
class StepEnd:
    """A step's inputs (the managers' persistent buffers) and outputs, one row per world."""

    health: wp.array(dtype=wp.int32)  # 0: healthy (orbitlab.sim.health)
    episode_length: wp.array(dtype=wp.int64)  # env steps, this one included
    terms_terminated: wp.array(dtype=wp.bool)  # the termination manager's terminal flags
    terms_time_outs: wp.array(dtype=wp.bool)  # and its time-out flags
    terms_reward: wp.array(dtype=wp.float32)  # the reward manager's reward
    terminated: wp.array(dtype=wp.bool)
    truncated: wp.array(dtype=wp.bool)
    reward: wp.array(dtype=wp.float32)
    unhealthy: wp.array(dtype=wp.bool)
    done: wp.array(dtype=wp.bool)  # ends this step: reset next


@wp.kernel
def step_end_kernel(world_offset: int, chunk: int, io: StepEnd, max_episode_length: wp.int64):
    """Each world's terminated, truncated, reward, unhealthy and done flags."""
    w = world_offset + wp.tid()
    unhealthy = io.health[w] != 0
    time_out = io.episode_length[w] >= max_episode_length and not unhealthy
    io.truncated[w] = (io.terms_time_outs[w] and not unhealthy) or (
        time_out and not io.terms_terminated[w]
    )
    io.terminated[w] = io.terms_terminated[w] or unhealthy
    reward = io.terms_reward[w]
    if unhealthy:
        reward = wp.float32(0.0)
    io.reward[w] = reward
    io.unhealthy[w] = unhealthy
    io.done[w] = io.terms_terminated[w] or io.terms_time_outs[w] or time_out or unhealthy
