"""Launch the three processes (`run_study`) and score what they wrote (`score`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from orbitlab_tasks.formation.bridge_study.config import MODULE, PROGRESS_FILE, LinkCfg, StudyCfg


@dataclass
class StudyResult:
    """What `run_study` measured (the formation error from the simulator's truth log)."""

    formation_error_m: float
    """Mean over followers and ticks of |rho_f - rho_leader - offset_f|, m."""
    max_formation_error_m: float
    attitude_error_deg: float
    """Mean follower-to-leader attitude error, deg."""
    sim_time_s: float
    ticks: int
    wall_s: float
    """Wall time of the whole run (process start to exit), s."""
    loop_wall_s: float
    """Wall time of the simulator's stepping loop (first step to last), s."""
    control_rate_hz: float
    """Command updates per spacecraft per simulated second."""
    wall_rate_hz: float
    """Control updates per wall second during the loop."""
    returncodes: dict[str, int]
    out: str
    sim: dict[str, Any] = field(default_factory=dict)
    leader: dict[str, Any] = field(default_factory=dict)
    followers: dict[str, Any] = field(default_factory=dict)
    commands: dict[str, list[str]] = field(default_factory=dict)
    """The command line of each process."""


def _command(role: str, cfg: StudyCfg, out: Path, link: LinkCfg | None = None) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        MODULE,
        role,
        "--out",
        str(out),
        "--seconds",
        repr(cfg.seconds),
        "--seed",
        str(cfg.seed),
        "--period",
        repr(cfg.control_period_s),
    ]
    if link is not None:
        cmd += [
            "--host",
            link.host,
            "--pub-port",
            str(link.pub_port),
            "--sub-port",
            str(link.sub_port),
            "--heartbeat-port",
            str(link.heartbeat_port),
        ]
    return cmd


def run_study(cfg: StudyCfg, out: Path) -> StudyResult:
    """Start the simulator, wait for its ports, start the leader and the followers, wait for
    all three to exit and score the simulator's log. Each process logs to `out/<role>.log`;
    on a timeout or failure the processes started here are killed (by their pid)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    old = ("endpoints.json", "sim.npz", "sim.json", "leader.json", "followers.json", PROGRESS_FILE)
    for name in old:
        (out / name).unlink(missing_ok=True)
    env = dict(
        os.environ,
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
    )
    procs: dict[str, subprocess.Popen] = {}
    logs = []
    commands: dict[str, list[str]] = {}
    start = time.monotonic()

    def launch(role: str, cmd: list[str]) -> None:
        log = open(out / f"{role}.log", "w")  # noqa: SIM115 - closed below
        logs.append(log)
        commands[role] = cmd
        procs[role] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)

    try:
        launch("sim", _command("sim", cfg, out))
        endpoints = out / "endpoints.json"
        while not endpoints.exists():
            if procs["sim"].poll() is not None:
                raise RuntimeError(
                    f"the simulator exited ({procs['sim'].returncode}); see {out / 'sim.log'}"
                )
            if time.monotonic() - start > cfg.startup_timeout_s:
                raise TimeoutError("the simulator did not publish its ports in time")
            time.sleep(0.1)
        ports = json.loads(endpoints.read_text())
        link = LinkCfg(
            host=ports["host"],
            pub_port=ports["pub_port"],
            sub_port=ports["sub_port"],
            heartbeat_port=ports["heartbeat_port"],
        )
        launch("leader", _command("leader", cfg, out, link))
        launch("followers", _command("followers", cfg, out, link))
        wait_all(procs, cfg, out, start)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        for log in logs:
            log.close()
    wall = time.monotonic() - start
    codes = {role: proc.returncode for role, proc in procs.items()}
    if any(codes.values()):
        raise RuntimeError(f"a process failed: {codes}; see the logs in {out}")
    return score(out, cfg, wall, codes, commands)


def wait_all(procs: dict[str, subprocess.Popen], cfg: StudyCfg, out: Path, start: float) -> None:
    """Wait for every process to exit (TimeoutError after `cfg.run_timeout_s` wall s from
    `start`), showing the simulated time so far as a progress bar on a terminal."""
    from orbitlab.rl.progress import progress_bar

    bar = progress_bar("formation over the bridge", cfg.seconds, unit="sim s")

    def show() -> None:
        if bar is not None:
            bar.n = round(sim_time_s(out), 1)
            bar.refresh()

    try:
        while any(proc.poll() is None for proc in procs.values()):
            if time.monotonic() - start > cfg.run_timeout_s:
                running = ", ".join(role for role, proc in procs.items() if proc.poll() is None)
                raise TimeoutError(f"{running} still running after {cfg.run_timeout_s} s")
            show()
            time.sleep(0.2)
        show()
    finally:
        if bar is not None:
            bar.close()


def sim_time_s(out: Path) -> float:
    """The simulated time the simulator has reached (0 before its first report)."""
    try:
        return float((out / PROGRESS_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return 0.0


def score(
    out: Path, cfg: StudyCfg, wall_s: float, codes: dict[str, int], commands: dict[str, list[str]]
) -> StudyResult:
    """The study's result from the files the three processes wrote into `out`."""
    log = np.load(out / "sim.npz")
    sim = json.loads((out / "sim.json").read_text())
    leader = json.loads((out / "leader.json").read_text())
    followers = json.loads((out / "followers.json").read_text())
    error = log["error"]
    received = sim["received"]
    per_craft = min(received.values())
    return StudyResult(
        formation_error_m=float(error.mean()),
        max_formation_error_m=float(error.max()),
        attitude_error_deg=float(np.degrees(log["attitude_error"].mean())),
        sim_time_s=float(sim["sim_time_s"]),
        ticks=int(sim["ticks"]),
        wall_s=wall_s,
        loop_wall_s=float(sim["loop_wall_s"]),
        control_rate_hz=per_craft / max(float(sim["sim_time_s"]), 1e-9),
        wall_rate_hz=int(sim["ticks"]) / max(float(sim["loop_wall_s"]), 1e-9),
        returncodes=codes,
        out=str(out),
        sim=sim,
        leader=leader,
        followers=followers,
        commands=commands,
    )
