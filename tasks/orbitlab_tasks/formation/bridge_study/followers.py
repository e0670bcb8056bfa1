"""The followers process: both followers' NMPC solved in turn (`FollowerControllers`) and
their loop over the bridge (`run_followers`)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from orbitlab_tasks.formation import constants as geo
from orbitlab_tasks.formation.bridge_study.clients import connect, wait_tick
from orbitlab_tasks.formation.bridge_study.config import (
    FLYERS,
    PLAN_TOPIC,
    LinkCfg,
    StudyCfg,
    key,
    states_keys,
)


class FollowerControllers:
    """Both followers' NMPC (env-independent `FormationNmpc`), solved in turn like
    `FormationNmpcNode`: each keeps out of the leader's plan and of the other follower's plan
    of the previous update shifted by one step."""

    def __init__(self, period_s: float = 0.2) -> None:
        from orbitlab.agent.nmpc_solver import FormationNmpc
        from orbitlab_tasks.formation.nmpc_cfg import follower_nmpc_cfg

        cfg = follower_nmpc_cfg(dt_s=period_s)
        self.problems = {f: FormationNmpc(cfg, geo.SLOT_OFFSETS_M[f]) for f in geo.FOLLOWERS}
        self.plans: dict[str, np.ndarray | None] = dict.fromkeys(geo.FOLLOWERS)
        self.solve_times_s: dict[str, list[float]] = {f: [] for f in geo.FOLLOWERS}
        self.iterations: dict[str, list[int]] = {f: [] for f in geo.FOLLOWERS}
        self.failures: dict[str, int] = dict.fromkeys(geo.FOLLOWERS, 0)

    def update(
        self, states: dict[str, np.ndarray], leader_plan: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Body wrench (6,) per follower from their 13-states and the leader's plan."""
        H = leader_plan.shape[0] - 1
        wrenches, plans = {}, {}
        for f in geo.FOLLOWERS:
            others = [leader_plan[:, :3]]
            for g in geo.FOLLOWERS:
                if g == f:
                    continue
                old = self.plans[g]
                others.append(
                    np.repeat(states[g][None, :3], H + 1, 0)
                    if old is None
                    else np.concatenate([old[1:, :3], old[-1:, :3]])
                )
            sol = self.problems[f].solve(states[f], leader_plan, others)
            wrenches[f], plans[f] = sol.wrench, sol.states
            self.solve_times_s[f].append(sol.solve_time_s)
            self.iterations[f].append(sol.iterations)
            self.failures[f] += int(not sol.success)
        self.plans.update(plans)
        return wrenches


def run_followers(cfg: StudyCfg, link: LinkCfg, out: Path) -> dict[str, Any]:
    """Followers process: until the state at `cfg.seconds`, solve both NMPCs on each tick's
    states and the leader's plan of that tick; writes `out/followers.json` (solve times)."""
    controllers = FollowerControllers(cfg.control_period_s)
    keys = [*states_keys(FLYERS), key(geo.LEADER, PLAN_TOPIC)]
    updates, plan_wait = 0, []
    with connect(link, "followers") as client:
        for f in geo.FOLLOWERS:
            for topic in ("cmd_force", "cmd_torque"):
                client.advertise(f, topic)
        for k in keys:
            client.subscribe(k)
        client.wait_connected(cfg.startup_timeout_s)
        last, timeout = -math.inf, cfg.startup_timeout_s
        while True:
            state_keys = keys[:-1]
            msgs = wait_tick(client, state_keys, last, timeout)
            timeout = cfg.step_timeout_s
            last = t = msgs[state_keys[0]]["time"]
            if t >= cfg.seconds - 1e-6:
                break
            start = time.perf_counter()
            plan = wait_tick(client, [*state_keys, keys[-1]], last - 1e-6, timeout)[keys[-1]]
            plan_wait.append(time.perf_counter() - start)
            states = {}
            for f in geo.FOLLOWERS:
                hill, sc = msgs[key(f, "hill_states")], msgs[key(f, "sc_states")]
                states[f] = np.concatenate(
                    [hill["r_bh_h"], hill["v_bh_h"], hill["q_bh"], sc["omega_bn_b"]]
                )
            wrenches = controllers.update(states, np.asarray(plan["states"], float))
            for f, w in wrenches.items():
                client.publish_force(f, w[:3])
                client.publish_torque(f, w[3:])
            updates += 1
    summary = {
        "updates": updates,
        "last_time_s": last,
        "solve_s": controllers.solve_times_s,
        "iterations": controllers.iterations,
        "not_converged": controllers.failures,
        "plan_wait_s": plan_wait,
    }
    (out / "followers.json").write_text(json.dumps(summary))
    return summary
