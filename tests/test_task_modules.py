"""Task modules from ORBITLAB_TASK_MODULES: a second registration of a name is refused in
one line naming both sources; a broken module is one line naming it and its error, and the
other tasks stay usable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from orbitlab import registry
from orbitlab.registry import DuplicateTaskError, TaskSpec, get_task, register_task


def orbitlab(*argv: str, modules: str) -> subprocess.CompletedProcess:
    env = {**os.environ, registry.TASK_MODULES_VARIABLE: modules}
    return subprocess.run(
        [sys.executable, "-m", "orbitlab.cli.dispatch", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


@pytest.fixture
def modules(tmp_path):
    (tmp_path / "dup_docking.py").write_text(
        "from orbitlab.registry import TaskSpec, get_task, register_task\n"
        "register_task(TaskSpec(name='Docking', env_cfg=get_task('Pointing').env_cfg))\n"
    )
    (tmp_path / "syntax_bad.py").write_text("def broken(:\n")
    (tmp_path / "raises.py").write_text("raise RuntimeError('boom at import')\n")
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "half.py").write_text(
        "from orbitlab.registry import TaskSpec, get_task, register_task\n"
        "register_task(TaskSpec(name='Half-Task', env_cfg=get_task('Pointing').env_cfg))\n"
        "raise ValueError('second half broken')\n"
    )
    return tmp_path


def test_a_second_docking_is_refused_naming_both_sources(modules):
    done = orbitlab(
        "play", "task=docking", "num_envs=2", "max_steps=1", modules=str(modules / "dup_docking.py")
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert (
        "task 'Docking' is registered twice: by orbitlab_tasks.docking and by dup_docking"
        in (lines[0])
    )
    assert "dup_docking.py" in lines[0]


def test_broken_modules_are_one_line_each_and_the_other_tasks_work(modules):
    bad = ["syntax_bad.py", "raises.py", "exits.py", "half.py", "missing.py"]
    listed = ",".join([*(str(modules / name) for name in bad), "not a module!"])
    done = orbitlab("list", modules=listed)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == len(bad) + 1, done.stderr
    for line, words in zip(
        lines,
        [
            ["syntax_bad.py", "SyntaxError"],
            ["raises.py", "RuntimeError: boom at import"],
            ["exits.py", "sys.exit(3)"],
            ["half.py", "second half broken"],
            ["missing.py", "no file"],
            ["'not a module!'", "ModuleNotFoundError"],
        ],
        strict=True,
    ):
        assert all(word in line for word in words), (words, line)
        assert line.startswith("orbitlab: task module '") and "failed to load" in line
    assert "Docking  (task=docking" in done.stdout  # every built-in task is still there
    assert "Half-Task" not in done.stdout  # a half-loaded module registers nothing
    assert "not loaded: task module" in done.stdout


def test_the_same_module_may_register_again_another_one_may_not():
    spec = TaskSpec(name="Reload-Probe", env_cfg=get_task("Pointing").env_cfg)
    try:
        register_task(spec)
        register_task(spec)  # a reload of this module: replaces
        assert get_task("reload-probe") is spec
        registry._ORIGINS["reload-probe"] = ("elsewhere", "elsewhere.py")
        with pytest.raises(DuplicateTaskError, match=r"registered twice: by elsewhere\.py and by"):
            register_task(spec)
        with pytest.raises(registry.ArgumentError, match="registered twice"):
            get_task("Reload-Probe")
    finally:
        for table in (registry._TASKS, registry._ORIGINS, registry._CONTESTED):
            table.pop("reload-probe", None)
