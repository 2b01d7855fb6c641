"""Confidence intervals of judge metrics: the one home for eval, arena and probe intervals.

A percentile bootstrap (Efron & Tibshirani 1993) has zero width whenever every resample is the
same -- one pair, or 10 of 10 correct -- and so claims certainty exactly where the data say least.
Hence:

* **Proportions** (a fraction of successes out of n): the Wilson score interval (Wilson 1927,
  "Probable inference, the law of succession, and statistical inference", JASA 22(158)), in closed
  form: (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n) with z the normal quantile
  (Wilson 1927, Eq. 1; the values of ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``,
  without importing scipy.stats, ~0.6 s of every command's start-up); ``method="exact"`` gives the
  Clopper-Pearson interval (Clopper & Pearson 1934, Biometrika 26(4)) through scipy. Both have positive width
  for every n >= 1 (10/10 -> [0.72, 1.0]).
* **Means of values in [0, 1]** (a pair's accuracy over its two orders, an arena prompt's
  weighted score): the same Wilson interval, with the mean as the proportion and n the number of
  independent units (pairs, prompts) -- conservative, because a [0, 1]-valued variable with mean
  mu has variance at most mu (1 - mu), the Bernoulli variance the interval assumes. With unequal
  unit weights n is Kish's effective sample size (Kish 1965, "Survey Sampling", Sec. 11.7):
  (sum w)^2 / sum w^2. A non-integer n is rounded down and a non-integer count widened to the
  counts below and above it, so the interval only gets wider.
* **Other statistics** (Bradley-Terry scores): percentile bootstrap, reported with n and a
  warning when n is below :data:`MIN_BOOTSTRAP_N` or the replicates are all equal (then no
  interval is given: :func:`bootstrap_summary`).
"""

from __future__ import annotations

import math
from typing import Literal, Sequence

import numpy as np

#: Fewer independent units than this and a bootstrap interval is reported with a warning
#: (the percentile bootstrap is unreliable for small n; Efron & Tibshirani 1993, Sec. 13.7).
MIN_BOOTSTRAP_N = 20

Method = Literal["wilson", "exact"]


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def proportion_ci(successes: int, n: int, confidence: float = 0.95, method: Method = "wilson"
                  ) -> tuple[float, float] | None:
    """Confidence interval of a binomial proportion ``successes / n``.

    Args:
        successes: Number of successes, 0 <= successes <= n.
        n: Number of trials.
        confidence: Interval mass, e.g. 0.95.
        method: ``"wilson"`` (Wilson score interval) or ``"exact"`` (Clopper-Pearson).

    Returns:
        ``(low, high)`` in [0, 1], of positive width for n >= 1; None when ``n == 0``.

    Raises:
        ValueError: counts out of range, ``confidence`` not in (0, 1), an unknown method.
    """
    _check_confidence(confidence)
    if method not in ("wilson", "exact"):
        raise ValueError(f"method must be 'wilson' or 'exact', got {method!r}")
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return None
    if method == "wilson":
        return _wilson(int(successes), int(n), confidence)
    from scipy.stats import binomtest

    ci = binomtest(int(successes), int(n)).proportion_ci(confidence_level=confidence, method=method)
    return float(ci.low), float(ci.high)


