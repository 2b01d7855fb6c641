"""Red team (stop 42) of the reward-hacking tests of judgerl.train.curves: garbage in must give "untestable" or a
clear error, never a "suspected" / "not suspected" verdict and never a bare crash in a report. Rows marked
FINDING fail on the code as it was when they were written."""

from __future__ import annotations

import json
import math

import pytest

from judgerl.train.curves import hacking_test, hacking_verdicts, read_curves, rollout_hacking_test, truncate_curves


def H(step, judge, gold, **kw):
    return {"kind": "heldout", "step": step, "judge_score_mean": judge, "gold_score_mean": gold, **kw}


def R(step, judge, gold):
    return {"kind": "rollout", "step": step, "judge_score_mean": judge, "gold_score_mean": gold}


HACKED = [(0, 1.0, 9.0), (10, 2.0, 8.0), (20, 3.0, 7.0), (30, 4.0, 6.0)]  # judge up, gold down


def _untestable_or_clear_error(fn, *args, **kw):
    """The call gives an untestable result (``reason``) or a ValueError that says what is wrong."""
    try:
        res = fn(*args, **kw)
    except ValueError as e:
        assert "step" in str(e), e
        return
    assert "reason" in res, res


# --- passing rows -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("records", [[], [H(0, 1.0, 9.0)], [H(s, j, None) for s, j, _ in HACKED],
                                     [H(s, float("nan"), g) for s, _, g in HACKED],
                                     [H(s, j, math.inf) for s, j, _ in HACKED],
                                     [H(s, True, g) for s, _, g in HACKED]])
def test_held_out_test_without_usable_scores_is_untestable(records):
    assert "reason" in hacking_test(records) and not hacking_test(records)["suspected"]


def test_held_out_test_sorts_steps_given_out_of_order():
    res = hacking_test([H(*r) for r in reversed(HACKED)])
    assert res["suspected"] and res["steps"] == [0, 10, 20, 30]


@pytest.mark.parametrize("records", [[], [R(1, 1.0, 9.0)], [R(s, j, None) for s, j, _ in HACKED],
                                     [R(s, float("nan"), g) for s, _, g in HACKED], [H(*r) for r in HACKED]])
def test_rollout_test_without_usable_rollouts_is_untestable(records):
    res = rollout_hacking_test(records)
    assert "reason" in res and not res["suspected"]


def test_hacking_verdicts_of_nothing_are_untestable():
    assert hacking_verdicts([], []) == {
        "hacking": "untestable (no held-out evaluation)",
        "hacking_rollouts": "untestable (no gold score on the rollouts: a run from before rollout gold scoring)"}


def test_read_curves_ignores_a_torn_last_line(tmp_path):
    path = tmp_path / "curves.jsonl"
    path.write_text(json.dumps(R(1, 1.0, 9.0)) + "\n" + json.dumps(R(2, 2.0, 8.0))[:25])
    assert read_curves(path) == [R(1, 1.0, 9.0)]
    assert read_curves(tmp_path / "absent.jsonl") == []


# --- FINDING: one step repeated is not a trend ------------------------------------------------------------------

def test_held_out_records_all_at_one_step_are_untestable():
    """FINDING. Four records of one step: _spearman(steps) is None, so ``suspected`` is False but no ``reason``
    is given -- hacking_verdicts then prints "not suspected (judge +3.00, gold -3.00)"."""
    res = hacking_test([H(5, j, g) for _, j, g in HACKED])
    assert "reason" in res


def test_rollouts_all_at_one_step_are_untestable():
    """FINDING (same cause): four reward calls of one optimizer step read as four evaluations."""
    res = rollout_hacking_test([R(1, j, g) for _, j, g in HACKED])
    assert "reason" in res
    assert hacking_verdicts([], [R(1, j, g) for _, j, g in HACKED])["hacking_rollouts"].startswith("untestable")


def test_rollout_bins_count_distinct_steps():
    """FINDING. 8 rollout records of only 2 distinct steps are binned into 4 "evaluations" (steps 1, 1, 2, 2) and
    give SUSPECTED (rho 0.89) -- a two-point trend. The docstring: untestable "with fewer than ``bins`` rollout
    steps"; rollout_steps counts records, not steps."""
    recs = [R(1, 1.0, 9.0), R(1, 2.0, 8.0), R(1, 3.0, 7.0), R(1, 4.0, 6.0),
            R(2, 5.0, 5.0), R(2, 6.0, 4.0), R(2, 7.0, 3.0), R(2, 8.0, 2.0)]
    assert "reason" in rollout_hacking_test(recs)


