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
  `reward/...`, `command/...`, `event/...`, `agent/...`: every per-world torch tensor
  (leading dimension num_envs) reachable from those components' attributes, dicts and
  lists (held commands, lag and delay lines, PWM phase, sensor held/delayed values,
  biases and walks, sample counters, command targets and timers, last actions,
  observation history, term states such as `held_for`, node outputs and states, ...).
  A delay line is stored oldest sample first, so its global write head does not matter;
* `global/...`: state shared by all worlds, repeated in each row: the torch random
  generators found in those components (`global/rng/...`, as uint8 bytes), the
  environment's step counter and the curriculum terms' `state_dict()`.

`set_state` writes the worlds' rows back (creating dict entries or attributes that do
not exist yet, e.g. agent-node outputs before the first step); `restore_globals` (default:
when every world of the env is restored) also restores the global part from row 0.

Not captured: Python scalars other than those above (configuration, not state), the
default torch generator (nothing in a step draws from it), model fields that
`set_const()` derived, renderer state, and anything of the 'warp' backend (the
capture supports the 'cpu' backend, where restoring is bit-exact).

`orbitlab.demos.layout.StateLayout` flattens a state into one float64 vector per world
(robomimic's `states`) and back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from orbitlab.actuators.delay import DelayLine
from orbitlab.sim.backends.cpu import CpuBackend

GLOBAL = "global/"
_SKIP_ATTRS = frozenset(
    {
        "cfg",
        "env",
        "_env",
        "ctx",
        "view",
        "scene",
        "data",
        "model",
        "mj_model",
        "device",
        "name",
        "_rows",
        "_renderer",
        "_renderer_camera",
        "groups",
        "params",
    }
)
_MAX_DEPTH = 6


# ------------------------------------------------------------------- paths
def _enc(component: Any) -> str:
    """One path component: a str/int as text ('/' and '%' escaped), a tuple as 't:<json>'."""
    if isinstance(component, tuple):
        text = "t:" + json.dumps(list(component))
    else:
        text = str(component)
    return text.replace("%", "%25").replace("/", "%2F")


def _dec(text: str) -> str:
    return text.replace("%2F", "/").replace("%25", "%")


def _child(container: Any, component: str) -> Any:
    """The child of `container` named by an encoded component (None if absent)."""
    comp = _dec(component)
    if isinstance(container, dict):
        key: Any = tuple(json.loads(comp[2:])) if comp.startswith("t:") else comp
        return container.get(key)
    if isinstance(container, (list, tuple)):
        i = int(comp)
        return container[i] if i < len(container) else None
    return getattr(container, comp, None)


def _assign(container: Any, component: str, value: Any) -> None:
    comp = _dec(component)
    if isinstance(container, dict):
        container[tuple(json.loads(comp[2:])) if comp.startswith("t:") else comp] = value
    elif isinstance(container, list):
        container[int(comp)] = value
    else:
        setattr(container, comp, value)


# ------------------------------------------------------------------- roots
def _component_roots(env) -> dict[str, tuple[Any, tuple[str, ...] | None]]:
    """Top-level components: name -> (object, attributes to walk or None for all)."""
    roots: dict[str, tuple[Any, tuple[str, ...] | None]] = {
        "env": (env, ("episode_length_buf", "agent_inputs", "obs_buf")),
        "view": (env.scene.view, ("step_count", "episode")),
        "actuator_context": (env.scene.actuator_context, ("external", "actuator_wrench")),
        "actuators": (env.scene.actuators, None),
        "sensors": (env.scene.sensors, None),
        "action": (env.action_manager, ("action", "prev_action", "terms")),
        "observation": (env.observation_manager, ("_history", "_fresh", "generator")),
        "termination": (env.termination_manager, ("terminated", "time_outs", "last", "_funcs")),
        "reward": (env.reward_manager, ("episode_sums", "reward", "_funcs")),
        "command": (env.command_manager, ("terms",)),
        "event": (env.event_manager, ("_time_left", "_funcs", "generator")),
    }
    if env.agent is not None:
        roots["agent"] = (env.agent, ("step_count", "nodes"))
    return roots


def _foreign_ids(env) -> set[int]:
    """Objects a walk must not enter from elsewhere (they are walked as their own root)."""
    scene = env.scene
    objs = [
        env,
        scene,
        scene.view,
        scene.actuator_context,
        scene.data,
        env.action_manager,
        env.observation_manager,
        env.termination_manager,
        env.reward_manager,
        env.command_manager,
        env.event_manager,
        env.curriculum_manager,
    ]
    objs += list(scene.actuators.values()) + list(scene.sensors.values())
    objs += list(scene.entities.values()) + list(scene.markers.values())
    return {id(o) for o in objs}


def _walkable(obj: Any) -> bool:
    module = type(obj).__module__ or ""
    return module.startswith(("orbitlab", "tasks")) and hasattr(obj, "__dict__")


@dataclass
class _Leaf:
    path: str
    kind: str  # 'row' (tensor or array, leading dim N), 'delay' or 'rng'
    obj: Any


def _walk(
    obj: Any,
    path: str,
    n: int,
    foreign: set[int],
    seen: set[int],
    attrs: Sequence[str] | None = None,
    depth: int = 0,
) -> Iterator[_Leaf]:
    """Every state leaf under `obj` (tensors with leading dim n, delay lines, generators)."""
    if isinstance(obj, DelayLine):
        if obj.steps:
            yield _Leaf(path, "delay", obj)
        return
    if isinstance(obj, torch.Generator):
        yield _Leaf(path, "rng", obj)
        return
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        if obj.ndim >= 1 and obj.shape[0] == n:
            yield _Leaf(path, "row", obj)
        return
    if depth > _MAX_DEPTH:
        return
    if isinstance(obj, dict):
        items = list(obj.items())
    elif isinstance(obj, (list, tuple)):
        items = list(enumerate(obj))
    elif _walkable(obj) and (depth == 0 or id(obj) not in foreign):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        names = attrs if attrs is not None else [k for k in vars(obj) if k not in _SKIP_ATTRS]
        items = [(k, getattr(obj, k, None)) for k in names]
    else:
        return
    for key, value in items:
        if value is None or callable(value) and not _walkable(value):
            continue
        yield from _walk(value, f"{path}/{_enc(key)}", n, foreign, seen, depth=depth + 1)


def _leaves(env) -> Iterator[_Leaf]:
    n, foreign = env.num_envs, _foreign_ids(env)
    seen: set[int] = set()
    for name, (obj, attrs) in _component_roots(env).items():
        if isinstance(obj, dict):  # actuator groups, sensors: each is a root of its own
            for key, value in obj.items():
                yield from _walk(value, f"{name}/{_enc(key)}", n, foreign, seen)
        else:
            yield from _walk(obj, name, n, foreign, seen, attrs=attrs)


# --------------------------------------------------------------- helpers
def _ids(env, env_ids) -> np.ndarray:
    if env_ids is None:
        return np.arange(env.num_envs)
    ids = torch.as_tensor(env_ids).reshape(-1).cpu().numpy().astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= env.num_envs):
        raise ValueError(f"env ids must be in [0, {env.num_envs}), got {ids.tolist()}")
    return ids


