"""Play a task with a trained checkpoint, its non-learned baseline, random or zero actions,
print (and optionally write) its score, and optionally film, plot or watch one world.

    python scripts/play.py task=Detumble-RW agent=baseline num_envs=64
    python scripts/play.py task=Detumble-MTQ agent=random num_envs=64 max_steps=600
    python scripts/play.py checkpoint=runs/Detumble-RW/<time>/model_99.pt json=score.json
    python scripts/play.py task=Docking num_envs=4 video=docking.mp4 plots=plots/ world=1
    python scripts/play.py task=Pointing num_envs=1 viewer=true           # live viewer

Arguments are key=value overrides (hydra-style): task, agent (baseline | random |
zero | checkpoint), checkpoint (a checkpoint from scripts/train.py; its run's saved
config gives the task and network), trust_checkpoint (true: allow an sb3 / rl-games
checkpoint, which is a pickle and can run code; rsl-rl ones load weights-only), num_envs
(>= 1), max_steps (env steps, >= 0; 0, the default: one full episode), backend, seed
(>= 0), json (write the score there), verbose (tracebacks instead of one-line errors).
A bad value exits with status 2 and a line naming it; an unreadable checkpoint with 1.

The score adds, per world's first episode: thruster delta-v (m/s) and impulse (N s)
when the env has thrusters, each actuator group's control effort (integral of |output|
dt, e.g. N m s for wheels) and the unweighted reward terms at the episode's end
(`final_terms`; the ones named '*error*' also as `final_errors`); see
`orbitlab.envs.evaluate`.

Visualisation of world `world` (default 0), recorded during the same rollout:
* video=PATH.mp4: MuJoCo's offscreen renderer, one frame per env step: a camera that
  keeps the spacecraft in frame, lit by the Sun, Earth below, with the Hill (LVLH) axes,
  nadir and Sun arrows (`orbitlab.viz.camera`; needs an OpenGL context: EGL/OSMesa
  headless, and `pip install 'orbitlab-sim[viz]'` for imageio-ffmpeg); video_worlds=N
  films worlds world .. world+N-1 side by side in a grid;
* plots=DIR: PNG plots (position in the Hill frame or orbit, body rates / error terms,
  actuator usage, reward terms; matplotlib);
* viewer=true: MuJoCo's interactive viewer with a display, else a viser browser viewer
  (`pip install 'orbitlab-sim[viser]'`; prints its URL; port=8080). speed (simulated
  seconds per wall second, 0: unpaced; default 1) paces it; hold=false closes it when the
  rollout ends instead of waiting for the window to close / Ctrl-C.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from orbitlab.cli import (
    Arg,
    UserError,
    bad,
    boolean,
    choice,
    existing_file,
    integer,
    number,
    optional,
    output_dir,
    output_file,
    parse_args,
    run,
)
from orbitlab.envs.evaluate import rollout
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.jsonio import write_json
from orbitlab.limits import MAX_NUM_ENVS, MAX_SEED, MAX_STEPS
from orbitlab.registry import make_env
from orbitlab.rl.progress import rollout_progress
from orbitlab_tasks import task_arg

ARGS = {
    "task": Arg("Detumble-RW", task_arg),
    "agent": Arg("baseline", choice("baseline", "random", "zero", "checkpoint")),
    "num_envs": Arg("64", integer(min=1, max=MAX_NUM_ENVS)),
    "max_steps": Arg("0", integer(min=0, max=MAX_STEPS)),
    "backend": Arg("cpu", choice("cpu", "warp")),
    "seed": Arg("0", integer(min=0, max=MAX_SEED)),
    "checkpoint": Arg("", optional(existing_file)),
    "trust_checkpoint": Arg("false", boolean),
    "json": Arg("", optional(output_file)),
    "video": Arg("", optional(output_file)),
    "plots": Arg("", optional(output_dir)),
    "viewer": Arg("false", boolean),
    "world": Arg("0", integer(min=0)),
    "video_worlds": Arg("1", integer(min=1, max=16)),
    "port": Arg("8080", integer(min=1, max=65535)),
    "speed": Arg("1", number(min=0.0)),
    "hold": Arg("true", boolean),
}
"""The key=value arguments (orbitlab.cli); a bad one exits with status 2."""


def parse(argv: list[str]) -> dict[str, Any]:
    """Typed arguments; ArgumentError naming a bad one."""
    args = parse_args(argv, ARGS)
    if args["checkpoint"] is not None:
        args["agent"] = "checkpoint"
    if args["agent"] == "checkpoint" and args["checkpoint"] is None:
        raise bad("checkpoint", "", "agent=checkpoint needs checkpoint=PATH of a trained run")
    if args["world"] >= args["num_envs"]:
        raise bad(
            "world", str(args["world"]), f"expected a world in [0, num_envs={args['num_envs']})"
        )
    last = args["world"] + args["video_worlds"] - 1
    if last >= args["num_envs"]:
        raise bad(
            "video_worlds",
            str(args["video_worlds"]),
            f"worlds {args['world']}..{last} need num_envs > {last} (num_envs={args['num_envs']})",
        )
    return args


def trained_run(checkpoint: str) -> tuple[str, dict]:
    """(task name, saved run config) of the run directory holding `checkpoint`."""
    from orbitlab.rl.policies import run_config

    try:
        saved = run_config(checkpoint)
        return str(saved["task"]["name"]), saved
    except FileNotFoundError as error:
        raise UserError(str(error)) from None


def observers_for(args: dict[str, Any], env: ManagerBasedRLEnv):
    """(recorders, video renderer, live viewer): the recorders of worlds world ..
    world + video_worlds - 1 (the first for the plots; empty when neither a video nor
    plots are asked for), the others None when not asked for; every missing piece
    (package, GL context) is reported before the rollout starts."""
    from orbitlab.viz import VizUnavailable

    world = args["world"]
    recorders: list = []
    video = viewer = None
    try:
        if args["video"] or args["plots"]:
            from orbitlab.viz.recorder import Recorder

            count = args["video_worlds"] if args["video"] else 1
            recorders = [Recorder(world + i) for i in range(count)]
        if args["plots"]:
            from orbitlab.viz.plots import require_matplotlib

            require_matplotlib()
        if args["video"]:
            from orbitlab.viz.video import VideoRenderer

            video = VideoRenderer(env.scene.mj_model)
        if args["viewer"]:
            from orbitlab.viz.viewer import ViewerCfg, open_viewer

            viewer = open_viewer(
                env,
                ViewerCfg(world=world, speed=args["speed"], hold=args["hold"], port=args["port"]),
            )
    except VizUnavailable as error:
        raise UserError(str(error)) from None
    return recorders, video, viewer


def merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`base` with `top`'s entries on top of it, nested dicts merged key by key."""
    out = dict(base)
    for key, value in top.items():
        inner = out.get(key)
        both = isinstance(value, dict) and isinstance(inner, dict)
        out[key] = merged(inner, value) if both else value
    return out


