"""Torch twins of the kernel terms, for the tests that compare an env built with kernel
terms against the same env built with their torch twins (`torch_twin`)."""

from __future__ import annotations

import dataclasses

import torch

from orbitlab.envs import mdp
from orbitlab.envs.mdp import kernel_terms as kt
from orbitlab.fw.terms import KernelTerm
from orbitlab_tasks.detumble import detumble_env_cfg as detumble

THRESHOLD = detumble.SUCCESS_RATE_RAD_S


def slow_enough(env, entity):
    return mdp.ang_vel_norm(env, entity) < THRESHOLD


def rate_potential(env):
    rate = env.scene.entities["sat"].data.root_ang_vel_b
    return torch.linalg.vector_norm(rate, dim=-1) / THRESHOLD


def rate_kernel(env, entity):
    return 1.0 - torch.exp(-mdp.ang_vel_norm(env, entity) / THRESHOLD)


TWINS = {
    kt.ang_vel_norm: mdp.ang_vel_norm,
    kt.action_l2: mdp.action_l2,
    kt.action_rate_l2: mdp.action_rate_l2,
    kt.constant: mdp.constant,
    kt.ang_vel_above: mdp.ang_vel_above,
    kt.time_out: mdp.time_out,
    kt.held_for: mdp.held_for,
    kt.potential_progress: mdp.potential_progress,
    kt.sensor_value: mdp.sensor_value,
    kt.last_action: mdp.last_action,
    kt.root_ang_vel: mdp.root_ang_vel,
    kt.wheel_speed: mdp.wheel_speed,
    detumble.slow_enough: slow_enough,
    detumble.rate_potential: rate_potential,
    detumble.rate_kernel: rate_kernel,
}
"""Each kernel term and its torch twin (the library's, or the reference of a task's own)."""


def twin_of(func):
    """The torch twin of a kernel term (`TWINS`, else its declared `KernelTerm.twin`);
    anything else as it is."""
    if not isinstance(func, KernelTerm):
        return func
    return TWINS.get(func, func.twin)


def _twin_term(term):
    params = {k: twin_of(v) for k, v in term.params.items()}
    return dataclasses.replace(term, func=twin_of(term.func), params=params)


def torch_twin(cfg, keep: tuple[str, ...] = ()):
    """`cfg` with every kernel term (but the reward and termination terms named in `keep`)
    and every kernel term inside a term's params replaced by its torch twin (new term
    configs: the task's own are left as they are)."""
    for manager in (cfg.rewards, cfg.terminations):
        for name, term in list(manager.items()):
            if name not in keep:
                manager[name] = _twin_term(term)
    twins: dict[int, object] = {}  # a term config shared by groups stays shared
    for group, group_cfg in list(cfg.observations.items()):
        terms = {
            name: twins.setdefault(id(term), _twin_term(term))
            for name, term in group_cfg.terms.items()
        }
        cfg.observations[group] = dataclasses.replace(group_cfg, terms=terms)
    return cfg
