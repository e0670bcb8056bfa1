"""orbitlab.orbit.fastmath.sincos against numpy's libm and 40-digit mpmath."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
import warp as wp

from orbitlab.orbit.fastmath import sincos

wp.set_module_options({"enable_backward": False})

EPS = np.finfo(np.float64).eps  # 2.22e-16


@wp.kernel
def _sincos_kernel(
    x: wp.array(dtype=wp.float64), s: wp.array(dtype=wp.float64), c: wp.array(dtype=wp.float64)
):
    i = wp.tid()
    si, ci = sincos(x[i])
    s[i] = si
    c[i] = ci


def _sincos(x) -> tuple[np.ndarray, np.ndarray]:
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float64).ravel())
    s, c = np.zeros_like(x), np.zeros_like(x)
    wp.launch(
        _sincos_kernel,
        dim=len(x),
        device="cpu",
        inputs=[
            wp.array(x, dtype=wp.float64),
            wp.array(s, dtype=wp.float64, copy=False),
            wp.array(c, dtype=wp.float64, copy=False),
        ],
    )
    return s, c


def _special_points() -> np.ndarray:
    k = np.arange(-63662, 63663)  # multiples of pi/2 up to ~1e5 rad
    return np.concatenate(
        [
            [
                0.0,
                -0.0,
                np.pi / 4,
                -np.pi / 4,
                np.pi / 2,
                -np.pi / 2,
                np.pi,
                -np.pi,
                3 * np.pi / 4,
                -3 * np.pi / 4,
                1e-300,
                -1e-300,
                5e-324,
                1e-20,
                1e-8,
                -1e-8,
            ],
            k * (np.pi / 2),
            k[::97] * (np.pi / 2) + np.pi / 4,  # the quadrant boundaries of the reduction
            [np.nextafter(np.pi / 4, 0.0), np.nextafter(np.pi / 4, 1.0), 1e5, -1e5, 1e6, -1e6],
        ]
    )


@pytest.fixture(scope="module")
def uniform_points() -> np.ndarray:
    rng = np.random.default_rng(2024)
    return np.concatenate(
        [
            rng.uniform(-1e6, 1e6, 100_000),
            rng.uniform(-1e3, 1e3, 20_000),
            rng.uniform(-4.0, 4.0, 20_000),
        ]
    )


def test_sincos_matches_numpy_to_a_few_ulp_over_plus_minus_1e6(uniform_points) -> None:
    x = uniform_points
    s, c = _sincos(x)
    err = np.maximum(np.abs(s - np.sin(x)), np.abs(c - np.cos(x)))
    small = np.abs(x) < 1e3
    # brief's realistic bounds (2e-15 for |x| < 1e3, 1e-12 up to 1e6) ...
    assert err[small].max() <= 2e-15
    assert err.max() <= 1e-12
    # ... and what the three-part Cody-Waite reduction actually guarantees: ~1 ulp of the
    # reduced argument plus <= 1 ulp from each of sincos and libm, i.e. <= 4.5 ulp of 1
    # (a float32-rounded coefficient or reduction constant would show at ~1e-9)
    assert err.max() <= 1e-15


def test_sincos_at_special_points() -> None:
    x = _special_points()
    s, c = _sincos(x)
    # multiples of pi/2 give sin/cos of the float's offset from the true multiple (~1e-12
    # at 1e5): absolute agreement at the few-ulp level shows the reduction is exact there
    np.testing.assert_allclose(s, np.sin(x), rtol=0.0, atol=1e-15)
    np.testing.assert_allclose(c, np.cos(x), rtol=0.0, atol=1e-15)
    # at zero crossings libm is correctly rounded and tiny; demand relative agreement too
    k = np.abs(np.sin(x)) < 1e-6
    denom = np.maximum(np.abs(np.sin(x[k])), 1e-300)
    assert np.all(np.abs(s[k] - np.sin(x[k])) <= 1e-12 * denom + 5e-324)


def test_sincos_of_tiny_arguments_is_exact() -> None:
    x = np.array([1e-300, -1e-300, 5e-324, 1e-200, 1e-20, 0.0])
    s, c = _sincos(x)
    # sin x = x and cos x = 1 in float64 for |x| < 1e-8: bit-exact, no underflow trouble
    np.testing.assert_array_equal(s, x)
    np.testing.assert_array_equal(c, np.ones_like(x))


def test_sincos_satisfies_pythagorean_identity(uniform_points) -> None:
    s, c = _sincos(np.concatenate([uniform_points, _special_points()]))
    # two results each within ~1 ulp, squared and summed in float64: <= ~4 eps/2 ~ 4.4e-16
    assert np.abs(s * s + c * c - 1.0).max() <= 1e-15


def test_sincos_is_odd_and_even_bit_exactly(uniform_points) -> None:
    x = uniform_points
    s_pos, c_pos = _sincos(x)
    s_neg, c_neg = _sincos(-x)
    # round-half-away reduction and odd/even polynomials are symmetric in exact arithmetic
    # and in every rounding step: sin(-x) == -sin(x), cos(-x) == cos(x) bit for bit
    np.testing.assert_array_equal(s_neg, -s_pos)
    np.testing.assert_array_equal(c_neg, c_pos)


def test_sincos_against_40_digit_reference() -> None:
    # independent of the platform libm: mpmath at 40 digits, 2000 points
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-1e6, 1e6, 1000), rng.uniform(-10.0, 10.0, 1000)])
    s, c = _sincos(x)
    mp.mp.dps = 40
    s_ref = np.array([float(mp.sin(mp.mpf(v))) for v in x])
    c_ref = np.array([float(mp.cos(mp.mpf(v))) for v in x])
    # correctly rounded reference: the library's own error alone, <= 2 ulp of 1 (4.4e-16)
    assert np.abs(s - s_ref).max() <= 2 * EPS
    assert np.abs(c - c_ref).max() <= 2 * EPS
