"""The carrier rule's price and speed: how many honest responses of ``../shared/data`` are carriers, per protocol,
and how long :func:`judgerl.judge.decision.read_decision` takes on them and on huge adversarial inputs.

A carrier (:mod:`judgerl.protocols.carriers`) never gains from a judge's decision, so a carrier among honest
responses is a response the rule wrongs. Reads every response of LLMBar (natural + adversarial), PandaLM, the
GSM8K model solutions and HH-RLHF harmless (12,192 texts); prints the carriers found (the first 3 of each protocol)
and the read times (ms) with the 1-minute load average.

Usage:
    python bench/bench_carriers.py [--data ../shared/data] [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import time
from pathlib import Path

from judgerl.judge.decision import read_decision
from judgerl.protocols import get_protocol
from judgerl.protocols.carriers import carrier_sources

PROTOCOLS = {"pav": {}, "pas": {}, "pavs": {}, "arena": {}, "pos": {}, "listwise": {}, "listwise-rank": {"mode": "rank"}}


def honest_responses(root: Path) -> dict[str, list[str]]:
    """Every response text of the shared datasets, by dataset (PandaLM's bare NaN / non-text fields read as empty)."""
    out: dict[str, list[str]] = {}
    llmbar = [*json.loads((root / "llmbar" / "natural.json").read_text()),
              *json.loads((root / "llmbar" / "adversarial_gptout.json").read_text())]
    out["llmbar"] = [r[k] for r in llmbar for k in ("output_1", "output_2")]
    panda = json.loads((root / "pandalm" / "testset-v1.json").read_text())
    out["pandalm"] = [r[k] if isinstance(r[k], str) else "" for r in panda for k in ("response1", "response2")]
    with open(root / "gsm8k" / "example_model_solutions.jsonl", encoding="utf-8") as fh:
        out["gsm8k-solutions"] = [v["solution"] for line in fh for v in json.loads(line).values()
                                  if isinstance(v, dict) and "solution" in v]
    with gzip.open(root / "hh-rlhf" / "harmless-base-test.jsonl.gz", "rt", encoding="utf-8") as fh:
        out["hh-rlhf"] = [r[k] for r in map(json.loads, fh) for k in ("chosen", "rejected")]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    load = os.getloadavg()[0]
    sets = honest_responses(args.data)
    texts = [t for ts in sets.values() for t in ts]
    print(f"{len(texts)} honest responses ({', '.join(f'{k} {len(v)}' for k, v in sets.items())}); load {load:.2f}")
    report: dict = {"n": len(texts), "load_start": load, "carriers": {}, "read_ms": {}}
    for name, kw in PROTOCOLS.items():
        proto = get_protocol(name.split("-")[0], **kw)
        t0 = time.perf_counter()
        found = sorted(carrier_sources(texts, proto.answer_tags, proto.name == "arena"))
        secs = time.perf_counter() - t0
        report["carriers"][name] = [texts[i][:300] for i in found]
        print(f"  {name:14s} carriers {len(found):5d} of {len(texts)}  ({secs:.1f} s)")
        for i in found[:3]:
            print(f"      {texts[i][:160]!r}")
    pav = get_protocol("pav")
    out = "<think>A is right.</think>\n<verdict>A</verdict>"
    pairs = list(zip(texts[::2], texts[1::2]))[:500]
    lat = []
    for a, b in pairs:
        t0 = time.perf_counter()
        read_decision(pav, out, (a, b), 2)
        lat.append((time.perf_counter() - t0) * 1000)
    report["read_ms"]["honest-pairs-p50"] = statistics.median(lat)
    report["read_ms"]["honest-pairs-max"] = max(lat)
    for label, huge in {"1MB-closes": "</think>" * 131072, "1MB-angles": "<" * 1048576,
                        "1MB-utf7": "+ADw-" * 209715, "1MB-labels": "[[A>>B]]" * 131072}.items():
        t0 = time.perf_counter()
        read_decision(get_protocol("arena"), "<think>x</think>\n<verdict>[[A>>B]]</verdict>", (huge, "b"), 2)
        report["read_ms"][label] = (time.perf_counter() - t0) * 1000
    report["load_end"] = os.getloadavg()[0]
    print("read_decision ms: " + ", ".join(f"{k} {v:.1f}" for k, v in report["read_ms"].items())
          + f"; load {report['load_end']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
