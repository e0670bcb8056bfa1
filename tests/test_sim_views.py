"""SimView's per-state cache: shared quantities are computed once per state and never stale.

Every check compares a cached value with the same quantity computed afresh, exactly
(`torch.equal`): a cache hit and a recomputation run the same arithmetic. A state ends at
`invalidate()` (after steps, resets, state edits and every event term).
"""

from __future__ import annotations

import torch

from orbitlab.scene import spacecraft as library
from orbitlab.scene.scene import Scene, SceneCfg
from orbitlab.sensors.noise import episode_hash, gaussian, gaussian_from
from orbitlab.sensors.rotations import quat_from_matrix, quat_to_matrix


def _scene() -> Scene:
    return Scene(
        SceneCfg(
            num_envs=4,
            entities={
                "chaser": library.docking_chaser(pos_m=(10.0, 0.0, 0.0)),
                "target": library.docking_target(),
            },
        )
    )


def _fresh(scene: Scene, body: int):
    view = scene.view
    view.invalidate()
    return view.hill(), view.body_rotation(body), view.body_quaternion(body)


def _assert_fresh(scene: Scene, body: int) -> None:
    view = scene.view
    (C, w), Q, q = view.hill(), view.body_rotation(body), view.body_quaternion(body)
    (C0, w0), Q0, q0 = _fresh(scene, body)
    assert torch.equal(C, C0) and torch.equal(w, w0)
    assert torch.equal(Q, Q0) and torch.equal(q, q0)


def test_shared_quantities_are_computed_once_per_state():
    scene = _scene()
    view, body = scene.view, scene.entities["chaser"].root_body
    assert view.hill()[0] is view.hill()[0]
    assert view.body_rotation(body) is view.body_rotation(body)
    assert view.frames()["Q"] is view.frames()["Q"]
    C = view.hill()[0]
    scene.step()
    assert view.hill()[0] is not C  # a physics step ends the state
    _assert_fresh(scene, body)


def test_cache_follows_resets_and_state_edits():
    scene = _scene()
    view, chaser = scene.view, scene.entities["chaser"]
    body = chaser.root_body
    scene.step(3)
    before = view.body_rotation(body).clone()
    scene.reset(torch.tensor([1, 2]))
    _assert_fresh(scene, body)
    assert not torch.equal(view.body_rotation(body)[1], before[1])  # back to the start
    q = quat_to_matrix(torch.tensor([0.5, 0.5, 0.5, 0.5], dtype=torch.float64))
    chaser.set_root_state(torch.tensor([0]), quat=quat_from_matrix(q)[None])
    assert torch.allclose(view.body_rotation(body)[0], q, atol=1e-15)
    _assert_fresh(scene, body)


def test_a_write_through_a_live_view_is_seen_after_invalidate():
    """Writes through live views (or by MuJoCo, Warp, numpy) end the state at `invalidate()`;
    every event term is followed by one (the event manager calls it)."""
    scene = _scene()
    view, chaser = scene.view, scene.entities["chaser"]
    body = chaser.root_body
    old = view.body_rotation(body).clone()
    chaser.data.root_quat_w[:] = torch.tensor([0.0, 1.0, 0.0, 0.0])  # 180 deg about x
    view.invalidate()
    Q = view.body_rotation(body)
    assert not torch.equal(Q, old)
    assert torch.equal(Q[0], torch.diag(torch.tensor([1.0, -1.0, -1.0], dtype=Q.dtype)))
    C = view.hill()[0]
    view.array("R").mul_(1.001)  # the chief's position
    view.invalidate()
    assert view.hill()[0] is not C
    _assert_fresh(scene, body)


def test_cached_values_work_under_inference_mode():
    """Training collects rollouts under torch.inference_mode: the cache must work there."""
    scene = _scene()
    body = scene.entities["chaser"].root_body
    with torch.inference_mode():
        scene.step()
        _assert_fresh(scene, body)
        scene.reset(torch.tensor([0, 2]))
        _assert_fresh(scene, body)


def test_kept_noise_hashes_follow_resets_and_reseeds():
    """Sensors keep each episode's noise hash across steps; a reset or reseed renews it."""
    scene = _scene()
    gyro = scene.sensors["chaser/gyro"]
    view = scene.view

    def expected(stream: int) -> torch.Tensor:
        return episode_hash(gyro.noise_key, stream, view.episode)

    scene.step(2)
    assert torch.equal(gyro._episode_hash(0, slice(None)), expected(0))
    scene.reset(torch.tensor([1, 3]))
    assert torch.equal(gyro._episode_hash(0, slice(None)), expected(0))
    gyro.reseed(7)
    assert torch.equal(gyro._episode_hash(1, slice(None)), expected(1))
    key, ep, k = gyro.noise_key, view.episode, gyro.samples
    assert torch.equal(gaussian_from(expected(0), k, 3), gaussian(key, 0, ep, k, 3))
