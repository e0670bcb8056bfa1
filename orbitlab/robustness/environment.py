"""Hostile environment variables: the ones orbitlab reads, set to what breaks them.

`ORBITLAB_TASK_MODULES` naming a missing module or file, a module with a syntax error, one
that raises or calls sys.exit at import, a relative name, one registering a second
'Docking'; torchrun's `RANK`, `LOCAL_RANK`, `WORLD_SIZE` as text, out of range, or a
multi-process WORLD_SIZE without torchrun's `MASTER_ADDR`; an unknown `MUJOCO_GL`.

Each case is a fresh `python -m orbitlab.cli.dispatch` process (the variables are read at
import or on the first task lookup), under a timeout. Two expectations:

- refused: exit status 2 with one stderr line naming the variable (or module) and value;
- usable: a broken task module spoils no other task: the command on another task exits 0,
  with at most one stderr line, naming the broken module.

Anything else is a crash (a traceback), an unclear error, or a wrong result (a refusal
where the command should have run, or a run where it should have been refused).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from orbitlab.robustness import CLEAN, CRASH, UNCLEAR, WRONG, Case, one_line_naming

TIMEOUT_S = 120
CLEARED = ("ORBITLAB_TASK_MODULES", "MUJOCO_GL", "RANK", "LOCAL_RANK", "WORLD_SIZE")
PLAY = ["play", "task=pointing", "num_envs=2", "max_steps=1"]
MODULES = {
    "syntax_bad.py": "def broken(:\n",
    "raises.py": "raise RuntimeError('boom at import')\n",
    "exits.py": "import sys\nsys.exit(3)\n",
    "dup_docking.py": (
        "from orbitlab.registry import TaskSpec, get_task, register_task\n"
        "register_task(TaskSpec(name='Docking', env_cfg=get_task('Pointing').env_cfg))\n"
    ),
}


@contextlib.contextmanager
def workspace() -> Iterator[Path]:
    """A temporary directory holding the broken task modules."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in MODULES.items():
            (Path(tmp) / name).write_text(text)
        yield Path(tmp)


def run_with(variables: dict[str, str], argv: list[str], cwd: Path) -> tuple[int | None, str]:
    """(exit status, stderr) of `orbitlab argv` with `variables` set (None: timed out)."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(variables)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "orbitlab.cli.dispatch", *argv],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            env=env,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stderr


def _lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip() and "Warning" not in line]


def refused(variables: dict[str, str], argv: list[str], words: list[str], cwd: Path):
    """CLEAN when the command exits 2 with one line naming `words`."""
    code, err = run_with(variables, argv, cwd)
    if code is None:
        return WRONG, f"still running after {TIMEOUT_S} s"
    if code == 0:
        return WRONG, "accepted (exit 0)"
    outcome, seen = one_line_naming("\n".join(_lines(err)), *words)
    if outcome == CLEAN and code != 2:
        return UNCLEAR, f"exit {code} (not 2): {seen}"
    return outcome, f"exit {code}: {seen}"


def usable(variables: dict[str, str], argv: list[str], words: list[str], cwd: Path):
    """CLEAN when the command exits 0 and stderr is empty (no words) or one line naming
    `words`."""
    code, err = run_with(variables, argv, cwd)
    lines = _lines(err)
    if code is None:
        return WRONG, f"still running after {TIMEOUT_S} s"
    if "Traceback" in err:
        return CRASH, lines[-1] if lines else "traceback"
    if code != 0:
        return WRONG, f"the other task is unusable: exit {code}: {' | '.join(lines[-2:])}"
    if not words:
        return (CLEAN, "ran") if not lines else (UNCLEAR, f"ran, but said: {' | '.join(lines)}")
    outcome, seen = one_line_naming("\n".join(lines), *words)
    return outcome, f"ran (exit 0); {seen}"


def cases(tmp: Path) -> list[Case]:
    """The cases (`tmp`: `workspace()`)."""
    modules = "ORBITLAB_TASK_MODULES"
    train = ["train", "num_envs=4", "agent.max_iterations=1", f"runs_root={tmp / 'runs'}"]
    table = [
        ("usable", {modules: "no_such_module_xyz"}, PLAY, ["no_such_module_xyz"]),
        ("usable", {modules: "/no/such/tasks.py"}, PLAY, ["/no/such/tasks.py"]),
        ("usable", {modules: str(tmp / "syntax_bad.py")}, PLAY, ["syntax_bad", "SyntaxError"]),
        ("usable", {modules: str(tmp / "raises.py")}, PLAY, ["raises", "boom at import"]),
        ("usable", {modules: str(tmp / "exits.py")}, PLAY, ["exits", "sys.exit(3)"]),
        ("usable", {modules: "..relative"}, PLAY, ["..relative"]),
        ("usable", {modules: str(tmp / "dup_docking.py")}, PLAY, []),
        (
            "refused",
            {modules: str(tmp / "dup_docking.py")},
            ["play", "task=docking", "num_envs=2", "max_steps=1"],
            ["Docking", "dup_docking"],
        ),
        ("refused", {"WORLD_SIZE": "abc"}, train, ["WORLD_SIZE", "abc"]),
        ("refused", {"WORLD_SIZE": "0"}, train, ["WORLD_SIZE", "0"]),
        ("refused", {"LOCAL_RANK": "x"}, train, ["LOCAL_RANK", "x"]),
        ("refused", {"RANK": "-1"}, train, ["RANK", "-1"]),
        (
            "refused",
            {"RANK": "5", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511"},
            train,
            ["RANK", "5"],
        ),
        ("refused", {"WORLD_SIZE": "2"}, train, ["WORLD_SIZE", "MASTER_ADDR"]),
        ("refused", {"MUJOCO_GL": "bogus"}, PLAY, ["MUJOCO_GL", "bogus"]),
        ("refused", {"MUJOCO_GL": "bogus"}, train, ["MUJOCO_GL", "bogus"]),
    ]
    check = {"usable": usable, "refused": refused}
    return [
        Case(
            f"environment: {'task modules' if modules in v else 'variables'}",
            " ".join(f"{k}={Path(x).name if '/' in x else x}" for k, x in v.items())
            + f" {argv[0]}",
            _bind(check[kind], v, argv, words, tmp),
        )
        for kind, v, argv, words in table
    ]


def _bind(check, variables, argv, words, cwd):
    return lambda: check(variables, argv, words, cwd)
