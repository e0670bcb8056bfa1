"""The pieces of `orbitlab.rl.export`, one idea a module.

- `common`: what every library's source hands back (`PolicySource`) and what they share
  (the run's task env, its observations, the observation normalizer module).
- `rsl_rl`, `sb3`, `rl_games`: one library's checkpoint as an exportable actor.
- `files`: writing the TorchScript and ONNX files.
- `verify`: checking the written files against the checkpoint's actor.
- `quiet`: silencing the libraries' chatter while they load or export.

Use the entry point `orbitlab.rl.export.export_policy`; it re-exports the public names.
"""
