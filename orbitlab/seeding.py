"""One seed derivation for every random stream of an environment.

An environment has one integer seed. Each random stream in it (the event draws, the
observation noise, each command term, each actuator group, each sensor's noise) is seeded
with

    stream_seed(env_seed, component, salt)

where `component` names the stream ('events', 'observation', 'commands/<term>',
'actuators/<entity/group>', 'sensors/<entity/sensor>') and `salt` is the component's own
config seed (0 by default). The value is numpy's `SeedSequence` hash of
(env_seed, CRC-32 of the component name, salt), so streams of different components or
seeds are independent, and a stream does not depend on which other components exist or in
which order they were built. `reseed(s)` of the environment re-derives every stream from
`s`; a sensor turns its stream seed into per-world keys (`orbitlab.sensors.noise`), which
are part of the environment's exact state.
"""

from __future__ import annotations

import zlib

import numpy as np

_U64 = 1 << 64


def stream_seed(seed: int, component: str, salt: int = 0) -> int:
    """A 63-bit seed (a non-negative Python int) for `component`'s stream under `seed`.

    Args:
        seed: the environment's seed (any integer; taken modulo 2^64).
        component: the stream's name, e.g. 'sensors/sat/gyro'.
        salt: the component's own config seed (any integer; taken modulo 2^64).
    """
    entropy = [int(seed) % _U64, zlib.crc32(component.encode()), int(salt) % _U64]
    state = np.random.SeedSequence(entropy).generate_state(1, np.uint64)
    return int(state[0]) >> 1
