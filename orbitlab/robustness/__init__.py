"""Hostile-input harness: tries each case and classifies what happened.

    python scripts/hostile_inputs.py                 # every class, the markdown table
    python scripts/hostile_inputs.py --details       # ... and one line per case
    python scripts/hostile_inputs.py classes=bridge,physics per_class=5

Each class module (`bridge`, `cli`, `files`, `physics`, `numbers`, `environment`, and
`process` for concurrency and signals) builds its cases from lists and tries them; each try
ends in one of

- clean error: refused with a one-line message naming the item, its value (where it has
  one) and what is allowed; for the bridge, a diagnostics message while it serves on;
- unclear error: refused, but the message is not one line or does not name the item;
- wrong result: accepted silently when it should have been refused, or data lost (for the
  process-level cases: a run that failed, hung or lost a checkpoint or a demo);
- crash: an exception escaped (a traceback), a thread or the process died.

The named regression tests (tests/test_bridge_hardening.py, test_cli_args.py, ...) stay
the regression net; this is the measurement, re-run on the final commit.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

CLEAN, UNCLEAR, WRONG, CRASH = "clean error", "unclear error", "wrong result", "crash"
OUTCOMES = (CLEAN, UNCLEAR, WRONG, CRASH)


@dataclass
class Case:
    """One hostile input: `group` is its row of the table."""

    group: str
    name: str
    attempt: Callable[[], tuple[str, str]]
    """Tries the input; returns (outcome, what was seen). An exception escaping it is a
    crash."""


@dataclass
class Result:
    case: Case
    outcome: str
    seen: str


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)

    def table(self) -> str:
        """The markdown table: per case class, tried and each outcome."""
        rows = {}
        for r in self.results:
            rows.setdefault(r.case.group, dict.fromkeys(OUTCOMES, 0))[r.outcome] += 1
        lines = [
            "| case class | tried | clean error | unclear error | wrong result | crash |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        total = dict.fromkeys(OUTCOMES, 0)
        for group, counts in rows.items():
            tried = sum(counts.values())
            lines.append(f"| {group} | {tried} | " + " | ".join(str(counts[o]) for o in OUTCOMES))
            lines[-1] += " |"
            for o in OUTCOMES:
                total[o] += counts[o]
        lines.append(
            f"| **all** | **{len(self.results)}** | "
            + " | ".join(f"**{total[o]}**" for o in OUTCOMES)
            + " |"
        )
        return "\n".join(lines)

    def details(self) -> str:
        return "\n".join(
            f"- [{r.outcome}] {r.case.group} / {r.case.name}: {r.seen}" for r in self.results
        )


def attempt(case: Case) -> Result:
    """Try one case; an escaping exception is a crash, shown by its last traceback line."""
    try:
        outcome, seen = case.attempt()
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            raise
        last = traceback.format_exception_only(error)[-1].strip()
        return Result(case, CRASH, f"raised {last}")
    return Result(case, outcome, _short(seen))


def run_cases(cases: Iterable[Case], report: Report, log=None) -> Report:
    for case in cases:
        result = attempt(case)
        report.results.append(result)
        if log is not None:
            log(f"[{result.outcome}] {case.group} / {case.name}")
    return report


def one_line_naming(message: str, *words: str) -> tuple[str, str]:
    """CLEAN when `message` is one line naming every word, else UNCLEAR (or CRASH when it
    holds a traceback)."""
    text = message.strip()
    if "Traceback" in text:
        return CRASH, _short(text.splitlines()[-1] if text else text)
    missing = [w for w in words if w not in text]
    if "\n" in text or not text or missing:
        return UNCLEAR, _short(text) + (f" (does not name {missing})" if missing else "")
    return CLEAN, _short(text)


def _short(text: str, n: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def subset(cases: list[Case], per_group: int | None) -> list[Case]:
    """The first `per_group` cases of each group (None: all)."""
    if per_group is None:
        return cases
    seen: dict[str, int] = {}
    kept = []
    for case in cases:
        seen[case.group] = seen.get(case.group, 0) + 1
        if seen[case.group] <= per_group:
            kept.append(case)
    return kept