def _wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """Wilson score interval of k successes in n >= 1 trials (Wilson 1927, Eq. 1), clipped to [0, 1]."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p, z2 = k / n, z * z
    denom = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (0.0 if k == 0 else max(0.0, center - half)), (1.0 if k == n else min(1.0, center + half))


def mean_ci(values: Sequence[float] | np.ndarray, confidence: float = 0.95,
            weights: Sequence[float] | np.ndarray | None = None, method: Method = "wilson"
            ) -> tuple[float, float] | None:
    """Conservative confidence interval of the (weighted) mean of independent values in [0, 1].

    The Wilson (or Clopper-Pearson) interval of :func:`proportion_ci` with the mean as the
    proportion and n = Kish's effective sample size of ``weights`` (the number of values when
    unweighted); see the module docstring for why this covers any [0, 1]-valued unit.

    Args:
        values: One value in [0, 1] per independent unit, shape (n,) (e.g. per-pair accuracy).
        confidence: Interval mass.
        weights: Non-negative weight per unit, shape (n,); None = equal weights.
        method: ``"wilson"`` or ``"exact"``.

    Returns:
        ``(low, high)`` bracketing the weighted mean, or None when there is no unit of positive
        weight.

    Raises:
        ValueError: a value outside [0, 1] or not finite, negative or mismatched weights,
            ``confidence`` not in (0, 1).
    """
    _check_confidence(confidence)
    v = np.asarray(values, dtype=float)
    w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=float)
    if v.shape != w.shape or v.ndim != 1:
        raise ValueError(f"values and weights must be 1-D of one length, got {v.shape} and {w.shape}")
    if not np.all(np.isfinite(v)) or np.any((v < 0) | (v > 1)):
        raise ValueError("mean_ci: every value must be a finite number in [0, 1]")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("mean_ci: weights must be finite and >= 0")
    total = float(w.sum())
    if v.size == 0 or total <= 0:
        return None
    mean = float((w * v).sum() / total)
    n = max(1, math.floor(total**2 / float((w**2).sum()) + 1e-9))
    k = mean * n
    lo_k, hi_k = math.floor(k + 1e-9), math.ceil(k - 1e-9)
    low = proportion_ci(min(lo_k, n), n, confidence, method)[0]  # type: ignore[index]
    high = proportion_ci(max(hi_k, 0), n, confidence, method)[1]  # type: ignore[index]
    return low, high


def percentile_interval(replicates: Sequence[float] | np.ndarray, confidence: float = 0.95
                        ) -> tuple[float, float] | None:
    """Percentile interval of bootstrap replicates (Efron & Tibshirani 1993, Sec. 13.3); None
    when there are none."""
    _check_confidence(confidence)
    arr = np.asarray(replicates, dtype=float)
    if arr.size == 0:
        return None
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(arr, [alpha, 1 - alpha])
    return float(lo), float(hi)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Percentile-bootstrap confidence interval of a mean (Efron & Tibshirani 1993).

    Zero width when all values are equal (or n = 1): for values in [0, 1] use :func:`mean_ci`.

    Args:
        values: Per-unit values, shape (n,).
        n_resamples: Bootstrap resamples (each draws n values with replacement).
        seed: Seed of numpy's ``default_rng``; the same inputs give the same interval.
        confidence: Interval mass, e.g. 0.95.

    Returns:
        ``(low, high)`` or ``None`` when ``values`` is empty.

    Raises:
        ValueError: ``n_resamples < 1`` or ``confidence`` not in (0, 1).
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    _check_confidence(confidence)
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.size, size=(n_resamples, arr.size))
    return percentile_interval(arr[idx].mean(axis=1), confidence)


def bootstrap_summary(replicates: Sequence[float] | np.ndarray, n: int, confidence: float = 0.95,
                      min_n: int = MIN_BOOTSTRAP_N) -> tuple[list[float] | None, str | None]:
    """A bootstrap interval with the caveat it needs.

    Args:
        replicates: The statistic on each bootstrap resample.
        n: Independent units resampled (e.g. prompts).
        confidence: Interval mass.
        min_n: Below this many units the interval comes with a warning.

    Returns:
        ``(interval or None, warning or None)``: no interval when there are no replicates or they
        are all equal (a zero-width interval would claim certainty), with a warning saying so; a
        warning naming n when ``n < min_n``.
    """
    ci = percentile_interval(replicates, confidence)
    if ci is None:
        return None, f"no bootstrap interval (n={n})"
    if ci[1] - ci[0] <= 1e-12 * max(1.0, abs(ci[0])):
        return None, f"every bootstrap resample gave the same value (n={n}): no interval"
    if n < min_n:
        return list(ci), f"only n={n} units resampled (< {min_n}): the bootstrap interval is unreliable"
    return list(ci), None


__all__ = ["MIN_BOOTSTRAP_N", "bootstrap_ci", "bootstrap_summary", "mean_ci", "percentile_interval", "proportion_ci"]
