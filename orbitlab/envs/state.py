"""Capture and restore the complete state of some worlds of a `ManagerBasedRLEnv`.

    state = get_state(env, [0])          # {key: (1, ...) numpy array}
    ...                                  # env steps on
    set_state(env_b, state, [0])         # a fresh env of the same config
    # stepping env and env_b with the same actions now gives bit-identical states

A state is a flat dict of numpy arrays, one row per world, under '/'-separated keys:

* `mujoco/state`: MuJoCo's mjSTATE_INTEGRATION row (time, qpos, qvel, act, warm start,
  ctrl, applied forces, mocap, eq_active, ...), float64, as `mujoco.batch` holds it;
* `mujoco/out/<field>`: the MjData output fields bound so far (e.g. qfrc_constraint,
  qacc): they describe the last step and terms read them before the next one;
* `mujoco/model/<field>`: model fields given per-world values (`OrbitData.expand`);
* `orbit/<array>`: every per-world orbit-layer array (chief R km, V km/s, t s, segment
  predictor state, environment at the chief, actuator arrays, user/orbit wrenches);
* `env/...`, `view/...`, `actuator_context/...`, `actuators/<group>/...`,
  `sensors/<sensor>/...`, `action/...`, `observation/...`, `termination/...`,
  `reward/...`, `command/...`, `event/...`, `agent/...`: each component's
  `state_dict()` (`orbitlab.stateful`: the state its class declares in `state_attrs`,
  e.g. held commands, lag and delay lines, PWM phase, sensor held/delayed values, biases
  and walks, sample counters, command targets and timers, last actions, observation
  history, term states such as `held_for`, node outputs and states), one row per world.
  A delay line is stored oldest sample first, so its global write head does not matter;
* `global/...`: state shared by all worlds, repeated in each row: the torch random
  generators found in those components (`global/rng/...`, as uint8 bytes), the
  environment's step counter and the curriculum terms' `state_dict()`.

`set_state` writes the worlds' rows back through the components' declared state (creating
entries that do not exist yet, e.g. agent-node outputs before the first step); `restore_globals` (default:
when every world of the env is restored) also restores the global part from row 0.

Not captured: Python scalars other than those above (configuration, not state), the
default torch generator (nothing in a step draws from it), model fields that
`set_const()` derived, renderer state, and anything of the 'warp' backend (the
capture supports the 'cpu' backend, where restoring is bit-exact).

`orbitlab.demos.layout.StateLayout` flattens a state into one float64 vector per world
(robomimic's `states`) and back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from orbitlab.sim.backends.cpu import CpuBackend
from orbitlab.stateful import Leaf, decode_key, delay_rows, encode_key, leaves, load_leaf

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

GLOBAL = "global/"


def component_roots(env: ManagerBasedRLEnv) -> dict[str, Any]:
    """The env's stateful components by the first part of their keys."""
    roots: dict[str, Any] = {
        "env": env,
        "view": env.scene.view,
        "actuator_context": env.scene.actuator_context,
        "actuators": env.scene.actuators,
        "sensors": env.scene.sensors,
        "action": env.action_manager,
        "observation": env.observation_manager,
        "termination": env.termination_manager,
        "reward": env.reward_manager,
        "command": env.command_manager,
        "event": env.event_manager,
    }
    if env.agent is not None:
        roots["agent"] = env.agent
    return roots


def _leaves(env: ManagerBasedRLEnv) -> Iterator[Leaf]:
    for name, component in component_roots(env).items():
        yield from leaves(component, name, env.num_envs)


# --------------------------------------------------------------- helpers
def _ids(env: ManagerBasedRLEnv, env_ids: Sequence[int] | torch.Tensor | None) -> np.ndarray:
    if env_ids is None:
        return np.arange(env.num_envs)
    ids = torch.as_tensor(env_ids).reshape(-1).cpu().numpy().astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= env.num_envs):
        raise ValueError(f"env ids must be in [0, {env.num_envs}), got {ids.tolist()}")
    return ids


def _np(x: torch.Tensor | np.ndarray) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _cpu_backend(env: ManagerBasedRLEnv) -> CpuBackend:
    backend = env.scene.data.backend
    if not isinstance(backend, CpuBackend):
        raise NotImplementedError("env state capture supports the 'cpu' backend only")
    return backend


def _batch(env: ManagerBasedRLEnv):
    return _cpu_backend(env).batch


def _orbit_arrays(env: ManagerBasedRLEnv) -> dict[str, np.ndarray]:
    return env.scene.data.world_arrays()


