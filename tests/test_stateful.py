"""orbitlab.stateful: components declare their per-world state, and nothing else is state.

The declaration test walks every object an env's components hold (attributes, dicts, lists,
recursively) and finds each tensor with one row per world; each must be declared state (a key
of `get_state`) or a named constant. A new attribute that carries state between steps but is
not in its class's `state_attrs` fails here, before a replay diverges.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from orbitlab.agent.attitude import BDotCfg, BDotNode
from orbitlab.envs.state import component_roots
from orbitlab.registry import make_env, tasks
from orbitlab.stateful import Stateful, encode_key, leaves

NUM_ENVS = 5
"""A world count no element count of the shipped tasks equals (3-4 wheels, 8-16 thrusters)."""
CONSTANTS = {"worlds", "all_env_ids", "_out_torch", "due", "_everywhere"}
"""Per-world attributes that are not state: world indices, a sensor's scratch output, a
node's mask of the worlds due in the current call (set before each compute) and its
constant all-worlds mask."""
SCRATCH = {"_fused", "_step_end"}
"""Attributes holding per-call buffers, not state: the thruster allocation kernel's (every
call copies its inputs in and its results out) and the env step's end (every step rewrites
its flags and reward, and the env returns copies)."""
KERNEL_TERM_BUFFERS = {"_values", "_done", "_sums", "_flags"}
"""The kernel terms' buffers in the reward and termination managers: each step's weighted
values and done flags (rewritten every step), and the storage whose columns are the
declared `episode_sums` and `last` (views of it)."""


def _per_world_tensors(obj, path: str, seen: set[int], depth: int = 0):
    """Every (path, tensor) with NUM_ENVS rows reachable from `obj` through attributes."""
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        if obj.ndim >= 1 and obj.shape[0] == NUM_ENVS:
            yield path, obj
        return
    if depth > 6 or id(obj) in seen:
        return
    if isinstance(obj, dict):
        items = list(obj.items())
    elif isinstance(obj, (list, tuple)):
        items = list(enumerate(obj))
    elif type(obj).__module__.startswith(("orbitlab", "tasks")) and hasattr(obj, "__dict__"):
        seen.add(id(obj))
        # configuration and back-references; zero-copy views of the physics data (captured
        # as mujoco/ and orbit/ state); the view's caches of values derived from the state
        # (dropped by set_state); `extras`, the last step's report to the caller
        skip = {"cfg", "env", "_env", "ctx", "view", "scene", "data", "model", "mj_model"}
        skip |= {"_arrays", "xfrc_user", "_memo", "_episodic", "_frames", "extras"}
        items = [(k, v) for k, v in vars(obj).items() if k not in skip]
    else:
        return
    for key, value in items:
        yield from _per_world_tensors(value, f"{path}/{encode_key(key)}", seen, depth + 1)


def _variants():
    for spec in tasks():
        yield spec.name, "train"
        if spec.baseline_cfg is not None:
            yield spec.name, "baseline"


@pytest.mark.parametrize(("task", "variant"), list(_variants()))
def test_every_per_world_tensor_is_declared_state(task, variant):
    env = make_env(task, NUM_ENVS, variant=variant, seed=1)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        env.step(2 * torch.rand((NUM_ENVS, env.action_manager.total_dim), generator=gen) - 1)
    roots = component_roots(env)
    declared = {id(leaf.obj) for name, root in roots.items() for leaf in leaves(root, name, None)}
    declared |= {
        id(leaf.obj.buffer)
        for name, root in roots.items()
        for leaf in leaves(root, name, None)
        if leaf.kind == "delay"
    }
    seen: set[int] = set()
    undeclared = [
        path
        for name, component in roots.items()
        for path, tensor in _per_world_tensors(component, name, seen)
        if id(tensor) not in declared
        and path.rsplit("/", 1)[-1] not in CONSTANTS | KERNEL_TERM_BUFFERS
        and not SCRATCH & set(path.split("/"))
    ]
    assert not undeclared, f"per-world tensors outside any state_attrs: {undeclared[:8]}"


def _bdot(num_envs: int = 3) -> BDotNode:
    return BDotNode(BDotCfg(gain=1.0), "bdot", num_envs, 0.1)


def test_state_dict_is_live_and_load_writes_only_the_given_worlds():
    node = _bdot()
    state = node.state_dict()
    assert set(state) == {"held", "_fresh", "previous", "has_previous"}
    assert state["previous"] is node.previous  # live, as torch's state_dict
    other = _bdot()
    other.previous.fill_(7.0)
    node.load_state_dict({"previous": other.previous[[2]].numpy()}, env_ids=np.array([1]))
    assert torch.equal(
        node.previous[:, 0], torch.tensor([0.0, 7.0, 0.0], dtype=node.previous.dtype)
    )


def test_load_creates_outputs_a_node_has_not_made_yet():
    node = _bdot()
    assert node.held == {}
    node.load_state_dict({"held": {"mtq_dipole": np.ones((3, 3))}})
    assert node.held["mtq_dipole"].shape == (3, 3)


def test_unknown_state_is_an_error_naming_it():
    node = _bdot()
    with pytest.raises(KeyError, match="BDotNode has no state 'gain'"):
        node.load_state_dict({"gain": np.ones(3)})


def test_a_plain_component_declares_its_state():
    class Counter(Stateful):
        state_attrs = ("count",)

        def __init__(self, n: int):
            self.num_envs = n
            self.count = torch.zeros(n, dtype=torch.long)
            self.limit = torch.full((n,), 5)  # configuration: not state

    c = Counter(4)
    c.count += 2
    assert set(c.state_dict()) == {"count"}
    d = Counter(4)
    d.load_state_dict(c.state_dict())
    assert torch.equal(d.count, c.count) and d.count is not c.count


def test_a_component_loads_another_components_state_dict():
    """Every component of a stepped env, loaded into a fresh env's from its live
    `state_dict()` (nested components, delay lines, generators), reproduces its state."""
    from orbitlab.envs.state import get_state, states_equal

    a = make_env("Docking", NUM_ENVS, variant="baseline", seed=4)
    a.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        a.step(2 * torch.rand((NUM_ENVS, a.action_manager.total_dim), generator=gen) - 1)
    b = make_env("Docking", NUM_ENVS, variant="baseline", seed=4)
    b.reset()
    roots_b = component_roots(b)
    for name, component in component_roots(a).items():
        targets = roots_b[name]
        pairs = component.items() if isinstance(component, dict) else [(None, component)]
        for key, part in pairs:
            target = targets if key is None else targets[key]
            target.load_state_dict(part.state_dict())
    physics = ("mujoco/", "orbit/", "global/common_step_counter")
    equal, _, differ = states_equal(get_state(a), get_state(b), ignore=physics)
    assert equal, differ[:8]


def test_a_delay_line_is_restored_oldest_first_whatever_its_write_head():
    from orbitlab.delay_line import DelayLine

    class Latency(Stateful):
        state_attrs = ("line", "rng")

        def __init__(self, pushes: int):
            self.num_envs = 4
            self.line = DelayLine(3, (4, 2))
            self.rng = torch.Generator().manual_seed(pushes)
            for _ in range(pushes):  # leaves the write head at pushes % 4
                self.line.push(torch.rand((4, 2), generator=self.rng))

    a, b = Latency(6), Latency(1)
    assert a.line.head != b.line.head
    b.load_state_dict(a.state_dict())
    assert torch.equal(b.rng.get_state(), a.rng.get_state())
    for _ in range(5):
        x = torch.rand((4, 2), generator=a.rng)
        assert torch.equal(a.line.push(x), b.line.push(x))
