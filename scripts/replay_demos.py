"""Replay demos of a file and check that they reproduce bit-exactly.

    python scripts/replay_demos.py file=demos/docking.hdf5
    python scripts/replay_demos.py file=demos/docking.hdf5 mode=states
    python scripts/replay_demos.py file=demos/docking.hdf5 video=replay.mp4

mode=actions (default): restore each demo's initial state, step its actions and compare
every recorded state, observation and reward bitwise; mode=states: set each recorded state,
compare its observation, step its action and compare the next observation, reward and state.
Prints the largest difference per demo; exits 1 on any mismatch. video=PATH films the
replay (env.render, needs an OpenGL context and imageio).
"""

from __future__ import annotations

import sys

from orbitlab.cli import parse_key_values

DEFAULTS = {"file": "", "mode": "actions", "video": "", "demos": ""}


def main(argv: list[str]) -> int:
    args = parse_key_values(argv, DEFAULTS)
    if not args["file"]:
        raise SystemExit("file=<demos.hdf5> is required")
    from orbitlab.demos.hdf5 import DemoReader
    from orbitlab.demos.record import make_env
    from orbitlab.demos.replay import replay_demo

    frames: list = []
    bad = 0
    with DemoReader(args["file"]) as reader:
        env = make_env(reader.env_args)
        on_step = (lambda t: frames.append(env.render())) if args["video"] else None
        names = args["demos"].split(",") if args["demos"] else reader.demos
        for demo in names:
            result = replay_demo(env, reader, demo, args["mode"], on_step=on_step)
            bad += not result.exact
            print(f"{demo}: {result.steps} steps, max diff state {result.state_diff:.3g}, "
                  f"obs {result.obs_diff:.3g}, reward {result.reward_diff:.3g} "
                  f"{'exact' if result.exact else 'MISMATCH ' + ', '.join(result.mismatched)}")
    if args["video"] and frames:
        import imageio.v2 as imageio

        imageio.mimwrite(args["video"], frames, fps=10)
        print(f"video: {args['video']} ({len(frames)} frames)")
    print(f"{len(names) - bad}/{len(names)} demos reproduced exactly")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
