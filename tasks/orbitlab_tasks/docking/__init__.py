"""Docking: a 6-DOF chaser flies its probe into a target's drogue port (soft capture).

`docking_env_cfg` holds the task (RL and baseline configs), `mdp` its terms and the
docking geometry, `agent` the baseline's custom nodes.
"""
