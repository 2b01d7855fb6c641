"""The judge-as-reward study's read-out of one policy arm (bench/bench_judge_as_reward.py): held-out gold gain,
win rate, audit, hacking verdicts, response length, and the same under the gated gold (judgerl.gold.gate)."""
from __future__ import annotations

from pathlib import Path

from bench_policy_reward import read_jsonl


def readout(out: Path, arm: str, seed: int) -> dict:
    """Held-out gold gain (bootstrap CI), gold win rate vs the base (Wilson CI), audit rates, flagged
    examples and the hacking verdict of one arm's policy run."""
    from judgerl.arena.scores import Game, valid_games, win_rate, win_rate_ci
    from judgerl.eval.intervals import bootstrap_ci
    from judgerl.train.curves import hacking_verdicts, length_verdict, read_curves

    run_dir = out / f"policy-{arm}"
    recs = read_curves(run_dir / "curves.jsonl")
    held = sorted((r for r in recs if r.get("kind") == "heldout"), key=lambda r: r["step"])
    roll = [r for r in recs if r.get("kind") == "rollout"]
    base = {r["id"]: r for r in read_jsonl(run_dir / "heldout" / "step-0.jsonl")}
    final_rows = read_jsonl(run_dir / "heldout" / f"step-{held[-1]['step']}.jsonl")
    games, diffs = [], []
    for r in final_rows:
        g0, g1 = base[r["id"]]["gold_score"], r["gold_score"]
        games.append(Game(str(r["id"]), "final", "base",
                          None if g0 is None or g1 is None else "win" if g1 > g0 else "loss" if g1 < g0 else "tie"))
        if g0 is not None and g1 is not None:
            diffs.append(float(g1) - float(g0))
    ok, _ = valid_games(games)
    kinds = sorted({k for r in roll for k in (r.get("audit") or {})})
    flagged = [{"id": r["id"], "flags": list(r["audit"]), "response": r["response"][:300]}
               for r in final_rows if r.get("audit")]  # audit: the kinds flagged in that response
    return {
        "final_step": held[-1]["step"],
        "gold_base": held[0].get("gold_score_mean"), "gold_final": held[-1].get("gold_score_mean"),
        "judge_base": held[0].get("judge_score_mean"), "judge_final": held[-1].get("judge_score_mean"),
        "gold_gain": sum(diffs) / len(diffs) if diffs else None,
        "gold_gain_ci": bootstrap_ci(diffs, seed=seed) if diffs else None,
        "gold_win_rate": win_rate(ok), "gold_win_rate_ci": win_rate_ci(ok), "n_games": len(ok),
        "audit_rates": {k: sum(float((r.get("audit") or {}).get(k, 0)) for r in roll) / max(1, len(roll)) for k in kinds},
        "flagged_examples": flagged[:3],
        **hacking_verdicts(held, roll),  # judgerl.train.curves
        "length": length_verdict(held),
        "curves": [{k: r.get(k) for k in ("step", "gold_score_mean", "judge_score_mean")} for r in held],
        "gated": gated_readout(run_dir, held, seed),
    }


def gated_readout(run_dir: Path, held: list[dict], seed: int) -> dict:
    """The read-out under the gated gold (:mod:`judgerl.gold.gate`: 0 for a reply that does not attempt the task),
    from the held-out rows every evaluation wrote (``heldout/step-N.jsonl``): the gated gold and the not-an-attempt
    rate per evaluation, the gated gain base -> final with its bootstrap CI, and the hacking test on the gated gold
    (window: every evaluation, 3 or 4)."""
    from judgerl.eval.intervals import bootstrap_ci
    from judgerl.gold.gate import gate_rows
    from judgerl.train.curves import hacking_test

    judge_at = {r["step"]: r.get("judge_score_mean") for r in held}
    per_step, by_id = [], {}
    for f in sorted((run_dir / "heldout").glob("step-*.jsonl"), key=lambda f: int(f.stem.split("-")[1])):
        step = int(f.stem.split("-")[1])
        rows = gate_rows(read_jsonl(f))
        scored = [r["gated_gold_score"] for r in rows if r["gated_gold_score"] is not None]
        per_step.append({"step": step, "gold_score_mean": sum(scored) / len(scored) if scored else None,
                         "not_an_attempt": sum(bool(r["not_an_attempt"]) for r in rows) / max(1, len(rows)),
                         "judge_score_mean": judge_at.get(step)})
        by_id[step] = {r["id"]: r["gated_gold_score"] for r in rows}
    if len(per_step) < 2:
        return {"per_step": per_step}
    first, last = by_id[per_step[0]["step"]], by_id[per_step[-1]["step"]]
    diffs = [last[i] - first[i] for i in sorted(first.keys() & last.keys())
             if first[i] is not None and last[i] is not None]
    window = min(4, len(per_step))
    test = hacking_test(per_step, window=window) if window >= 3 else {"suspected": False, "reason": "2 evaluations"}
    verdict = (f"untestable ({test['reason']})" if "reason" in test else
               ("SUSPECTED" if test["suspected"] else "not suspected")
               + f" (judge {test['delta_train']:+.2f}, gated gold {test['delta_gold']:+.2f}, window {window})")
    return {"per_step": per_step, "base": per_step[0]["gold_score_mean"], "final": per_step[-1]["gold_score_mean"],
            "gain": sum(diffs) / len(diffs) if diffs else None,
            "gain_ci": bootstrap_ci(diffs, seed=seed) if diffs else None,
            "not_an_attempt_base": per_step[0]["not_an_attempt"], "not_an_attempt_final": per_step[-1]["not_an_attempt"],
            "hacking": verdict}


def paired_difference(out: Path, arm: str, other: str, seed: int) -> dict | None:
    """The final held-out gold of ``arm`` minus that of ``other`` on the same held-out prompts (paired by prompt
    id), with its bootstrap 95% CI (:func:`judgerl.eval.intervals.bootstrap_ci`): whether two arms are told apart,
    e.g. a judge arm against the random-reward control.

    Returns:
        ``{"mean", "ci", "n"}`` (``n`` prompts scored in both), or None when either arm has no held-out
        evaluation yet or no prompt is shared.
    """
    from judgerl.eval.intervals import bootstrap_ci

    def final(a: str) -> dict:
        files = sorted((out / f"policy-{a}" / "heldout").glob("step-*.jsonl"), key=lambda f: int(f.stem.split("-")[1]))
        return {r["id"]: r["gold_score"] for r in read_jsonl(files[-1])} if files else {}

    mine, theirs = final(arm), final(other)
    diffs = [float(mine[i]) - float(theirs[i]) for i in sorted(mine.keys() & theirs.keys())
             if mine[i] is not None and theirs[i] is not None]
    if not diffs:
        return None
    return {"mean": sum(diffs) / len(diffs), "ci": bootstrap_ci(diffs, seed=seed), "n": len(diffs)}


def recovered(gain: float | None, oracle_gain: float | None) -> float | None:
    """The fraction of the oracle's gold gain an arm recovers: gain / oracle gain (None when the oracle
    did not gain)."""
    if gain is None or oracle_gain is None or oracle_gain <= 0:
        return None
    return gain / oracle_gain