def _np(x: torch.Tensor | np.ndarray) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _delay_order(line: DelayLine) -> torch.Tensor:
    """Buffer slots oldest first (the slot at `head` is the oldest)."""
    size = line.steps + 1
    return (torch.arange(size) + line.head) % size


def _cpu_backend(env) -> CpuBackend:
    backend = env.scene.data.backend
    if not isinstance(backend, CpuBackend):
        raise NotImplementedError("env state capture supports the 'cpu' backend only")
    return backend


def _batch(env):
    return _cpu_backend(env).batch


def _orbit_arrays(env) -> dict[str, np.ndarray]:
    return env.scene.data.world_arrays()


# ------------------------------------------------------------------- API
def get_state(
    env, env_ids: Sequence[int] | torch.Tensor | None = None, rng: bool = True
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
            line = leaf.obj
            buf = line.buffer[_delay_order(line).to(line.buffer.device)][
                :, tids.to(line.buffer.device)
            ]
            out[leaf.path] = np.moveaxis(_np(buf), 0, 1).copy()
        elif rng:
            state = _np(leaf.obj.get_state()).astype(np.uint8)
            out[f"{GLOBAL}rng/{leaf.path}"] = np.broadcast_to(state, (k, *state.shape)).copy()
    out[f"{GLOBAL}common_step_counter"] = np.full(k, env.common_step_counter, dtype=np.int64)
    for name, term_state in env.curriculum_manager.state_dict().items():
        for key, value in term_state.items():
            out[f"{GLOBAL}curriculum/{_enc(name)}/{_enc(key)}"] = np.full(k, float(value))
    return out


def set_state(
    env,
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
        batch.bind(name)
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


def _resolve_parent(env, path: str) -> tuple[Any, str]:
    parts = path.split("/")
    if parts[0] not in _component_roots(env):
        raise KeyError(f"state key '{path}': no component '{parts[0]}' in this env")
    obj: Any = _component_roots(env)[parts[0]][0]
    for part in parts[1:-1]:
        if obj is None:
            break
        obj = _child(obj, part)
    return obj, parts[-1]


def _set_components(env, state: dict[str, np.ndarray], ids: np.ndarray) -> list[str]:
    special = ("mujoco/", "orbit/", GLOBAL)
    skipped = []
    for path, value in state.items():
        if path.startswith(special):
            continue
        parent, leaf = _resolve_parent(env, path)
        if parent is None:  # inside an object this env has not created yet
            skipped.append(path)
            continue
        target = _child(parent, leaf)
        if isinstance(target, DelayLine):
            buf = target.buffer
            order = _delay_order(target).to(buf.device)
            rows = torch.as_tensor(np.moveaxis(value, 1, 0), dtype=buf.dtype, device=buf.device)
            idx = torch.as_tensor(ids, device=buf.device)
            buf[order[:, None], idx[None, :]] = rows
            continue
        if isinstance(target, np.ndarray):
            target[ids] = value
            continue
        tensor_value = torch.from_numpy(np.ascontiguousarray(value))
        if not (
            isinstance(target, torch.Tensor)
            and target.shape[1:] == tensor_value.shape[1:]
            and target.shape[0] == env.num_envs
        ):
            device = env.device
            target = torch.zeros(
                (env.num_envs, *tensor_value.shape[1:]), dtype=tensor_value.dtype, device=device
            )
            _assign(parent, leaf, target)
        target[torch.as_tensor(ids, device=target.device)] = tensor_value.to(
            device=target.device, dtype=target.dtype
        )
    return skipped


def _set_globals(env, state: dict[str, np.ndarray]) -> None:
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
            curriculum.setdefault(_dec(name), {})[_dec(field_name)] = float(value[0])
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
