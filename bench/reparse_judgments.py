"""Re-read the recorded judgments of an eval run with the current parser and quoted-answer check.

A fix to how a judge's output is read (a parser rule, the quoted-answer guard) changes figures that
were measured before it. The judge's outputs do not change (greedy, same prompts), so instead of
re-running the model this script reads each record's ``raw_output`` (a trajectory's ``parse_text()``
for tool runs) again with :func:`judgerl.judge.decision.read_decision` against the pair's responses, and prints
the metrics before and after, with the number of records whose choice changed (pairwise runs)::

    python bench/reparse_judgments.py runs/proof/eval/tir/arith-attack --data runs/proof/data/arith-attack.jsonl

Forced answers are read as recorded (the forced suffix is part of the trajectory's text).

Raises (exits with the message): a record whose pair id is not in ``--data``, a non-pairwise run, a
run directory without ``run.json`` / ``judgments.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping

from judgerl.data.loaders import load_pairs
from judgerl.eval.metrics import compute_metrics, sample_choice
from judgerl.eval.store import read_judgments
from judgerl.judge.decision import read_decision
from judgerl.protocols import get_protocol
from judgerl.types import Trajectory

SHOWN = ("valid_format_rate", "accuracy", "accuracy_valid_only", "position_consistent_accuracy", "flip_rate")


def reparse(run_dir: Path, data: Path) -> tuple[dict[str, Any], dict[str, Any], int]:
    """Metrics of ``run_dir``'s records as recorded and as re-read; number of records whose choice changed.

    Raises:
        SystemExit: see the module docstring.
    """
    for name in ("run.json", "judgments.jsonl"):
        if not (run_dir / name).is_file():
            raise SystemExit(f"{run_dir / name}: not found (pass an eval run directory)")
    config = json.loads((run_dir / "run.json").read_text())["config"]
    proto_cfg = dict(config["protocol"])
    protocol = get_protocol(proto_cfg.pop("name"), **{k: v for k, v in proto_cfg.items() if k != "kind"})
    if protocol.kind != "pairwise":
        raise SystemExit(f"{run_dir / 'run.json'}: protocol kind {protocol.kind!r}; only pairwise runs are re-read")
    pairs = {p.id: p for p in load_pairs(data).pairs}
    records = read_judgments(run_dir / "judgments.jsonl")
    new_records, changed = [], 0
    for i, rec in enumerate(records):
        pair = pairs.get(rec["pair_id"])
        if pair is None:
            raise SystemExit(f"{run_dir / 'judgments.jsonl'} record {i}: pair_id {rec['pair_id']!r} is not in {data}")
        responses = (pair.chosen, pair.rejected) if rec["chosen_index"] == 0 else (pair.rejected, pair.chosen)
        traj = rec.get("trajectory")
        text = Trajectory.from_dict(traj).parse_text() if traj else rec["raw_output"]
        decision = read_decision(protocol, text, responses, 2, rec.get("finish_reason") or "stop")
        new = dict(rec, decision=decision.to_dict())
        new["choice"] = sample_choice(new, i)
        new["correct"] = None if (pair.tie or new["choice"] is None) else new["choice"] == "chosen"
        changed += new["choice"] != rec.get("choice")
        new_records.append(new)
    return compute_metrics(records), compute_metrics(new_records), changed


def _fmt(m: Mapping[str, Any], key: str) -> str:
    v = m.get(key)
    if key == "valid_format_rate" and v is None and m.get("invalid_rate") is not None:
        v = 1.0 - m["invalid_rate"]
    return "-" if v is None else f"{v:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path, help="eval run directory (run.json + judgments.jsonl)")
    ap.add_argument("--data", type=Path, required=True, help="the pairs file the run judged")
    args = ap.parse_args(argv)
    before, after, changed = reparse(args.run_dir, args.data)
    print(f"{args.run_dir}: {len(read_judgments(args.run_dir / 'judgments.jsonl'))} records, "
          f"{changed} choices changed")
    print("| read | " + " | ".join(SHOWN) + " |")
    print("|---" * (len(SHOWN) + 1) + "|")
    for name, m in (("recorded", before), ("re-read", after)):
        print(f"| {name} | " + " | ".join(_fmt(m, k) for k in SHOWN) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