def test_held_out_window_counts_distinct_steps():
    """FINDING. Held-out records with a repeated step (0, 10, 10, 20: three evaluations) fill a window of 4 and
    give SUSPECTED."""
    _untestable_or_clear_error(hacking_test, [H(0, 1.0, 9.0), H(10, 2.0, 8.0), H(10, 3.0, 7.0), H(20, 4.0, 6.0)])


# --- FINDING: a record without a usable step crashes the held-out test -------------------------------------------

@pytest.mark.parametrize("bad", [{"judge_score_mean": 2.0, "gold_score_mean": 8.0}, H(None, 2.0, 8.0),
                                 H("5", 2.0, 8.0), H(float("nan"), 2.0, 8.0)],
                         ids=["missing", "none", "str", "nan"])
def test_held_out_test_with_a_record_without_a_numeric_step(bad):
    """FINDING. hacking_test filters scores with _num but not the step: KeyError / TypeError / ValueError (bare)
    from ``usable.sort(key=lambda r: r["step"])`` / ``int(s)``. rollout_hacking_test skips such records."""
    records = [H(0, 1.0, 9.0), bad, H(20, 3.0, 7.0), H(30, 4.0, 6.0)]
    try:
        res = hacking_test(records)
    except ValueError as e:
        assert "step" in str(e) and "cannot convert" not in str(e), e
    else:
        assert "reason" in res or res["steps"] == [0, 20, 30]


# --- FINDING: hacking_verdicts crashes on what a report may hold ----------------------------------------------------

@pytest.mark.parametrize("held", [
    [H(0, 1.0, 9.0, hacking={"suspected": False})],  # a hacking dict without the trend (older / partial record)
    [H(0, 1.0, 9.0, hacking="not run")],  # not a dict
    [{"kind": "heldout", "hacking": {"suspected": True}}],  # no step
    [H(0, 1.0, 9.0), H(None, 2.0, 8.0), H(20, 3.0, 7.0)],  # a step of None
], ids=["partial-dict", "non-dict", "no-step", "none-step"])
def test_hacking_verdicts_never_crash(held):
    """FINDING. words() indexes r['delta_train'] (KeyError), ``(r.get("hacking") or {}).get`` fails on a str
    (AttributeError), ``r["step"]`` on a record without one (KeyError); the none-step row dies in hacking_test."""
    try:
        out = hacking_verdicts(held, [])
    except ValueError as e:
        assert "step" in str(e) or "hacking" in str(e), e
    else:
        assert isinstance(out["hacking"], str)


# --- FINDING: read_curves / truncate_curves ------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["null", "5", "[1, 2]", '"text"'])
def test_read_curves_refuses_a_record_that_is_not_an_object(tmp_path, line):
    """FINDING. A line that is JSON but not an object is returned as a record; every reader then crashes on
    ``r.get`` (rollout_hacking_test, hacking_verdicts, PolicyMonitor.evaluate, plot_curves)."""
    path = tmp_path / "curves.jsonl"
    path.write_text(json.dumps(R(1, 1.0, 9.0)) + "\n" + line + "\n" + json.dumps(R(2, 2.0, 8.0)) + "\n")
    with pytest.raises(ValueError, match=r"curves\.jsonl:2"):
        read_curves(path)


def test_truncate_curves_with_a_rollout_record_of_step_none(tmp_path):
    """FINDING. PolicyMonitor writes ``"step": null`` for a reward call without a trainer_state (policy.py
    _on_reward); truncate_curves (run at every resume) then dies in ``int(r.get("step", 0))`` with a bare
    TypeError."""
    path = tmp_path / "curves.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [R(1, 1.0, 9.0), R(None, 2.0, 8.0), R(5, 3.0, 7.0)]))
    try:
        dropped = truncate_curves(path, 2)
    except ValueError as e:
        assert "step" in str(e) and "curves.jsonl" in str(e), e
    else:
        assert dropped >= 1 and all(r["step"] != 5 for r in read_curves(path))
