"""The hostile-input harness (scripts/hostile_inputs.py) on a few cases per class, so that
it cannot rot (the process-level class, real processes, is marked slow); the full run (~420
cases, a few minutes) is the measurement in docs/robustness.md."""

from __future__ import annotations

import pytest

pytest.importorskip("zmq")

from orbitlab.robustness import CLEAN, CRASH, WRONG, Case, Report, attempt
from orbitlab.robustness.run import measure


def test_a_few_cases_per_class_are_tried_and_refused_cleanly():
    report = measure(["bridge", "physics"], per_class=3)
    report.results += measure(["cli", "numbers", "environment"], per_class=1).results
    groups = {r.case.group for r in report.results}
    assert len(groups) >= 15 and len(report.results) >= 25, groups
    bad = [r for r in report.results if r.outcome != CLEAN]
    assert not bad, "\n".join(f"{r.case.name}: {r.outcome}: {r.seen}" for r in bad)
    table = report.table()
    assert table.startswith("| case class | tried |") and "**all**" in table


def test_an_escaping_exception_is_a_crash_and_an_accepted_input_can_be_wrong():
    def boom():
        raise KeyError(101)

    assert attempt(Case("g", "boom", boom)).outcome == CRASH
    assert attempt(Case("g", "ok", lambda: (WRONG, "accepted"))).outcome == WRONG
    assert (
        "| g | 1 | 0 | 0 | 1 | 0 |"
        in Report([attempt(Case("g", "ok", lambda: (WRONG, "")))]).table()
    )


@pytest.mark.slow
def test_concurrent_runs_and_signals_lose_nothing():
    """Real processes (~45 s on 2 cores): two trainings and two recordings at once, SIGINT and
    SIGKILL during training, SIGKILL during record."""
    report = measure(["process"])
    assert {r.case.group for r in report.results} == {"concurrency", "signals"}
    bad = [r for r in report.results if r.outcome != CLEAN]
    assert not bad, "\n".join(f"{r.case.name}: {r.outcome}: {r.seen}" for r in bad)
