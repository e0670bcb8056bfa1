"""Kernel terms (`orbitlab.fw.terms`, `orbitlab.envs.mdp.kernel_terms`): the reward and
termination managers fuse them into one launch, and an env built with them gives the same
float32 rewards, flags and episode sums, step for step, as the same env built with their
torch twins (`orbitlab.envs.mdp`), on these rollouts. The unweighted float64 values agree to
the last bit or two (see the evaluation test)."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pytest
import torch
from kernel_twins import torch_twin
from torch.overrides import TorchFunctionMode

from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.envs.mdp import kernel_terms as kt
from orbitlab.fw.terms import TermBuild
from orbitlab_tasks import task_entry

NUM_ENVS = 24


def _env(task: str, twin: bool, keep: tuple[str, ...] = (), **changes) -> ManagerBasedRLEnv:
    cfg = load_cfg(task_entry(task).env_cfg, num_envs=NUM_ENVS)
    cfg = dataclasses.replace(cfg, **changes)
    return ManagerBasedRLEnv(torch_twin(cfg, keep) if twin else cfg)


def _shake(env: ManagerBasedRLEnv) -> None:
    """Worlds 0-5 at rest (they succeed after the hold), 6-7 spinning too fast (they end at
    once), the others as drawn."""
    sat = env.scene.entities["sat"]
    rates = torch.zeros((8, 3), dtype=torch.float64)
    rates[6:, 2] = math.radians(40.0)
    sat.set_root_state(torch.arange(8), ang_vel_body=rates)


def _run(envs, steps: int, edit=None) -> dict[str, int]:
    """Step `envs` with the same random actions; assert equal rewards, ends, flags and sums;
    count the ends."""
    gen = torch.Generator().manual_seed(0)
    for env in envs:
        env.reset(seed=3)
        _shake(env)
    counts = {"terminated": 0, "truncated": 0}
    for step in range(steps):
        if edit is not None and step == steps // 2:
            for env in envs:
                edit(env)
        action = 2 * torch.rand((NUM_ENVS, envs[0].action_manager.total_dim), generator=gen) - 1
        outs = [env.step(action) for env in envs]
        (obs, reward, terminated, truncated, _), other = outs[0], outs[1]
        assert torch.equal(reward, other[1]), step
        assert torch.equal(terminated, other[2]) and torch.equal(truncated, other[3]), step
        assert torch.equal(obs["policy"], other[0]["policy"]), step
        for name in envs[0].termination_manager.last:
            a, b = (env.termination_manager.last[name] for env in envs)
            assert torch.equal(a, b), (step, name)
        for name in envs[0].reward_manager.episode_sums:
            a, b = (env.reward_manager.episode_sums[name] for env in envs)
            assert torch.equal(a, b), (step, name)
        counts["terminated"] += int(terminated.sum())
        counts["truncated"] += int(truncated.sum())
    return counts


@pytest.mark.parametrize("task", ["Detumble-RW", "Detumble-MTQ"])
def test_kernel_terms_step_as_their_torch_twins(task):
    """Rewards (rate, rate_fine, effort; MTQ's potential-based progress), the hold timer of
    success and the spin-up limit, over episodes that succeed, fail and time out."""
    envs = [
        _env(task, twin=False, episode_length_s=150.0),
        _env(task, twin=True, episode_length_s=150.0),
    ]
    assert envs[0].reward_manager.term_state is not None  # the kernel path is the one tested
    assert envs[1].reward_manager.term_state is None
    steps = int(200.0 / envs[0].step_dt)
    counts = _run(envs, steps)
    success = envs[0].termination_manager.last["success"]
    assert counts["terminated"] >= 8 and counts["truncated"] > 0, counts
    assert success.dtype == torch.bool


def test_a_manager_mixing_kernel_and_torch_terms_sums_in_config_order():
    """Only 'rate' and 'effort' as kernel terms: the reward is summed in the config's order,
    as the torch manager sums it, so the step is the all-torch env's bit for bit."""
    envs = [
        _env("Detumble-RW", twin=True, keep=("rate", "effort")),
        _env("Detumble-RW", twin=True),
    ]
    assert envs[0].reward_manager._kernel is not None and not envs[0].reward_manager._fused
    _run(envs, 40)


def test_an_edited_weight_or_param_is_followed_at_the_next_step():
    """A curriculum's edit of a kernel term's weight and of a termination's limit."""

    def edit(env):
        env.reward_manager.terms["rate"].weight = -3.0
        env.termination_manager.terms["spun_up"].params["limit_rad_s"] = math.radians(8.0)

    envs = [_env("Detumble-RW", twin=False), _env("Detumble-RW", twin=True)]
    counts = _run(envs, 30, edit=edit)
    assert counts["terminated"] > 2  # the lowered limit ended drawn episodes too


class _CountTorch(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def test_fused_managers_run_no_torch_operation():
    """With every term a kernel term, the reward and termination managers' step is one
    launch each: no torch operation (a GPU kernel launch each) and no host read."""
    env = _env("Detumble-MTQ", twin=False)
    env.reset(seed=0)
    env.step(torch.zeros((NUM_ENVS, env.action_manager.total_dim)))
    with _CountTorch() as counter:
        env.reward_manager.compute(env.step_dt)
        env.termination_manager.compute()
    assert counter.count == 0


def test_a_kernel_term_on_an_entity_without_a_free_root_is_refused_by_name():
    entity = SimpleNamespace(name="station", handle=SimpleNamespace(free=False))
    build = TermBuild(env=None, term="reward term 'rate'")
    with pytest.raises(ValueError, match="reward term 'rate': entity 'station' has no free root"):
        kt.root_dof(entity, build)  # type: ignore[arg-type]


def test_a_stateful_term_gets_its_own_state_columns():
    build = TermBuild(env=None, term="termination term 'success'")
    assert build.state(1) == 0 and build.state(2) == 1 and build.state() == 3
    assert build.columns[-1] == "termination term 'success'/0"


def test_the_evaluation_reports_kernel_terms_as_it_reports_torch_terms():
    """`rollout` keeps each reward term's unweighted value at an episode's end: the same
    figures from the kernel terms as from their torch twins, in the config's order.

    The unweighted values are float64: torch's `vector_norm` accumulates the squares with
    fused multiply-adds, the kernels (compiled without contraction, for the same result on
    every device) without, so |omega| may differ in its last bit (measured: 12 % of random
    vectors, by one ulp), which the float32 reward rounds away and which the progress term's
    difference of two potentials shows at ~1e-12 of its value."""
    from orbitlab.envs.evaluate import rollout

    scores = [rollout(_env("Detumble-MTQ", twin=t), "random", max_steps=30) for t in (False, True)]
    kernel, twin = (score.final_terms for score in scores)
    assert list(kernel) == ["rate", "rate_fine", "effort", "progress"] == list(twin)
    for name, value in kernel.items():
        assert value == pytest.approx(twin[name], rel=1e-9, abs=1e-15), name
    assert kernel["effort"] == twin["effort"]  # a float32 sum of squares: exact


def test_kernel_terms_on_the_warp_backend(warp_device):
    """On MuJoCo-Warp (float32 state; a GPU in the GPU check) the kernel terms read the
    backend's arrays and agree with their torch twins to float32 rounding: the kernels take
    the norm in float64, torch in float32, and the progress term's difference of two
    potentials (~20 each) times its weight 25 shows that rounding at ~1e-4. The flags are
    equal."""
    pytest.importorskip("mujoco_warp")
    envs = []
    for twin in (False, True):
        cfg = load_cfg(
            task_entry("Detumble-MTQ").env_cfg, num_envs=4, backend="warp", device=warp_device
        )
        envs.append(ManagerBasedRLEnv(torch_twin(cfg) if twin else cfg))
    assert envs[0].reward_manager._fused and envs[0].termination_manager._fused
    gen = torch.Generator().manual_seed(0)
    for env in envs:
        env.reset(seed=1)
    for _ in range(5):
        action = 2 * torch.rand((4, envs[0].action_manager.total_dim), generator=gen) - 1
        (_, r0, t0, u0, _), (_, r1, t1, u1, _) = (env.step(action.to(env.device)) for env in envs)
        assert torch.allclose(r0, r1, rtol=1e-5, atol=5e-4)
        assert torch.equal(t0, t1) and torch.equal(u0, u1)


def test_a_sensor_outside_the_fused_kernel_is_refused_by_name():
    """A sensor with latency (or one the fused kernel does not run) has no columns in the
    kernel's arrays: its kernel term says so and names the torch term to use."""
    stage = SimpleNamespace(held_columns=lambda sensor: None)
    env = SimpleNamespace(scene=SimpleNamespace(sensor_stage=stage))
    build = TermBuild(env=env, term="observation term 'policy/gyro'")
    sensor_cfg = SimpleNamespace(sensor=object(), sensor_names=("gyro",))
    with pytest.raises(ValueError, match="policy/gyro': sensor 'gyro' is not a fused sensor"):
        kt.sensor_value.factory(build, sensor_cfg)  # type: ignore[arg-type]
