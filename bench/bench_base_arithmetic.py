"""Can the base model do the arithmetic a no-tool judge of arithmetic pairs needs? (issue 10)

A judge without tools can only verify ``48 + 24 = 72`` if it can compute ``48 + 24`` itself. This
script measures that directly on the embedded SmolLM2-135M (or any ``--model``): greedy completion of
``"<a> <op> <b> ="`` (plain text, no chat template) for

* the expressions of the first ``--n`` training pairs of ``gsm8k-arith`` (``gsm8k/train.jsonl``), and
* all 100 single-digit sums and products (``0 + 0`` .. ``9 * 9``),

and prints how many answers are exactly right (and how many have the right last digit). It is the
evidence behind the reading of ``docs/results.md``: the base cannot compute the values from scratch, so
a trained no-tool judge can only pick between the two values the responses offer (which it learns to do
well above chance), while a tool computes them exactly.

Usage::

    python bench/bench_base_arithmetic.py                    # ~1 min on 2 CPU cores
    python bench/bench_base_arithmetic.py --model hf/<dir> --n 200
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("JUDGERL_SHARED_DATA", REPO.parent / "shared" / "data"))


def complete(model_dir: str, prompts: list[str], max_new_tokens: int = 6) -> list[str]:
    """Greedy completions (text after the prompt) of ``prompts``, batched, left padding."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    out: list[str] = []
    for i in range(0, len(prompts), 50):
        enc = tok(prompts[i : i + 50], return_tensors="pt", padding=True)
        with torch.no_grad():
            gen = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tok.pad_token_id)
        out += [tok.decode(g[enc.input_ids.shape[1]:], skip_special_tokens=True) for g in gen]
    return out


def score(completions: list[str], values: list[int]) -> tuple[int, int]:
    """(exactly right, right last digit): the first whitespace-separated word against the value."""
    exact = last = 0
    for text, v in zip(completions, values):
        words = text.strip().split()
        got = words[0].rstrip(".,") if words else ""
        exact += got == str(v)
        last += bool(got) and got[-1:] == str(v)[-1:]
    return exact, last


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m", help="model name or hf/<dir>")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="the shared data folder")
    ap.add_argument("--n", type=int, default=80, help="training expressions to try")
    args = ap.parse_args(argv)

    from judgerl.backends.models import resolve_hf_path
    from judgerl.data.builders import build_arithmetic_pairs

    t0, load = time.time(), os.getloadavg()[0]
    path = resolve_hf_path(args.model)
    pairs = build_arithmetic_pairs(Path(args.data) / "gsm8k" / "train.jsonl", limit=args.n, seed=0)
    cases = {"gsm8k-arith training expressions": [(str(p.meta["expression"]), int(p.meta["value"])) for p in pairs]}
    for op, fn in (("+", lambda a, b: a + b), ("*", lambda a, b: a * b)):
        cases[f"single-digit a {op} b"] = [(f"{a} {op} {b}", fn(a, b)) for a in range(10) for b in range(10)]
    print(f"model {args.model} ({path}); load average {load:.2f}")
    print("| expressions | n | exactly right | right last digit |\n|---|---|---|---|")
    for name, items in cases.items():
        comps = complete(path, [f"{e} =" for e, _ in items])
        exact, last = score(comps, [v for _, v in items])
        print(f"| {name} | {len(items)} | {exact} ({exact / len(items):.0%}) | {last} ({last / len(items):.0%}) |")
    print(f"wall {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
