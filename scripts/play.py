"""Play a task with a trained checkpoint, its non-learned baseline, random or zero actions,
print (and optionally write) its score, and optionally film, plot or watch one world.

    python scripts/play.py task=Detumble-RW agent=baseline num_envs=64
    python scripts/play.py task=Detumble-MTQ agent=random num_envs=64 max_steps=600
    python scripts/play.py checkpoint=runs/Detumble-RW/<time>/model_99.pt json=score.json
    python scripts/play.py task=Docking num_envs=4 video=docking.mp4 plots=plots/ world=1
    python scripts/play.py task=Pointing num_envs=1 viewer=true           # live viewer

Arguments are key=value overrides (hydra-style): task, agent (baseline | random |
zero | checkpoint), checkpoint (a checkpoint from scripts/train.py; its run's saved
config gives the task and network), num_envs, max_steps (env steps; default: one full
episode), backend, seed, json (write the score there).

The score adds, per world's first episode: thruster delta-v (m/s) and impulse (N s)
when the env has thrusters, each actuator group's control effort (integral of |output|
dt, e.g. N m s for wheels) and the unweighted reward terms at the episode's end
(`final_terms`; the ones named '*error*' also as `final_errors`); see
`orbitlab.envs.evaluate`.

Visualisation of world `world` (default 0), recorded during the same rollout:
* video=PATH.mp4: MuJoCo's offscreen renderer, one frame per env step, with the Hill
  (LVLH) axes, nadir and Sun arrows around the spacecraft (needs an OpenGL context:
  EGL/OSMesa headless, and `pip install 'orbitlab-sim[viz]'` for imageio-ffmpeg);
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
from pathlib import Path

from orbitlab.cli import FALSE, TRUE, parse_key_values
from orbitlab.envs.evaluate import rollout
from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.jsonio import write_json
from orbitlab_tasks import task_entry

DEFAULTS = {"task": "Detumble-RW", "agent": "baseline", "num_envs": "64", "max_steps": "0",
            "backend": "cpu", "seed": "0", "checkpoint": "", "json": "", "video": "",
            "plots": "", "viewer": "false", "world": "0", "port": "8080", "speed": "1",
            "hold": "true"}


def parse(argv: list[str]) -> dict[str, str]:
    args = parse_key_values(argv, DEFAULTS)
    if args["checkpoint"]:
        args["agent"] = "checkpoint"
    if args["agent"] not in ("baseline", "random", "zero", "checkpoint"):
        raise SystemExit(f"agent must be baseline, random, zero or checkpoint, got "
                         f"'{args['agent']}'")
    if args["agent"] == "checkpoint" and not Path(args["checkpoint"]).is_file():
        raise SystemExit(f"checkpoint=PATH must name a checkpoint file, got "
                         f"'{args['checkpoint']}'")
    for key in ("viewer", "hold"):
        if args[key].lower() not in TRUE + FALSE:
            raise SystemExit(f"{key} must be true or false, got '{args[key]}'")
    if not 0 <= int(args["world"]) < int(args["num_envs"]):
        raise SystemExit(f"world must be in [0, num_envs={args['num_envs']}), got "
                         f"{args['world']}")
    return args


def flag(value: str) -> bool:
    return value.lower() in TRUE


def trained_run(checkpoint: str) -> tuple[str, dict]:
    """(task name, saved run config) of the run directory holding `checkpoint`."""
    from orbitlab.rl.policies import run_config

    try:
        run = run_config(checkpoint)
    except FileNotFoundError as error:
        raise SystemExit(str(error)) from None
    return run["task"]["name"], run


def observers_for(args: dict[str, str], env: ManagerBasedRLEnv):
    """(recorder, video renderer, live viewer), each None when not asked for; every
    missing piece (package, GL context) is reported before the rollout starts."""
    from orbitlab.viz import VizUnavailable

    world = int(args["world"])
    recorder = video = viewer = None
    try:
        if args["video"] or args["plots"]:
            from orbitlab.viz.recorder import Recorder

            recorder = Recorder(world)
        if args["plots"]:
            from orbitlab.viz.plots import require_matplotlib

            require_matplotlib()
        if args["video"]:
            from orbitlab.viz.video import VideoRenderer

            video = VideoRenderer(env.scene.mj_model)
        if flag(args["viewer"]):
            from orbitlab.viz.viewer import ViewerCfg, open_viewer

            viewer = open_viewer(env, ViewerCfg(world=world, speed=float(args["speed"]),
                                                hold=flag(args["hold"]),
                                                port=int(args["port"])))
    except VizUnavailable as error:
        raise SystemExit(str(error)) from None
    return recorder, video, viewer


def main(argv: list[str]) -> None:
    args = parse(argv)
    run_cfg = None
    if args["agent"] == "checkpoint":
        args["task"], run_cfg = trained_run(args["checkpoint"])
    entry = task_entry(args["task"])
    source = entry.baseline_cfg if args["agent"] == "baseline" else entry.env_cfg
    cfg = load_cfg(source, num_envs=int(args["num_envs"]), backend=args["backend"])
    cfg.curriculum = {}  # scored at the task's full difficulty
    cfg.seed = int(args["seed"])
    env = ManagerBasedRLEnv(cfg)
    policy = args["agent"]
    if run_cfg is not None:
        from orbitlab.rl.policies import load_policy

        policy = load_policy(env, args["checkpoint"], run_cfg)
    recorder, video, viewer = observers_for(args, env)
    observers = [o for o in (recorder, viewer) if o is not None]
    try:
        score = rollout(env, policy=policy, max_steps=int(args["max_steps"]) or None,
                        seed=int(args["seed"]), observers=observers)
    except BaseException:
        if viewer is not None:
            viewer.cfg.hold = False  # interrupted or failed: do not wait on the viewer
        raise
    finally:
        if viewer is not None:
            viewer.close()
    print(f"{args['task']} [{args['agent']}] {score}")
    outputs = {}
    if args["plots"]:
        from orbitlab.viz.plots import save_plots

        outputs["plots"] = [str(p) for p in save_plots(recorder.recording(), args["plots"])]
        print(f"plots: {', '.join(outputs['plots'])}")
    if video is not None:
        frames = video.write(recorder.recording(), args["video"])
        video.close()
        outputs["video"], outputs["video_frames"] = args["video"], frames
        print(f"video: {args['video']} ({frames} frames of world {args['world']})")
    if args["json"]:
        write_json(Path(args["json"]), {"task": args["task"], "agent": args["agent"],
                                        **dataclasses.asdict(score), **outputs})


if __name__ == "__main__":
    main(sys.argv[1:])
