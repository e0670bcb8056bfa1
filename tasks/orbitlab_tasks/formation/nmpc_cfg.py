"""The followers' NMPC settings (numpy only: the controller processes build their solvers
from it without torch or MuJoCo; `nmpc` re-exports it)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from orbitlab.agent.laws import mean_motion
from orbitlab.agent.nmpc_solver import NmpcCfg, opposing_pairs
from orbitlab.scene.catalog import FORMATION_THRUSTERS
from orbitlab_tasks.formation import constants as geo
from orbitlab_tasks.formation.constants import CONTROL_PERIOD_S


def follower_nmpc_cfg(**overrides: Any) -> NmpcCfg:
    """The followers' NMPC: the spec's horizon, weights and flyer, the formation flyer's six
    opposing thruster pairs (1.5 N each) as exact input bounds; `overrides` replace fields."""
    cfg = NmpcCfg(
        horizon_steps=30,
        dt_s=CONTROL_PERIOD_S,
        mean_motion_rad_s=mean_motion(geo.ORBIT_A_KM),
        mass_kg=geo.MASS_KG,
        inertia_kgm2=(geo.INERTIA_KGM2,) * 3,
        thruster_pairs=opposing_pairs(FORMATION_THRUSTERS),
        pair_max_force_n=1.5,
    )
    return replace(cfg, **overrides)