# ------------------------------------------------------------------- API
def get_state(
    env: ManagerBasedRLEnv, env_ids: Sequence[int] | torch.Tensor | None = None, rng: bool = True
) -> dict[str, np.ndarray]:
    """The full state of `env_ids` (default all): {key: (k, ...) array}, copies.

    Args:
        env: a `ManagerBasedRLEnv` on the 'cpu' backend.
        env_ids: the worlds, k of them.
        rng: include the random generators' states (`global/rng/...`).
    """
    ids = _ids(env, env_ids)
    k = len(ids)
    backend = _cpu_backend(env)
    batch = backend.batch
    out: dict[str, np.ndarray] = {"mujoco/state": np.array(batch.state[ids])}
    for name in backend.bound_outputs():
        out[f"mujoco/out/{name}"] = np.array(batch.bind(name)[ids])
    for name, values in backend.expanded_fields().items():
        out[f"mujoco/model/{name}"] = np.array(values[ids])
    for name, values in sorted(_orbit_arrays(env).items()):
        out[f"orbit/{name}"] = np.array(values[ids])
    tids = torch.as_tensor(ids, dtype=torch.long)
    for leaf in _leaves(env):
        if leaf.kind == "row":
            value = leaf.obj
            if isinstance(value, torch.Tensor):
                out[leaf.path] = _np(value[tids.to(value.device)]).copy()
            else:
                out[leaf.path] = np.array(value[ids])
        elif leaf.kind == "delay":
            out[leaf.path] = _np(delay_rows(leaf.obj, tids)).copy()
        elif rng:
            state = _np(leaf.obj.get_state()).astype(np.uint8)
            out[f"{GLOBAL}rng/{leaf.path}"] = np.broadcast_to(state, (k, *state.shape)).copy()
    out[f"{GLOBAL}common_step_counter"] = np.full(k, env.common_step_counter, dtype=np.int64)
    for name, term_state in env.curriculum_manager.state_dict().items():
        for key, value in term_state.items():
            out[f"{GLOBAL}curriculum/{encode_key(name)}/{encode_key(key)}"] = np.full(
                k, float(value)
            )
    return out


def _check_step_counts(env: ManagerBasedRLEnv, counts: np.ndarray | None) -> None:
    """The worlds' physics-step counts must be whole env steps: the env's timers are compiled
    for its decimation (`orbitlab.cycle`), as every state captured between env steps has."""
    if counts is None:
        return
    decimation = int(env.cfg.decimation)
    counts = np.asarray(counts)
    bad = np.flatnonzero(counts % decimation != 0)
    if bad.size:
        raise ValueError(
            f"state 'view/step_count' = {int(counts[bad[0]])} (row {int(bad[0])}) is not a "
            f"multiple of the env's decimation {decimation}: a state is captured between env "
            "steps of an env with the same decimation"
        )


def set_state(
    env: ManagerBasedRLEnv,
    state: dict[str, np.ndarray],
    env_ids: Sequence[int] | torch.Tensor | None = None,
    restore_globals: bool | None = None,
) -> list[str]:
    """Write `state` (from `get_state` or `StateLayout.unflatten`) into `env_ids`.

    Args:
        env: a `ManagerBasedRLEnv` built from the same config as the captured one.
        state: {key: (k, ...) array}, one row per world of `env_ids`.
        env_ids: the worlds to overwrite (default all); k of them.
        restore_globals: also restore the `global/` part (generators, step counter,
            curriculum) from row 0; default: when `env_ids` covers every world.

    Returns:
        The keys that were not restored because they lie inside an object this env
        has not created yet (e.g. a node's diagnostic `last_result` before its first
        update); such objects are rebuilt by the next step.
    """
    ids = _ids(env, env_ids)
    k = len(ids)
    for key, value in state.items():
        if np.shape(value)[:1] != (k,):
            raise ValueError(f"state '{key}' has {np.shape(value)[:1]} rows for {k} worlds")
    _check_step_counts(env, state.get("view/step_count"))
    if restore_globals is None:
        restore_globals = k == env.num_envs
    batch, data = _batch(env), env.scene.data
    others = np.setdiff1d(np.arange(env.num_envs), ids)
    arrays = _orbit_arrays(env)
    kept = {name: values[others].copy() for name, values in arrays.items()}
    kept_mj = np.array(batch.state[others])
    # MuJoCo: model fields and integration state, then derived fields and the orbit loads.
    for key, value in state.items():
        if key.startswith("mujoco/model/"):
            data.expand(key.removeprefix("mujoco/model/"))[ids] = value
    mj_state = state.get("mujoco/state")
    if mj_state is not None:
        if mj_state.shape[1:] != batch.state.shape[1:]:
            raise ValueError(
                f"mujoco/state has size {mj_state.shape[1:]}, this model's is "
                f"{batch.state.shape[1:]}: not the same scene"
            )
        batch.state[ids] = mj_state
    outputs = {
        key.removeprefix("mujoco/out/"): value
        for key, value in state.items()
        if key.startswith("mujoco/out/")
    }
    for name in outputs:
        data.backend.bind(name)  # recorded as bound: no forward on a term's first read later
    data.forward(ids)
    if mj_state is not None:
        batch.state[ids] = mj_state  # the loads kernel rewrote xfrc_applied
    batch.state[others] = kept_mj
    for name, value in outputs.items():
        _write_readonly(batch.bind(name), ids, value)
    for name, values in arrays.items():
        values[others] = kept[name]
        if f"orbit/{name}" in state:
            values[ids] = state[f"orbit/{name}"]
    env.scene.view.invalidate()
    env.scene.view.end_episodes()
    skipped = _set_components(env, state, ids)
    if restore_globals:
        _set_globals(env, state)
    return skipped


