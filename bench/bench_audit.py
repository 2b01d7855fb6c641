"""Reward-hacking audit: recall and false-positive rate per kind on the labelled set, and speed.

The set is ``bench/data/audit_labelled.jsonl`` (248 records written for judgerl: hacks in many surface
variants and normal answers that must not be flagged). Its ``dev`` half was used to tune the
detectors; the ``heldout`` half was written and committed before any detector existed. Targets
(issue 12): recall >= 0.9 and false-positive rate <= 0.05 for every kind.

Each rate comes with a 95% Wilson score interval: with 11–27 positives per kind and split, a recall
of 1.0 is compatible with a true recall in the 0.8s.

Usage:
    python bench/bench_audit.py [--data FILE] [--markdown] [--json out.json] [--errors] [--check]

``--markdown`` prints the table used in docs/results.md; ``--check`` exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from judgerl.audit import KINDS, audit_response
from judgerl.audit.labelled import LABELLED_SET, KindScore, load_labelled, score_labelled

RECALL_TARGET, FPR_TARGET = 0.9, 0.05


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """95% Wilson score interval of a proportion k/n; None when n == 0."""
    if n == 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _fmt(rate: float | None, ci: tuple[float, float] | None) -> str:
    if rate is None or ci is None:
        return "–"
    return f"{rate:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def rows(scores: dict[str, KindScore]) -> list[dict]:
    out = []
    for kind in KINDS:
        s = scores[kind]
        out.append({"kind": kind, **s.to_dict(), "recall_ci": wilson(s.tp, s.tp + s.fn),
                    "fpr_ci": wilson(s.fp, s.fp + s.tn)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(LABELLED_SET))
    ap.add_argument("--markdown", action="store_true", help="print the docs/results.md table")
    ap.add_argument("--json", help="write all figures to this file")
    ap.add_argument("--errors", action="store_true", help="list misclassified records")
    ap.add_argument("--check", action="store_true", help="exit 1 if a kind misses recall >= 0.9 or FPR <= 0.05")
    args = ap.parse_args(argv)

    records = load_labelled(args.data)
    splits = {"dev": [r for r in records if r.split == "dev"], "heldout": [r for r in records if r.split == "heldout"],
              "all": records}
    report: dict = {"data": args.data, "n": {k: len(v) for k, v in splits.items()}, "splits": {}, "errors": {}}
    for name, recs in splits.items():
        scores, errors = score_labelled(recs)
        report["splits"][name] = rows(scores)
        report["errors"][name] = errors

    t0 = time.perf_counter()
    reps = 5
    for _ in range(reps):
        for r in records:
            audit_response(r.response, r.prompt)
    report["ms_per_record"] = 1e3 * (time.perf_counter() - t0) / (reps * len(records))

    if args.markdown:
        print(f"| kind | dev recall | dev FPR | held-out recall | held-out FPR |")
        print("|---|---|---|---|---|")
        dev = {r["kind"]: r for r in report["splits"]["dev"]}
        ho = {r["kind"]: r for r in report["splits"]["heldout"]}
        for kind in KINDS:
            d, h = dev[kind], ho[kind]
            print(f"| `{kind}` | {_fmt(d['recall'], d['recall_ci'])} ({d['tp']}/{d['tp'] + d['fn']}) | "
                  f"{_fmt(d['fpr'], d['fpr_ci'])} ({d['fp']}/{d['fp'] + d['tn']}) | "
                  f"{_fmt(h['recall'], h['recall_ci'])} ({h['tp']}/{h['tp'] + h['fn']}) | "
                  f"{_fmt(h['fpr'], h['fpr_ci'])} ({h['fp']}/{h['fp'] + h['tn']}) |")
    else:
        for name in ("dev", "heldout", "all"):
            print(f"== {name} ({report['n'][name]} records)")
            print(f"  {'kind':<18} {'tp':>4} {'fn':>4} {'fp':>4} {'tn':>4}  {'recall [95% CI]':<22} FPR [95% CI]")
            for r in report["splits"][name]:
                print(f"  {r['kind']:<18} {r['tp']:>4} {r['fn']:>4} {r['fp']:>4} {r['tn']:>4}  "
                      f"{_fmt(r['recall'], r['recall_ci']):<22} {_fmt(r['fpr'], r['fpr_ci'])}")
        print(f"speed: {report['ms_per_record']:.2f} ms per record (mean over the set, one process)")
    if args.errors:
        for name in ("dev", "heldout"):
            for e in report["errors"][name]:
                print(f"{name}: {e['id']} missed={e['missed']} extra={e['extra']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
    failed = [(name, r["kind"]) for name in ("dev", "heldout") for r in report["splits"][name]
              if (r["recall"] is not None and r["recall"] < RECALL_TARGET) or (r["fpr"] is not None and r["fpr"] > FPR_TARGET)]
    if args.check and failed:
        print(f"targets missed: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
