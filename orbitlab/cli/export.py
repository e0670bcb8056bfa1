"""Export a trained policy to TorchScript (policy.pt) and ONNX (policy.onnx) and check them.

    python scripts/export.py checkpoint=runs/Detumble-RW/<time>/model_99.pt
    python scripts/export.py checkpoint=runs/.../model_99.pt out=deploy/ rtol=1e-6
    python scripts/export.py checkpoint=sb3/ppo.zip vec_normalize=sb3/vecnormalize.pkl \\
        trust_checkpoint=true

Arguments are key=value: checkpoint (an rsl-rl or rl-games checkpoint of
scripts/train.py, or a Stable-Baselines3 PPO / SAC .zip), out (output directory;
default: the run's exported/), rtol (largest accepted action difference relative to the action scale,
max(1, largest action); default 1e-5), vec_normalize
(an SB3 VecNormalize pickle whose observation normalization joins the export),
trust_checkpoint (true: allow unpickling an SB3 .zip, an rl-games .pth and
vec_normalize, which can run code; rsl-rl checkpoints load weights-only and need no trust), verbose (tracebacks).

Prints the written paths and the largest action differences of both exports against the
checkpoint's deterministic actor on the task's own observations; exits with 1 if they
exceed the tolerance (nothing is written then) or on an unreadable or untrusted
checkpoint, and with 2 on bad arguments (a one-line message naming the key).
"""

from __future__ import annotations

import sys

from orbitlab.cli import (
    Arg,
    UserError,
    boolean,
    existing_file,
    number,
    optional,
    output_dir,
    parse_args,
    run,
)

ARGS = {
    "checkpoint": Arg(None, existing_file),
    "out": Arg("", optional(output_dir)),
    "rtol": Arg("1e-5", number(min=0.0, min_open=True)),
    "vec_normalize": Arg("", optional(existing_file)),
    "trust_checkpoint": Arg("false", boolean),
}
"""The key=value arguments (orbitlab.cli); a bad one exits with status 2."""


def main(argv: list[str]) -> int:
    """Run the export; the process exit status (ArgumentError / UserError on bad input)."""
    args = parse_args(argv, ARGS)
    from orbitlab.rl.export import ExportMismatchError, export_policy

    try:
        result = export_policy(
            args["checkpoint"],
            args["out"],
            rtol=args["rtol"],
            vec_normalize=args["vec_normalize"],
            trust_checkpoint=args["trust_checkpoint"],
        )
    except ExportMismatchError as exc:
        print(f"export: FAILED: {exc}", file=sys.stderr)
        return 1
    except (ImportError, FileNotFoundError, ValueError, TypeError) as exc:
        raise UserError(str(exc)) from exc
    print(f"{result.library} policy: obs_dim {result.obs_dim}, action_dim {result.action_dim}")
    print(f"torchscript: {result.jit_path}  (max |diff| {result.max_diff_jit:.3g})")
    print(f"onnx:        {result.onnx_path}  (max |diff| {result.max_diff_onnx:.3g})")
    print(
        f"checked on {result.num_obs_checked} observations, tolerance {result.tolerance:.3g} "
        f"(rtol {args['rtol']:g} of the action scale)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(run(main, sys.argv[1:], "export"))
