"""Bad command-line values for every verb, run in process through the CLI entry points.

`orbitlab.cli.dispatch.main` (train, play, eval, record, replay, export, bridge) and
scripts/demo_tools.py's `main` run in this process (a subprocess costs ~3 s of imports),
stderr captured, under a 60 s alarm: an exception escaping the entry point is a crash,
exit status 0 (or the alarm) a wrong result, status 1/2 with one stderr line naming the
key and value a clean error. Values that would start real work get small defaults
(num_envs=2, max_steps=2, duration=0.2, one iteration) so that an accepted one ends soon.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import signal
import tempfile
from pathlib import Path

from orbitlab.robustness import CRASH, WRONG, Case, one_line_naming

ROOT = Path(__file__).resolve().parents[2]
ALARM_S = 60
INT_BAD = ["abc", "1O", "-1", "2.5", "", "nan"]
BASE = {
    "play": ["num_envs=2", "max_steps=2"],
    "eval": ["num_envs=2", "max_steps=2"],
    "record": ["num_demos=1", "max_steps=2"],
    "bridge": ["pub_port=0", "sub_port=0", "heartbeat_port=0", "duration=0.2"],
    "train": ["num_envs=2", "agent.max_iterations=1"],
}


@contextlib.contextmanager
def workspace():
    """A temporary working directory (hydra writes there) with a junk checkpoint."""
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        Path("junk.pt").write_bytes(b"x")
        Path("subdir").mkdir()
        try:
            yield Path(tmp)
        finally:
            os.chdir(cwd)


class _Alarm(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Alarm


def invoke(verb: str, argv: list[str]) -> tuple[int, str]:
    """(exit status, stderr) of one command in process; raises what escapes it."""
    from orbitlab.cli import run
    from orbitlab.cli.dispatch import main as dispatch

    err = io.StringIO()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(ALARM_S)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                if verb == "demo_tools":
                    code = run(_demo_tools().main, argv, "demo_tools")
                else:
                    code = dispatch([verb, *argv])
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else 1
                if not isinstance(done.code, int) and done.code is not None:
                    print(done.code, file=err)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return int(code or 0), err.getvalue()


def _demo_tools():
    spec = importlib.util.spec_from_file_location("demo_tools", ROOT / "scripts" / "demo_tools.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def try_command(verb: str, argv: list[str], words: list[str]) -> tuple[str, str]:
    """Run `verb argv` (with BASE's small defaults for keys it does not set) and classify
    it: exit 0 or still running at the alarm a wrong result, one stderr line naming every
    one of `words` a clean error."""
    tested = {a.split("=", 1)[0] for a in argv}
    base = [a for a in BASE.get(verb, []) if a.split("=", 1)[0] not in tested]
    try:
        code, err = invoke(verb, [*argv, *base])
    except _Alarm:
        return WRONG, f"accepted: still running after {ALARM_S} s"
    lines = [line for line in err.splitlines() if line.strip() and "Warning" not in line]
    if code == 0:
        return WRONG, f"accepted (exit 0){': ' + lines[-1] if lines else ''}"
    outcome, seen = one_line_naming("\n".join(lines), *words)
    if outcome == CRASH:
        return outcome, seen
    return outcome, f"exit {code}: {seen}"


def words_of(item: str) -> list[str]:
    """What a message about `key=value` must name: the key and (when not empty) the value."""
    key, _, value = item.partition("=")
    return [key] + ([value] if value else [])


def cases(tmp: Path) -> list[Case]:
    table: list[tuple[str, list[str], list[str]]] = []
    for verb in ("play", "eval"):
        for key in ("num_envs", "seed", "max_steps"):
            table += [(verb, [f"{key}={v}"], words_of(f"{key}={v}")) for v in INT_BAD]
    for item in (
        "task=Nope",
        "agent=nope",
        "checkpoint=/no/such.pt",
        "viewer=maybe",
        "backend=gpu",
        "nosuchkey=1",
        "env.episode_length_s=-1",
        "env.episode_length_s=abc",
        "json=junk.pt/score.json",
        "video=junk.pt/v.mp4",
        "video_worlds=0",
        "video_worlds=17",
        "video_worlds=abc",
        "env.scene.orbit.coupling=fast",
        "env.scene.orbit.coupling=null",
        "env.scene.orbit.nosuch=1",
    ):
        table.append(("play", [item], words_of(item)))
    table.append(("play", ["num_envs=2", "video=v.mp4", "video_worlds=3"], ["video_worlds", "3"]))
    table.append(("play", ["num_envs"], ["num_envs"]))
    for item in ("task=Nope", "checkpoint=/no/such.pt", "checkpoint=subdir", "nosuchkey=1"):
        table.append(("eval", [item], words_of(item)))
    table += [("record", [f"num_demos={v}"], words_of(f"num_demos={v}")) for v in INT_BAD]
    for item in (
        "rate_hz=-5",
        "rate_hz=nan",
        "rate_hz=abc",
        "rate_hz=inf",
        "max_steps=-1",
        "seed=abc",
        "device=joystick",
        "task=Nope",
        "out=",
        "out=junk.pt/demos.hdf5",
        "keep=maybe",
        "script=/no/such.npy",
        "status=maybe",
        "viewer=maybe",
    ):
        table.append(("record", ["out=new.hdf5", item], words_of(item)))
    table.append(("replay", [], ["file="]))
    for item in ("file=", "file=/no/such.hdf5", "file=subdir", "nosuchkey=1"):
        table.append(("replay", [item], words_of(item)))
    table.append(("export", [], ["checkpoint="]))
    for item in ("checkpoint=/no/such.pt", "checkpoint=subdir"):
        table.append(("export", [item], words_of(item)))
    for item in ("rtol=0", "rtol=abc", "rtol=-1", "nosuchkey=1"):
        table.append(("export", ["checkpoint=junk.pt", item], words_of(item)))
    for item in (
        "rate_hz=-5",
        "rate_hz=abc",
        "rate_hz=nan",
        "accel=-1",
        "accel=abc",
        "pub_port=abc",
        "pub_port=70000",
        "task=Nope",
        "lockstep=maybe",
        "mode=bogus",
        "duration=abc",
        "nosuchkey=1",
    ):
        table.append(("bridge", [item], words_of(item)))
    table += [
        ("runs", ["report", "/no/such/dir"], ["DIR", "/no/such/dir"]),
        ("runs", ["report", str(tmp), "target=abc"], ["target", "abc"]),
        ("runs", ["report", str(tmp), "nosuchkey=1"], ["nosuchkey"]),
        ("runs", ["report", str(tmp)], ["no run below", str(tmp)]),
        ("runs", ["report"], ["directory of runs"]),
        ("runs", ["frobnicate"], ["frobnicate"]),
    ]
    table += [
        ("demo_tools", ["frobnicate"], ["merge|split|summary"]),
        ("demo_tools", ["merge", "files=/no/a.hdf5", "out=x.hdf5"], ["files", "/no/a.hdf5"]),
        ("demo_tools", ["merge", "files=junk.pt"], ["out="]),
        ("demo_tools", ["summary", "file=/no/such.hdf5"], ["file", "/no/such.hdf5"]),
        ("demo_tools", ["split", "file=/no/such.hdf5"], ["file", "/no/such.hdf5"]),
        ("demo_tools", ["split", "file=junk.pt", "valid=2"], ["valid", "2"]),
        ("demo_tools", ["split", "file=junk.pt", "seed=abc"], ["seed", "abc"]),
    ]
    for item in (
        "num_envs=abc",
        "seed=abc",
        "agent.learning_rate=abc",
        "env.episode_length_s=-1",
        "nosuchkey=1",
        "task=Nope",
        "agent.max_iterations=-1",
        "num_envs=0",
        "env.scene.orbit.coupling=fast",
    ):
        argv = [item, f"runs_root={tmp / 'runs'}", f"hydra.run.dir={tmp / 'runs' / 'x'}"]
        table.append(("train", argv, words_of(item)))
    return [
        Case(f"CLI: {verb}", " ".join(argv[:3]) or "(no arguments)", _bind(verb, argv, words))
        for verb, argv, words in table
    ]


def _bind(verb, argv, words):
    return lambda: try_command(verb, argv, words)
