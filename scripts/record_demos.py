"""Record teleoperated demonstrations of one world of a task in robomimic's HDF5 layout.

    python scripts/record_demos.py task=Docking device=keyboard out=demos/docking.hdf5
    python scripts/record_demos.py task=Detumble-RW device=gamepad num_demos=20 rate_hz=10
    python scripts/record_demos.py task=Docking device=scripted script=cmds.npy keep=all

Arguments (key=value): task, device (keyboard | keyboard-window | gamepad | spacemouse |
scripted), out (HDF5 path), num_demos (demos to keep), rate_hz (env steps per second of
wall time; 0: as fast as possible), keep (success | all), seed, script (a .npy (T, 6) command
file for the scripted device, looped), max_steps (end an episode after this many env
steps; 0: the task's limit), backend.

The device's 6-DOF command [fx fy fz tx ty tz] in [-1, 1] maps to the task's actions by
`orbitlab.demos.teleop.TeleopMapping`: a thruster-wrench action takes all six (Docking);
wheel / magnetorquer actions take the rotation part projected on their axes (Detumble-RW,
Detumble-MTQ: three body-axis elements take tx ty tz). Buttons: pause (no env steps while
paused), reset (discard the episode in progress), quit. Each kept episode is written and
flushed when it ends, so the file stays valid if the session is killed.
"""

from __future__ import annotations

import sys

import numpy as np

from orbitlab.cli import parse_key_values

DEFAULTS = {"task": "Docking", "device": "keyboard", "out": "demos.hdf5", "num_demos": "10",
            "rate_hz": "10", "keep": "success", "seed": "0", "script": "", "max_steps": "0",
            "backend": "cpu"}


def parse(argv: list[str]) -> dict[str, str]:
    args = parse_key_values(argv, DEFAULTS)
    return args


def main(argv: list[str]) -> None:
    args = parse(argv)
    from orbitlab.demos.hdf5 import DemoWriter
    from orbitlab.demos.record import env_args, make_cfg, make_env, record
    from orbitlab.demos.teleop import TeleopMapping
    from orbitlab.devices import ScriptedCfg, make_device

    if args["device"] == "scripted":
        if not args["script"]:
            raise SystemExit("device=scripted needs script=<file.npy> with (T, 6) commands")
        device = make_device("scripted", ScriptedCfg(commands=np.load(args["script"]),
                                                      end="loop"))
    else:
        device = make_device(args["device"])
    seed = int(args["seed"])
    described = env_args(args["task"], seed=seed, backend=args["backend"])
    env = make_env(described)
    described["orbitlab_cfg"] = env_args(args["task"], cfg=make_cfg(
        described["env_kwargs"]))["orbitlab_cfg"]
    print(f"{described['env_name']}: action mapping\n{TeleopMapping(env).describe()}")
    print(device.help_text() if hasattr(device, "help_text") else "")
    with DemoWriter(args["out"], described) as writer:
        stats = record(env, device, writer, num_demos=int(args["num_demos"]),
                       rate_hz=float(args["rate_hz"]), keep=args["keep"],
                       max_steps=int(args["max_steps"]), seed=seed)
    device.close()
    print(f"{args['out']}: {stats.kept} demos kept, {stats.discarded} discarded, "
          f"{stats.successes}/{stats.episodes} episodes successful")


if __name__ == "__main__":
    main(sys.argv[1:])
