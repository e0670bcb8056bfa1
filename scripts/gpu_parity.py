"""Captured vs eager: the CUDA-graph replay tests of the physics, with their counts in JSON.

    python scripts/gpu_parity.py [--device cuda:0] [--json parity.json] [--junitxml FILE]

Runs `tests/test_warp_backend.py -k cuda_graph_replay` on the Warp device: each test steps
one set of worlds through `OrbitData.step` (its launches captured once in a CUDA graph, then
replayed) and a second, identical set through the same launches one by one, un-captured,
and asserts qpos, qvel, R and t equal to the bit, plain (held loads), per RK4 stage, after
reset() and expand() (a recapture), and with contact. On a CUDA device every one of them
must pass: a skip counts as a failure, so the phase cannot pass by running nothing. On
Warp's CPU device (a dry run) there is no graph to capture; the tests skip, and that is
reported. Run by scripts/gpu_check.sh (phase `parity`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SELECTION = [str(ROOT / "tests" / "test_warp_backend.py"), "-k", "cuda_graph_replay"]
MIN_TESTS = 4
"""The graph replay tests there are (plain, stage, after reset and expand, with contact)."""


class Outcomes:
    """A pytest plugin that counts each test's outcome (its call, or its setup if skipped
    or errored there)."""

    def __init__(self) -> None:
        self.tests: dict[str, str] = {}

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call" or report.outcome != "passed":
            self.tests.setdefault(report.nodeid, report.outcome)


def passes(status: int, counts: dict[str, int], cuda: bool) -> bool:
    """Whether the phase passed: pytest's status 0 and no failure; on CUDA also every graph
    replay test run and passed (a skip there means nothing was compared)."""
    ok = status == 0 and counts["failed"] == 0
    if cuda:
        ok = ok and counts["skipped"] == 0 and counts["passed"] >= MIN_TESTS
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cuda:0", help="Warp device")
    parser.add_argument("--json", type=Path, help="write the counts to this JSON file")
    parser.add_argument("--junitxml", type=Path, help="pytest's JUnit XML report")
    args = parser.parse_args(argv)
    import pytest

    os.environ["ORBITLAB_TEST_DEVICE"] = args.device
    outcomes = Outcomes()
    extra = [f"--junitxml={args.junitxml}"] if args.junitxml else []
    start = time.perf_counter()
    status = pytest.main(
        ["-q", "-p", "no:cacheprovider", "-o", "addopts=", "-rs", *extra, *SELECTION],
        plugins=[outcomes],
    )
    counts = {
        outcome: sum(1 for o in outcomes.tests.values() if o == outcome)
        for outcome in ("passed", "failed", "skipped")
    }
    cuda = args.device.startswith("cuda")
    ok = passes(int(status), counts, cuda)
    result = {
        "device": args.device,
        "ok": ok,
        **counts,
        "tests": outcomes.tests,
        "seconds": time.perf_counter() - start,
        "what": "OrbitData.step captured in a CUDA graph and replayed vs the same launches "
        "un-captured: qpos, qvel, R, t equal to the bit",
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"parity": result}, indent=1) + "\n")
    verdict = "ok" if ok else "FAILED"
    note = "" if cuda else " (no CUDA graphs on Warp's CPU device: the tests skip there)"
    print(
        f"parity {verdict}: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['skipped']} skipped on {args.device}{note}"
    )
    if cuda and counts["skipped"]:
        print("parity: a skipped graph replay test on CUDA is a failure here")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
