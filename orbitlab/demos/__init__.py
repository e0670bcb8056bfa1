"""Demonstrations in robomimic's HDF5 layout: recording from a teleoperation device,
writing/reading files, exact replay and file tools (merge, split, summary).

Layout (robomimic v0.3): `data/demo_<i>/{obs/<term>, next_obs/<term>, actions, rewards,
dones, states, initial_state}` with attr `num_samples` (and `success`, `seed`,
`state_layout`); `data` attrs `total` and `env_args` (JSON); `mask/train`, `mask/valid`
(demo names as bytes). See `orbitlab.demos.hdf5`.
"""

from orbitlab.demos.hdf5 import DemoReader, DemoWriter, EpisodeBuffer
from orbitlab.demos.teleop import TeleopMapping

__all__ = ["DemoReader", "DemoWriter", "EpisodeBuffer", "TeleopMapping"]
