"""`orbitlab runs report DIR [key=value ...]`: the seeds of one task's training runs.

    orbitlab train -m seed=0,1,2,3,4 task=docking          # five runs of Docking
    orbitlab runs report runs/Docking target=0.9           # table, median, worst, curves
    orbitlab runs report runs/Formation-Velocity metric=formation_error target=0.1

Prints, per run below DIR (each folder with a metrics.json that `orbitlab train` wrote): the
seed, the final policy's score on fresh worlds with its 95 % interval (Wilson's, for a
success rate), the best segment checkpoint's success rate when the run selected one, wall
time and env steps; then the median and the worst seed. Writes the learning curves (one
line per seed against env steps, from the runs' tensorboard files; the target dashed) to
`out` (default DIR/curves.png).

Keys: metric (success_rate, or a number of metrics.json: a top-level key or one of its
final_errors / final_terms, e.g. formation_error; success_rate and mean_return are
higher-is-better, the others lower-is-better), target (the
task's target in the metric's units: 0.9 for 90 %), curve (a tensorboard tag; default
Episode/success_rate, else Train/mean_reward), out (PNG path), json (write the table there),
verbose.
"""

from __future__ import annotations

import sys
from pathlib import Path

from orbitlab.cli.args import (
    Arg,
    ArgumentError,
    UserError,
    number,
    optional,
    output_file,
    parse_args,
    run,
    text,
)

SUBCOMMANDS = ("report",)
ARGS = {
    "metric": Arg("success_rate", text),
    "target": Arg("", optional(number())),
    "curve": Arg("", text),
    "out": Arg("", optional(output_file)),
    "json": Arg("", optional(output_file)),
}


def report(argv: list[str]) -> int:
    """`report DIR key=value ...`; ArgumentError / UserError on bad input."""
    if not argv or "=" in argv[0]:
        raise ArgumentError("expected a directory of runs first (runs/<task>)")
    root, args = Path(argv[0]), parse_args(argv[1:], ARGS)
    if not root.is_dir():
        raise ArgumentError(f"DIR={str(root)!r} is invalid: expected a directory of runs")
    from orbitlab.jsonio import write_json
    from orbitlab.rl.report import collect, format_report, plot_curves

    try:
        result = collect(root, args["metric"], args["curve"] or None)
    except ValueError as error:
        raise UserError(str(error)) from None
    print(format_report(result, args["target"]))
    out = args["out"] or root / "curves.png"
    try:
        print(f"curves: {plot_curves(result, out, args['target'])}")
    except ImportError as error:
        print(f"curves: not drawn ({error}): pip install 'orbitlab-sim[viz]'", file=sys.stderr)
    if args["json"]:
        rows = [
            {
                "run": str(r.path),
                "seed": r.seed,
                "score": r.score,
                "interval95": list(r.interval) if r.interval else None,
                "best_checkpoint": r.best,
                "train_s": r.train_s,
                "env_steps": r.env_steps,
            }
            for r in result.rows
        ]
        write_json(
            args["json"],
            {
                "task": result.task,
                "metric": result.metric,
                "median": result.median,
                "worst": result.worst.score,
                "worst_seed": result.worst.seed,
                "runs": rows,
            },
        )
    return 0


def main(argv: list[str]) -> int:
    """`orbitlab runs <subcommand> ...` (see the module doc)."""
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv[0] not in SUBCOMMANDS:
        print(
            f"orbitlab runs: unknown subcommand {argv[0]!r} (one of {', '.join(SUBCOMMANDS)})",
            file=sys.stderr,
        )
        return 2
    return run(report, argv[1:], "runs report", doc=__doc__)
