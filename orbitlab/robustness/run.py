"""The harness's entry point: builds the classes' cases, tries them, prints the table."""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack

from orbitlab.cli import Arg, boolean, integer, optional, parse_args, run, text
from orbitlab.robustness import Report, run_cases, subset

CLASSES = ("bridge", "cli", "files", "physics", "numbers", "environment", "process")
ARGS = {
    "classes": Arg(",".join(CLASSES), text),
    "per_class": Arg("", optional(integer(min=1))),
    "details": Arg("false", boolean),
    "progress": Arg("false", boolean),
}


def cases_of(name: str, stack: ExitStack) -> list:
    """The cases of one class (`stack` closes what they share)."""
    if name == "bridge":
        from orbitlab.robustness import bridge

        bench = stack.enter_context(bridge.bench_factory())
        return bridge.command_cases(bench) + bridge.heartbeat_cases(bench)
    if name == "cli":
        from orbitlab.robustness import cli

        return cli.cases(stack.enter_context(cli.workspace()))
    if name == "files":
        from orbitlab.robustness import files

        return files.cases(stack.enter_context(files.workspace()))
    if name == "numbers":
        from orbitlab.robustness import cli, numbers

        return numbers.cases(stack.enter_context(cli.workspace()))
    if name == "environment":
        from orbitlab.robustness import environment

        return environment.cases(stack.enter_context(environment.workspace()))
    if name == "process":
        from orbitlab.robustness import process

        return process.cases(stack.enter_context(process.workspace()))
    if name == "physics":
        from orbitlab.robustness import physics

        return physics.cases()
    raise ValueError(f"unknown class '{name}' (one of {', '.join(CLASSES)})")


def measure(classes, per_class: int | None = None, log=None) -> Report:
    report = Report()
    for name in classes:
        with ExitStack() as stack:
            run_cases(subset(cases_of(name, stack), per_class), report, log)
    return report


def _main(argv: list[str]) -> int:
    argv = ["details=true" if a == "--details" else a for a in argv]
    args = parse_args(argv, ARGS)
    classes = [c for c in args["classes"].split(",") if c]
    for name in classes:
        if name not in CLASSES:
            from orbitlab.cli import ArgumentError

            raise ArgumentError(f"classes: '{name}' is not one of {', '.join(CLASSES)}")
    t0 = time.monotonic()
    log = (lambda line: print(line, file=sys.stderr, flush=True)) if args["progress"] else None
    report = measure(classes, args["per_class"], log)
    print(report.table())
    print(f"\n{len(report.results)} cases in {time.monotonic() - t0:.0f} s")
    if args["details"]:
        print("\n" + report.details())
    return 0


def main(argv: list[str]) -> int:
    import orbitlab.robustness

    return run(_main, argv, "hostile_inputs", orbitlab.robustness.__doc__)