def main(argv: list[str], env: dict[str, Any] | None = None) -> None:
    """Play (see the module docstring); ArgumentError / UserError on bad input. `env`:
    env config overrides (`env.<field>=...`), on top of a checkpoint's run's own."""
    args = parse(argv)
    run_cfg = None
    if args["agent"] == "checkpoint":
        args["task"], run_cfg = trained_run(args["checkpoint"])
    env_overrides = env
    env = make_env(  # scored at the task's full difficulty (no curriculum)
        args["task"],
        args["num_envs"],
        variant="baseline" if args["agent"] == "baseline" else "play",
        seed=args["seed"],
        backend=args["backend"],
        env=merged((run_cfg or {}).get("env") or {}, env_overrides or {}),
    )
    policy = args["agent"]
    if run_cfg is not None:
        from orbitlab.rl.policies import load_policy

        policy = load_policy(
            env, args["checkpoint"], run_cfg, trust_checkpoint=args["trust_checkpoint"]
        )
    recorders, video, viewer = observers_for(args, env)
    progress = rollout_progress(f"{args['task']} [{args['agent']}]", env, args["max_steps"] or None)
    observers = [*recorders, *(o for o in (viewer, progress) if o is not None)]
    try:
        score = rollout(
            env,
            policy=policy,
            max_steps=args["max_steps"] or None,
            seed=args["seed"],
            observers=observers,
        )
    except BaseException:
        if viewer is not None:
            viewer.cfg.hold = False  # interrupted or failed: do not wait on the viewer
        raise
    finally:
        progress.close()
        if viewer is not None:
            viewer.close()
    print(f"{args['task']} [{args['agent']}] {score}")
    outputs = {}
    if args["plots"]:
        from orbitlab.viz.plots import save_plots

        outputs["plots"] = [str(p) for p in save_plots(recorders[0].recording(), args["plots"])]
        print(f"plots: {', '.join(outputs['plots'])}")
    if video is not None:
        recordings = [r.recording() for r in recorders]
        if len(recordings) == 1:
            frames = video.write(recordings[0], args["video"])
            shown = f"world {args['world']}"
        else:
            frames = video.write_grid(recordings, args["video"])
            shown = f"worlds {args['world']}..{args['world'] + len(recordings) - 1}"
        video.close()
        outputs["video"], outputs["video_frames"] = str(args["video"]), frames
        print(f"video: {args['video']} ({frames} frames of {shown})")
    if args["json"]:
        write_json(
            args["json"],
            {"task": args["task"], "agent": args["agent"], **dataclasses.asdict(score), **outputs},
        )


if __name__ == "__main__":
    sys.exit(run(main, sys.argv[1:], "play"))
