"""Where orbitlab relies on another library's internals, a test fails the day they change.

* `orbitlab.sim.launch._packed_cpu_call` packs Warp's recorded CPU launch itself (the
  kernel's argument labels `kernel.adj.args`, `Launch.params` and `Launch.hooks.forward`),
  saving ~20 us of Python per launch; warp-lang is bounded to the minor version it was
  checked on (pyproject.toml), and this test replays a packed launch against Warp's own.
* `orbitlab.rl.rsl_rl.OrbitlabOnPolicyRunner` overrides rsl-rl's `_configure_multi_gpu`
  (for CPU/gloo torchrun) and wraps `logger.init_logging_writer`; rsl-rl-lib is bounded
  to major version 5, and this test checks both names still exist where they are used.
"""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest
import warp as wp

from orbitlab.sim.launch import WorldLaunch


@wp.kernel
def _affine(offset: int, chunk: int, x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid() + offset
    y[i] = wp.float64(3.0) * x[i] + wp.float64(chunk)


def test_packed_cpu_launch_matches_warps_own_launch():
    n = 300  # two chunks of >= 128 worlds with nthread=2
    x = wp.array(np.linspace(-1.0, 1.0, n), dtype=wp.float64, device="cpu")
    y = wp.zeros(n, dtype=wp.float64, device="cpu")
    launch = WorldLaunch(_affine, n, [x, y], device="cpu", nthread=2)
    try:
        launch.launch()
    finally:
        launch.close()
    expected = wp.zeros(n, dtype=wp.float64, device="cpu")
    wp.launch(_affine, dim=150, inputs=[0, 0, x, expected], device="cpu")
    wp.launch(_affine, dim=150, inputs=[150, 1, x, expected], device="cpu")
    np.testing.assert_array_equal(y.numpy(), expected.numpy())


def test_dependency_versions_stay_in_the_checked_ranges():
    """The bounds in pyproject.toml, checked against what is installed: a newer minor
    version must be re-checked (these tests) before the bound is raised."""
    warp_minor = tuple(int(p) for p in importlib.metadata.version("warp-lang").split(".")[:2])
    assert (1, 19) <= warp_minor < (1, 20)
    mujoco_minor = tuple(int(p) for p in importlib.metadata.version("mujoco").split(".")[:2])
    assert (4, 0) <= mujoco_minor < (4, 1)


def test_rsl_rl_names_orbitlab_overrides_exist():
    runners = pytest.importorskip("rsl_rl.runners", reason="extra 'train' not installed")
    assert int(importlib.metadata.version("rsl-rl-lib").split(".")[0]) == 5
    assert callable(getattr(runners.OnPolicyRunner, "_configure_multi_gpu", None))
    from rsl_rl.utils.logger import Logger  # the runner's `logger`

    assert callable(getattr(Logger, "init_logging_writer", None))
