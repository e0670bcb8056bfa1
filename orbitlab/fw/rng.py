"""Counter-based standard normal draws as Warp functions: the numbers of
`orbitlab.sensors.noise`, bit for bit, one world per thread and no state.

A draw is a pure function of (key, stream, episode, sample, component): three rounds of a
32-bit multiply-xorshift mixer pick one of 2^18 equal-probability cells of the normal
distribution, whose centre quantile (`quantile_table`) is the draw. Unsigned 32-bit
arithmetic wraps exactly as the torch reference's masked int64 does.
"""

from __future__ import annotations

import torch

from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sensors import noise

_SHIFT = wp.constant(wp.uint32(32 - noise.TABLE_BITS))
_M1 = wp.constant(wp.uint32(0x7FEB352D))
_M2 = wp.constant(wp.uint32(0x846CA68B))
_STREAM = wp.constant(wp.uint32(0x85EBCA77))
_EPISODE = wp.constant(wp.uint32(0x27D4EB2F))


@wp.func
def mix32(x: wp.uint32) -> wp.uint32:
    """The 32-bit avalanche mixer of `noise._mix`."""
    x = x ^ (x >> wp.uint32(16))
    x = x * _M1
    x = x ^ (x >> wp.uint32(15))
    x = x * _M2
    return x ^ (x >> wp.uint32(16))


@wp.func
def episode_hash(key: wp.uint32, stream: wp.uint32, episode: wp.int64) -> wp.uint32:
    """`noise.episode_hash` of one world: constant within an episode."""
    h = mix32(key ^ (stream * _STREAM))
    return mix32(h ^ (wp.uint32(episode) * _EPISODE))


@wp.func
def normal_draw(
    h: wp.uint32,
    sample: wp.int64,
    salt: wp.uint32,
    quantiles: wp.array(dtype=wp.float32),
) -> wp.float64:
    """One component of `noise.gaussian_from`: the episode hash `h`, the world's sample
    counter and the component's salt (`salt_array`) pick the draw."""
    cell = mix32(mix32(h ^ wp.uint32(sample)) ^ salt) >> _SHIFT
    return wp.float64(quantiles[wp.int32(cell)])


def quantile_table(device: str) -> wp.array:
    """The reference's quantile table (2^18 float32) as a Warp array on `device`."""
    return wp.from_torch(noise.quantiles(torch.device(device)))


def salt_array(count: int, device: str) -> wp.array:
    """The reference's per-component salts 1..count as a uint32 Warp array on `device`."""
    salts = noise.component_salts(count, torch.device("cpu"))[0]
    return wp.array(salts.numpy().astype("uint32"), dtype=wp.uint32, device=device)
