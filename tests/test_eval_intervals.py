"""Confidence intervals (judgerl.eval.intervals): Wilson / Clopper-Pearson, bounded means, bootstrap caveats."""

from __future__ import annotations

import numpy as np
import pytest

from judgerl.eval.intervals import MIN_BOOTSTRAP_N, bootstrap_summary, mean_ci, percentile_interval, proportion_ci


@pytest.mark.parametrize(
    ("k", "n", "method", "expected"),
    [
        (10, 10, "wilson", (0.7225, 1.0)),  # issue 22: the bootstrap said [1.0, 1.0]
        (1, 1, "wilson", (0.2065, 1.0)),  # issue 22: one pair
        (0, 1, "wilson", (0.0, 0.7935)),
        (5, 10, "wilson", (0.2366, 0.7634)),
        (10, 10, "exact", (0.6915, 1.0)),  # Clopper-Pearson: (alpha/2)^(1/n)
        (0, 20, "exact", (0.0, 0.1684)),
    ],
)
def test_proportion_ci_values(k, n, method, expected):
    lo, hi = proportion_ci(k, n, method=method)
    assert (lo, hi) == pytest.approx(expected, abs=1e-4)
    assert hi - lo > 0


def test_proportion_ci_errors_and_empty():
    assert proportion_ci(0, 0) is None
    for bad in ((3, 2), (-1, 2)):
        with pytest.raises(ValueError, match="successes"):
            proportion_ci(*bad)
    with pytest.raises(ValueError, match="confidence"):
        proportion_ci(1, 2, confidence=1.0)
    with pytest.raises(ValueError, match="method"):
        proportion_ci(1, 2, method="bootstrap")  # type: ignore[arg-type]


def test_mean_ci_binary_equals_wilson_and_fractions_only_widen():
    assert mean_ci([1.0] * 10) == proportion_ci(10, 10)
    assert mean_ci([1, 0, 1, 1]) == proportion_ci(3, 4)
    # 9.5 of 10: between the intervals of 9/10 and 10/10, bracketing the mean
    lo, hi = mean_ci([1.0] * 9 + [0.5])
    assert lo == proportion_ci(9, 10)[0] and hi == proportion_ci(10, 10)[1]
    assert lo < 0.95 < hi
    assert mean_ci([]) is None


def test_mean_ci_weights_use_kish_effective_n():
    # weights 3,1,1,1: n_eff = 36 / 12 = 3; weighted mean (3*1 + 0 + 0 + 1) / 6 = 2/3 -> k = 2 of 3
    ci = mean_ci([1.0, 0.0, 0.0, 1.0], weights=[3, 1, 1, 1])
    assert ci == proportion_ci(2, 3)
    assert mean_ci([1.0], weights=[0.0]) is None


@pytest.mark.parametrize("values", [[1.5], [-0.1], [float("nan")]])
def test_mean_ci_refuses_values_outside_unit_interval(values):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mean_ci(values)


def test_mean_ci_weight_errors():
    with pytest.raises(ValueError, match="one length"):
        mean_ci([1.0, 0.0], weights=[1.0])
    with pytest.raises(ValueError, match="weights"):
        mean_ci([1.0], weights=[-1.0])


def test_bootstrap_summary_warns_and_never_claims_zero_width():
    ci, warning = bootstrap_summary([1000.0] * 50, n=1)
    assert ci is None and "same value" in warning and "n=1" in warning
    ci, warning = bootstrap_summary([], n=0)
    assert ci is None and "n=0" in warning
    rng = np.random.default_rng(0)
    reps = rng.normal(size=500)
    ci, warning = bootstrap_summary(reps, n=5)
    assert ci == list(percentile_interval(reps)) and f"< {MIN_BOOTSTRAP_N}" in warning
    ci, warning = bootstrap_summary(reps, n=100)
    assert ci is not None and ci[0] < 0 < ci[1] and warning is None


def test_closed_form_wilson_equals_scipy_on_a_grid():
    """The closed-form Wilson interval (no scipy.stats import at start-up) gives scipy's values."""
    from scipy.stats import binomtest

    from judgerl.eval.intervals import proportion_ci

    for n in (1, 2, 3, 7, 10, 33, 200):
        for k in range(n + 1):
            for conf in (0.5, 0.9, 0.95, 0.99):
                ref = binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
                lo, hi = proportion_ci(k, n, conf)
                assert abs(lo - ref.low) < 1e-12 and abs(hi - ref.high) < 1e-12, (k, n, conf)
