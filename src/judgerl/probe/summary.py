"""Probe figures from probe records: pass (false-positive) rates per family, probe and source.

Definitions (see :mod:`judgerl.probe.run` for what a pass is):

* ``pass_rate``: passes / judgments (invalid judgments count as not passed);
  ``pass_rate_valid``: passes / valid judgments; ``invalid_rate``; pairwise ``tie_rate``;
* ``false_positive_rate``: the pass rate over the ``master_key`` and ``hack`` families together;
  the ``reference`` family's pass rate (pointwise controls) is the judge's true-positive rate;
* pairwise ``consistent_pass_rate``: (prompt, probe) items passed in both orders / items;
* pointwise ``mean_score``: the mean score on [0, 1] (``(s - min) / (max - min)``), valid only;
* 95% confidence intervals of a pass rate: the Wilson score interval over *prompts*
  (:func:`judgerl.eval.intervals.mean_ci` on the per-prompt pass fractions weighted by the prompt's
  number of judgments; n is Kish's effective number of prompts), so the judgments of one prompt
  count as one unit and the interval never has zero width: 10 of 10 passed gives [0.72, 1.0], where
  a percentile bootstrap claimed [1.0, 1.0].
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping, Sequence

from judgerl.eval.intervals import mean_ci
from judgerl.probe.items import FALSE_POSITIVE_FAMILIES, FAMILIES

GUARDS_NOTE = ("off: the probe measures the judge itself; the reward server's guards would block the empty "
               "response and listed master keys before any judge call (see guard_would_block)")


def _outcome(rec: Mapping[str, Any], kind: str, scale: tuple[float, float] | None,
             threshold: float | None) -> dict[str, Any]:
    d = rec["decision"]
    row = {"prompt_id": rec["prompt_id"], "probe": rec["probe"], "family": rec["family"],
           "source": rec["source"], "valid": bool(d.get("valid")), "passed": False, "tie": False, "score": None}
    if not row["valid"]:
        return row
    if kind == "pointwise":
        s = float(d["scores"][0])
        lo, hi = scale  # type: ignore[misc]
        row["score"] = (s - lo) / (hi - lo)
        row["passed"] = s >= threshold  # type: ignore[operator]
    else:
        letter = "A" if rec["probe_position"] == 0 else "B"
        row["tie"] = d.get("verdict") == "tie"
        row["passed"] = d.get("verdict") == letter
    return row


def _stats(rows: Sequence[Mapping[str, Any]], kind: str) -> dict[str, Any]:
    n = len(rows)
    valid = [r for r in rows if r["valid"]]
    per_prompt: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        per_prompt[r["prompt_id"]].append(r["passed"])
    fracs = [sum(v) / len(v) for v in per_prompt.values()]
    ci = mean_ci(fracs, weights=[len(v) for v in per_prompt.values()]) if fracs else None
    out: dict[str, Any] = {
        "n": n, "n_prompts": len(per_prompt), "n_pass": sum(r["passed"] for r in rows),
        "pass_rate": sum(r["passed"] for r in rows) / n if n else None,
        "pass_rate_ci": list(ci) if ci else None,
        "pass_rate_valid": sum(r["passed"] for r in valid) / len(valid) if valid else None,
        "invalid_rate": (n - len(valid)) / n if n else None,
    }
    if kind == "pointwise":
        scores = [r["score"] for r in valid]
        out["mean_score"] = sum(scores) / len(scores) if scores else None
    else:
        out["tie_rate"] = sum(r["tie"] for r in rows) / n if n else None
        items: dict[tuple[str, str], list[bool]] = defaultdict(list)
        for r in rows:
            items[(r["prompt_id"], r["probe"])].append(r["passed"])
        out["consistent_pass_rate"] = (sum(len(v) == 2 and all(v) for v in items.values()) / len(items)
                                       if items else None)
    return out


def _screens(units: Iterable[Any]) -> dict[str, Any]:
    """What the reward guards and the audit say about the (prompt, probe) responses under probe."""
    from judgerl.audit import flag_response
    from judgerl.rewards.guards import DEFAULT_MASTER_KEYS, guard_reason

    seen: dict[tuple[str, str], Any] = {}
    for u in units:
        if u.probe.family in FALSE_POSITIVE_FAMILIES:
            seen.setdefault((u.prompt.id, u.probe.name), u)
    blocked = sum(guard_reason(u.probe.text, True, DEFAULT_MASTER_KEYS, u.prompt.prompt) is not None
                  for u in seen.values())
    flagged = sum(bool(flag_response(u.probe.text, u.prompt.prompt)) for u in seen.values())
    n = len(seen)
    return {"guard_would_block": {"n": blocked, "of": n, "rate": blocked / n if n else None},
            "audit_flagged": {"n": flagged, "of": n, "rate": flagged / n if n else None}}


def summarise_probe(records: Sequence[Mapping[str, Any]], units: Sequence[Any], *, kind: str,
                    scale: tuple[float, float] | None, threshold: float | None) -> dict[str, Any]:
    """The probe summary (definitions: module docstring).

    Args:
        records: One record per unit (``judgments.jsonl`` lines of this run's plan).
        units: The plan (:func:`judgerl.probe.run.plan_probe`), same order.
        kind: ``pointwise`` or ``pairwise``.
        scale: The judge's pointwise scale (pointwise only).
        threshold: The pointwise pass threshold.

    Returns:
        ``{"kind", "threshold", "scale", "guards", "n_judgments", "n_prompts", "n_probes",
        "false_positive_rate", "false_positive_rate_ci", "families", "by_probe", "by_source",
        "invalid_reasons", "guard_would_block", "audit_flagged"}``.
    """
    rows = [_outcome(r, kind, scale, threshold) for r in records]
    fp_rows = [r for r in rows if r["family"] in FALSE_POSITIVE_FAMILIES]
    fp = _stats(fp_rows, kind)
    by_probe: dict[str, Any] = {}
    for name in dict.fromkeys(r["probe"] for r in rows):
        sub = [r for r in rows if r["probe"] == name]
        by_probe[name] = {"family": sub[0]["family"], **_stats(sub, kind)}
    by_source: dict[str, Any] = {}
    for src in dict.fromkeys(r["source"] for r in rows):
        by_source[src] = {fam: _stats(sub, kind) for fam in FAMILIES
                          if (sub := [r for r in rows if r["source"] == src and r["family"] == fam])}
    summary: dict[str, Any] = {
        "kind": kind, "threshold": threshold, "scale": list(scale) if scale else None, "guards": GUARDS_NOTE,
        "n_judgments": len(rows), "n_prompts": len({r["prompt_id"] for r in rows}),
        "n_probes": len({r["probe"] for r in fp_rows}),
        "false_positive_rate": fp["pass_rate"], "false_positive_rate_ci": fp["pass_rate_ci"],
        "families": {fam: _stats(sub, kind) for fam in FAMILIES
                     if (sub := [r for r in rows if r["family"] == fam])},
        "by_probe": by_probe, "by_source": by_source,
        "invalid_reasons": dict(Counter(str(r["decision"].get("invalid_reason")) for r in records
                                        if not r["decision"].get("valid")).most_common()),
    }
    summary.update(_screens(units))
    return summary
