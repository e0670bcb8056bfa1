"""Record teleoperated demonstrations of one world of a task in robomimic's HDF5 layout.

    python scripts/record_demos.py task=Docking device=keyboard out=demos/docking.hdf5
    python scripts/record_demos.py task=Detumble-RW device=gamepad num_demos=20 rate_hz=10
    python scripts/record_demos.py task=Docking device=scripted script=cmds.npy keep=all
    python scripts/record_demos.py task=Capture-Arm device=pilot rate_hz=0 num_demos=20

Arguments (key=value): task, device (keyboard | keyboard-window | gamepad | spacemouse |
scripted | pilot: the task's scripted operator, where it has one), out (HDF5 path),
num_demos (demos to keep), rate_hz (env steps per second of wall time; 0: as fast as
possible), keep (success | all), seed, script (a .npy (T, 6) command file for the scripted
device, looped), max_steps (end an episode after this many env steps; 0: the task's limit),
backend, status (true | false | auto: the operator's status line; auto: on a terminal, or
with a person at the device), viewer (true: watch the world live, MuJoCo's window with a
display, else a viser browser viewer; false by default).

While recording, a status line shows the episode time, the distance to the goal and the
closing speed (Docking: probe tip to port; Formation: the worst follower to its slot) or
the attitude / rate error (Detumble, Pointing), the device, the demos saved / requested
and the steps of the demo in progress (`orbitlab.demos.status`): rewritten in place at
most 10 times a second on a terminal, else one line a second; with viewer=true also as a
text overlay in the viewer.

The device's 6-DOF command [fx fy fz tx ty tz] in [-1, 1] maps to the task's actions by
`orbitlab.demos.teleop.TeleopMapping`: a thruster-wrench action takes all six (Docking),
a thruster-force action the force part fx fy fz (Docking-Translation);
wheel / magnetorquer actions take the rotation part projected on their axes (Detumble-RW,
Detumble-MTQ: three body-axis elements take tx ty tz). Buttons: pause (no env steps while
paused), reset (discard the episode in progress), quit. Each kept episode is written and
flushed when it ends, so the file stays valid if the session is killed.

Every argument is checked before any file is opened (a bad one: one line naming it, exit
status 2). Demos go to `<out>.partial`, renamed to `out` at the end (also after Ctrl-C); a
session that keeps no demo leaves an existing `out` as it was. After SIGKILL the finished
demos are in `<out>.partial` (rename it); a full disk stops the session with a clear
message and every finished demo readable (`orbitlab.demos.hdf5`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from orbitlab.cli import (
    Arg,
    ArgumentError,
    UserError,
    bad,
    boolean,
    choice,
    existing_file,
    integer,
    optional,
    output_file,
    parse_args,
    run,
    zero_or_number,
)
from orbitlab.devices import DEVICES
from orbitlab.limits import MAX_RATE_HZ, MAX_SEED, MAX_STEPS, MIN_RATE_HZ
from orbitlab.registry import get_task, tasks
from orbitlab_tasks import task_arg


def auto_boolean(key: str, value: str) -> bool | None:
    """true / false (also 1/0, yes/no, on/off), or auto (None: decided at run time)."""
    if value.strip().lower() == "auto":
        return None
    try:
        return boolean(key, value)
    except ArgumentError:
        raise bad(key, value, "expected true, false or auto") from None


ARGS = {
    "task": Arg("Docking", task_arg),
    "device": Arg("keyboard", choice(*DEVICES)),
    "out": Arg("demos.hdf5", output_file),
    "num_demos": Arg("10", integer(min=1, max=1_000_000)),
    "rate_hz": Arg("10", zero_or_number(MIN_RATE_HZ, MAX_RATE_HZ, "as fast as possible")),
    "keep": Arg("success", choice("success", "all")),
    "seed": Arg("0", integer(min=0, max=MAX_SEED)),
    "script": Arg("", optional(existing_file)),
    "max_steps": Arg("0", integer(min=0, max=MAX_STEPS)),
    "backend": Arg("cpu", choice("cpu", "warp")),
    "status": Arg("auto", auto_boolean),
    "viewer": Arg("false", boolean),
}
"""The key=value arguments (orbitlab.cli), all checked before any file is opened."""


def show_status(args: dict[str, Any], stream=None) -> bool:
    """status=auto: on when `stream` (stderr) is a terminal or a person flies the device."""
    if args["status"] is not None:
        return args["status"]
    stream = stream if stream is not None else sys.stderr
    return args["device"] != "scripted" or bool(getattr(stream, "isatty", lambda: False)())


def load_script(path: Path) -> np.ndarray:
    """The (T, 6) finite commands of a .npy file (no pickles); ArgumentError otherwise."""
    allowed = "expected a .npy array file (numpy.save) of (T, 6) finite commands"
    try:
        with open(path, "rb") as file:
            magic = file.read(6)
    except OSError as error:
        raise bad("script", str(path), f"{allowed}; it cannot be read ({error.strerror})") from None
    if magic != b"\x93NUMPY":
        raise bad("script", str(path), f"{allowed}; this file is not one (no .npy header)")
    try:
        commands = np.load(path, allow_pickle=False)
    except ValueError as error:
        if "pickle" in str(error):  # an object array: numpy names its own option
            raise bad("script", str(path), f"{allowed}; it holds Python objects") from None
        raise bad("script", str(path), f"{allowed}; {error}") from None
    except (OSError, EOFError) as error:
        raise bad("script", str(path), f"{allowed}; it is truncated ({error})") from None
    if commands.ndim != 2 or commands.shape[1] != 6 or not len(commands):
        raise bad("script", str(path), f"expected (T, 6) commands, got shape {commands.shape}")
    if not np.issubdtype(commands.dtype, np.number) or not np.isfinite(commands).all():
        raise bad("script", str(path), "expected finite numbers")
    return commands


def parse(argv: list[str]) -> dict[str, Any]:
    """Typed arguments, the scripted device's commands loaded; ArgumentError on a bad one."""
    args = parse_args(argv, ARGS)
    if args["device"] == "scripted":
        if args["script"] is None:
            raise bad("script", "", "device=scripted needs script=<file.npy> with (T, 6) commands")
        args["commands"] = load_script(args["script"])
    if args["device"] == "pilot" and get_task(args["task"]).pilot is None:
        have = ", ".join(t.name for t in tasks() if t.pilot is not None) or "none"
        raise bad("device", "pilot", f"task {args['task']} has no pilot (tasks with one: {have})")
    return args


