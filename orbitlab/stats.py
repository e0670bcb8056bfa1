"""Confidence intervals of evaluation scores: Wilson's for success rates, a percentile
bootstrap for mean errors."""

from __future__ import annotations

import math

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
"""Resamples of `bootstrap_mean_interval` (the 2.5 and 97.5 percentiles move by well under
a tenth of the interval's width between generator seeds at this count)."""


def wilson_interval(successes: float, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson's score interval of a success rate (95 % for the default z), as (low, high).

    p = k / n; centre (p + z^2 / 2n) / (1 + z^2 / n); half-width
    z sqrt(p (1 - p) / n + z^2 / 4n^2) / (1 + z^2 / n). (0, 1) for no trials."""
    if trials <= 0:
        return 0.0, 1.0
    p, n = successes / trials, float(trials)
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap_mean_interval(
    values, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap 95 % interval of the mean of `values` (a 1-D array of the
    worlds' finite final errors; non-finite ones are left out), as (low, high): the 2.5 and
    97.5 percentiles of the means of `resamples` resamples with replacement, drawn from a
    generator seeded with `seed` (the same values give the same interval). (nan, nan) for
    no value."""
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)
