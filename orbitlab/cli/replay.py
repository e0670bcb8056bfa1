"""Replay demos of a file and check that they reproduce bit-exactly.

    python scripts/replay_demos.py file=demos/docking.hdf5
    python scripts/replay_demos.py file=demos/docking.hdf5 mode=states
    python scripts/replay_demos.py file=demos/docking.hdf5 video=replay.mp4

mode=actions (default): restore each demo's initial state, step its actions and compare
every recorded state, observation and reward bitwise; mode=states: set each recorded state,
compare its observation, step its action and compare the next observation, reward and state.
Prints the largest difference per demo; exits 1 on any mismatch. video=PATH films the
replay (env.render, needs an OpenGL context and imageio). Incomplete demos (a session
killed while writing one) are skipped and listed; a bad argument or an unreadable file is
one line on stderr (exit status 2 / 1).
"""

from __future__ import annotations

import sys

from orbitlab.cli import (
    Arg,
    UserError,
    bad,
    choice,
    existing_file,
    names,
    optional,
    output_file,
    parse_args,
    run,
)

ARGS = {
    "file": Arg(None, existing_file),
    "mode": Arg("actions", choice("actions", "states")),
    "video": Arg("", optional(output_file)),
    "demos": Arg("", optional(names)),
}
"""The key=value arguments (orbitlab.cli); a bad one exits with status 2."""


def main(argv: list[str]) -> int:
    """Replay; 0 if every demo reproduced exactly, 1 otherwise (UserError: a bad file)."""
    args = parse_args(argv, ARGS)
    from orbitlab.demos.hdf5 import DemoReader
    from orbitlab.demos.record import make_env
    from orbitlab.demos.replay import replay_demo

    frames: list = []
    bad_demos = 0
    with DemoReader(args["file"]) as reader:
        for name, why in reader.skipped.items():
            print(f"{name}: skipped, incomplete ({why})")
        names_ = args["demos"] or reader.demos
        unknown = [n for n in names_ if n not in reader.demos]
        if unknown:
            raise bad(
                "demos",
                ",".join(names_),
                f"expected demos of {args['file']}: {', '.join(reader.demos) or 'none'}",
            )
        try:
            env = make_env(reader.env_args)
        except (KeyError, TypeError, ValueError) as error:
            raise UserError(
                f"{args['file']}: its env_args do not describe an orbitlab env ({error})"
            ) from None
        on_step = (lambda t: frames.append(env.render())) if args["video"] else None
        for demo in names_:
            result = replay_demo(env, reader, demo, args["mode"], on_step=on_step)
            bad_demos += not result.exact
            print(
                f"{demo}: {result.steps} steps, max diff state {result.state_diff:.3g}, "
                f"obs {result.obs_diff:.3g}, reward {result.reward_diff:.3g} "
                f"{'exact' if result.exact else 'MISMATCH ' + ', '.join(result.mismatched)}"
            )
    if args["video"] and frames:
        import imageio.v2 as imageio

        imageio.mimwrite(args["video"], frames, fps=10)
        print(f"video: {args['video']} ({len(frames)} frames)")
    print(f"{len(names_) - bad_demos}/{len(names_)} demos reproduced exactly")
    return 1 if bad_demos else 0


if __name__ == "__main__":
    sys.exit(run(main, sys.argv[1:], "replay_demos"))