def main(argv: list[str]) -> None:
    """Record (module docstring); ArgumentError / UserError on bad input or a write failure."""
    args = parse(argv)
    from orbitlab.demos.hdf5 import DemoFileError, DemoWriter, partial_path
    from orbitlab.demos.record import env_args, make_cfg, make_env, record
    from orbitlab.demos.status import StatusLine, task_status_fn
    from orbitlab.demos.teleop import TeleopMapping
    from orbitlab.devices import ScriptedCfg, make_device

    if args["device"] == "scripted":
        device = make_device("scripted", ScriptedCfg(commands=args["commands"], end="loop"))
    else:
        device = make_device(args["device"])
    seed = args["seed"]
    described = env_args(args["task"], seed=seed, backend=args["backend"])
    env = make_env(described)
    described["orbitlab_cfg"] = env_args(args["task"], cfg=make_cfg(described["env_kwargs"]))[
        "orbitlab_cfg"
    ]
    if args["device"] == "pilot":
        device.fly(get_task(args["task"]).pilot(env))
    print(f"{described['env_name']}: action mapping\n{TeleopMapping(env).describe()}")
    print(device.help_text() if hasattr(device, "help_text") else "")
    try:
        viewer = open_viewer(env) if args["viewer"] else None
    except BaseException:
        device.close()  # the terminal keyboard restores the terminal
        raise
    status = None
    if show_status(args):
        status = StatusLine(
            env,
            task_status_fn(args["task"]),
            args["device"],
            args["num_demos"],
            overlay=viewer.set_status if viewer is not None else None,
        )
    print(f"recording to {partial_path(args['out'])} (renamed to {args['out']} at the end)")
    writer = DemoWriter(args["out"], described)
    try:
        with writer:
            stats = record(
                env,
                device,
                writer,
                num_demos=args["num_demos"],
                rate_hz=args["rate_hz"],
                keep=args["keep"],
                max_steps=args["max_steps"],
                seed=seed,
                status=status,
                viewer=viewer,
            )
    except DemoFileError as error:
        raise UserError(
            f"{error}; the {len(writer.names)} finished demos are in {writer.saved_to}"
        ) from None
    finally:
        device.close()
        if viewer is not None:
            viewer.close()
    where = writer.saved_to or f"{args['out']} (left as it was: no demo kept)"
    print(
        f"{where}: {stats.kept} demos kept, {stats.discarded} discarded, "
        f"{stats.successes}/{stats.episodes} episodes successful"
    )


def open_viewer(env):
    """The live viewer of world 0 (paced by rate_hz, closed with the session); UserError
    when none can be opened (no display and no viser)."""
    from orbitlab.viz import VizUnavailable
    from orbitlab.viz.viewer import ViewerCfg
    from orbitlab.viz.viewer import open_viewer as open_live

    try:
        return open_live(env, ViewerCfg(world=0, speed=0.0, hold=False))
    except VizUnavailable as error:
        raise UserError(str(error)) from None


if __name__ == "__main__":
    sys.exit(run(main, sys.argv[1:], "record_demos"))
