"""Branch-free float64 sine and cosine for the per-world environment.

`wp.sin`/`wp.cos` call the C library once each and do not vectorise; the
environment needs six of them per world and step. `sincos` evaluates both with
one Cody-Waite reduction by pi/2 (three-part constant, exact for |x| < 2^20 rad)
and Taylor polynomials on [-pi/4, pi/4] (truncation below 1e-19), so it agrees
with the C library to a few ulp over the angles the models use (|x| < 1e6 rad).
"""

from __future__ import annotations

from math import factorial

from orbitlab.quiet import wp  # Warp, started quietly

f64 = wp.float64
# Taylor coefficients 1/n!, computed here in float64: an arithmetic expression
# inside a kernel's f64(...) would be folded in float32.
_INV_FACT = [1.0 / factorial(n) for n in range(19)]
(_F3, _F4, _F5, _F6, _F7, _F8, _F9, _F10, _F11, _F12, _F13, _F14, _F15, _F16, _F17, _F18) = (
    _INV_FACT[3:19]
)

_TWO_OVER_PI = 0.63661977236758134308
# pi/2 split so that k * _PIO2_A and k * _PIO2_B are exact for |k| < 2^20.
_PIO2_A = 1.57079632673412561417e00
_PIO2_B = 6.07710050630396597660e-11
_PIO2_C = 2.02226624879595063154e-21


@wp.func
def _sin_poly(r: f64) -> f64:
    """sin r for |r| <= pi/4: Taylor series through r^17, in Estrin's scheme.

    Estrin's pairing halves the chain of dependent multiply-adds of Horner's
    rule, which is what bounds the speed of this scalar code.
    """
    z = r * r
    z2 = z * z
    z4 = z2 * z2
    p01 = -f64(_F3) + f64(_F5) * z
    p23 = -f64(_F7) + f64(_F9) * z
    p45 = -f64(_F11) + f64(_F13) * z
    p67 = -f64(_F15) + f64(_F17) * z
    p = (p01 + z2 * p23) + z4 * (p45 + z2 * p67)
    return r + r * z * p


@wp.func
def _cos_poly(r: f64) -> f64:
    """cos r for |r| <= pi/4: Taylor series through r^18, in Estrin's scheme."""
    z = r * r
    z2 = z * z
    z4 = z2 * z2
    p01 = f64(_F4) - f64(_F6) * z
    p23 = f64(_F8) - f64(_F10) * z
    p45 = f64(_F12) - f64(_F14) * z
    p67 = f64(_F16) - f64(_F18) * z
    p = (p01 + z2 * p23) + z4 * (p45 + z2 * p67)
    return f64(1.0) - f64(0.5) * z + z2 * p


@wp.func
def sincos(x: f64):
    """(sin x, cos x) for |x| < 1e6 rad, to a few ulp of the C library."""
    k = wp.round(x * f64(_TWO_OVER_PI))
    r = ((x - k * f64(_PIO2_A)) - k * f64(_PIO2_B)) - k * f64(_PIO2_C)
    s = _sin_poly(r)
    c = _cos_poly(r)
    q = int(k - f64(4.0) * wp.floor(k * f64(0.25)))  # quadrant 0..3
    if q == 1:
        return c, -s
    if q == 2:
        return -s, -c
    if q == 3:
        return -c, s
    return s, c