def _write_readonly(array: np.ndarray, ids: np.ndarray, value: np.ndarray) -> None:
    """Overwrite rows of a read-only output view (refreshed by MuJoCo's next call anyway)."""
    writable = array.flags.writeable
    array.flags.writeable = True
    try:
        array[ids] = value
    finally:
        array.flags.writeable = writable


def _set_components(
    env: ManagerBasedRLEnv, state: dict[str, np.ndarray], ids: np.ndarray
) -> list[str]:
    """Write every component row of `state`; the keys not restored (see `set_state`)."""
    special = ("mujoco/", "orbit/", GLOBAL)
    roots, skipped = component_roots(env), []
    for path, value in state.items():
        if path.startswith(special):
            continue
        if path.split("/", 1)[0] not in roots:
            raise KeyError(f"state key '{path}': no component '{path.split('/', 1)[0]}' here")
        if not load_leaf(roots, path, value, ids, env.num_envs, env.device):
            skipped.append(path)
    return skipped


def _set_globals(env: ManagerBasedRLEnv, state: dict[str, np.ndarray]) -> None:
    generators = {leaf.path: leaf.obj for leaf in _leaves(env) if leaf.kind == "rng"}
    curriculum: dict[str, dict[str, float]] = {}
    for key, value in state.items():
        if key.startswith(f"{GLOBAL}rng/"):
            path = key.removeprefix(f"{GLOBAL}rng/")
            if path not in generators:
                raise KeyError(f"state has generator '{path}', which this env lacks")
            generators[path].set_state(torch.from_numpy(np.asarray(value[0], dtype=np.uint8)))
        elif key == f"{GLOBAL}common_step_counter":
            env.common_step_counter = int(value[0])
        elif key.startswith(f"{GLOBAL}curriculum/"):
            name, field_name = key.removeprefix(f"{GLOBAL}curriculum/").split("/")
            curriculum.setdefault(decode_key(name), {})[decode_key(field_name)] = float(value[0])
    if curriculum:
        env.curriculum_manager.load_state_dict(curriculum)


def states_equal(
    a: dict[str, np.ndarray], b: dict[str, np.ndarray], ignore: Sequence[str] = ()
) -> tuple[bool, float, list[str]]:
    """Bitwise comparison of two states on their common keys.

    Returns (equal, max |difference| over float entries, keys that differ)."""
    keys = sorted(set(a) & set(b))
    differ, worst = [], 0.0
    for key in keys:
        if any(key.startswith(p) for p in ignore):
            continue
        x, y = np.asarray(a[key]), np.asarray(b[key])
        if x.shape != y.shape:
            differ.append(key)
            worst = float("inf")
            continue
        same = (
            np.array_equal(
                np.ascontiguousarray(x).view(np.uint8), np.ascontiguousarray(y).view(np.uint8)
            )
            and x.dtype == y.dtype
        )
        if not same:
            differ.append(key)
            if x.dtype.kind in "fiub":
                d = np.abs(x.astype(np.float64) - y.astype(np.float64))
                worst = max(worst, float(np.nanmax(d)) if d.size else 0.0)
    return not differ, worst, differ
