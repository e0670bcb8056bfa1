"""Export a trained policy to TorchScript (policy.pt) and ONNX (policy.onnx) and check them.

    python scripts/export.py checkpoint=runs/Detumble-RW/<time>/model_99.pt
    python scripts/export.py checkpoint=runs/.../model_99.pt out=deploy/ rtol=1e-6
    python scripts/export.py checkpoint=sb3/ppo.zip vec_normalize=sb3/vecnormalize.pkl

Arguments are key=value: checkpoint (an rsl-rl checkpoint of scripts/train.py, or a
Stable-Baselines3 PPO / SAC .zip), out (output directory; default: the run's
exported/), rtol (largest accepted action difference relative to the action scale,
max(1, largest action); default 1e-5), vec_normalize
(an SB3 VecNormalize pickle whose observation normalization joins the export).

Prints the written paths and the largest action differences of both exports against the
checkpoint's deterministic actor on the task's own observations; exits with 1 if they
exceed the tolerance (nothing is
written then) and with 2 on bad arguments.
"""

from __future__ import annotations

import sys
from pathlib import Path

DEFAULTS = {"checkpoint": "", "out": "", "rtol": "1e-5", "vec_normalize": ""}


def parse(argv: list[str]) -> dict[str, str]:
    """The key=value arguments over DEFAULTS; SystemExit(2) on anything else."""
    args = dict(DEFAULTS)
    for item in argv:
        key, sep, value = item.partition("=")
        if not sep or key not in DEFAULTS:
            usage(f"bad argument '{item}': use key=value with key in {', '.join(DEFAULTS)}")
        args[key] = value
    if not args["checkpoint"]:
        usage("checkpoint=PATH is required")
    if not Path(args["checkpoint"]).is_file():
        usage(f"checkpoint=PATH must name a checkpoint file, got '{args['checkpoint']}'")
    try:
        if not float(args["rtol"]) > 0:
            raise ValueError
    except ValueError:
        usage(f"rtol must be a positive number, got '{args['rtol']}'")
    return args


def usage(message: str) -> None:
    """Print `message` to stderr and exit with status 2."""
    print(f"export: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: list[str]) -> int:
    """Run the export; the process exit status."""
    args = parse(argv)
    from orbitlab.rl.export import ExportMismatchError, export_policy

    try:
        result = export_policy(args["checkpoint"], args["out"] or None,
                               rtol=float(args["rtol"]),
                               vec_normalize=args["vec_normalize"] or None)
    except ExportMismatchError as exc:
        print(f"export: FAILED: {exc}", file=sys.stderr)
        return 1
    except (ImportError, FileNotFoundError, ValueError, TypeError) as exc:
        usage(str(exc))
    print(f"{result.library} policy: obs_dim {result.obs_dim}, action_dim {result.action_dim}")
    print(f"torchscript: {result.jit_path}  (max |diff| {result.max_diff_jit:.3g})")
    print(f"onnx:        {result.onnx_path}  (max |diff| {result.max_diff_onnx:.3g})")
    print(f"checked on {result.num_obs_checked} observations, tolerance {result.tolerance:.3g} "
          f"(rtol {args['rtol']} of the action scale)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
