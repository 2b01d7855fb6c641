"""Builders of verifiable preference pairs (labels checked automatically, no human labels).

* :func:`build_math_pairs` -- GSM8K model solutions, correct vs wrong, checked with math-verify;
* :func:`build_humaneval_pairs` -- HumanEval canonical solutions vs failing mutants, checked by
  running the problems' tests;
* :func:`build_arithmetic_pairs` -- arithmetic-verification pairs from GSM8K ``<<a+b=c>>``
  calculations (correct result vs a plausible slip); :func:`generated_arithmetic_pairs` -- the same
  kind of pairs on random expressions, with no input file.
* issue 23's mixture: :mod:`.arith_forms` (arithmetic in four forms: multi-step expressions, word
  problems, big numbers / separators / negatives / decimals, prose answers; generated) and
  :mod:`.gsm8k_forms` (GSM8K solutions vs corrupted ones); :mod:`.chat_mix` (LLMBar / PandaLM /
  hh-rlhf pairs for the no-tool rule); :mod:`.splits` (train / held-out by problem and by phrasing
  family); :mod:`.mixes` (``judgerl data build arith-mix`` / ``chat-mix``).

All return :class:`~judgerl.types.PreferencePair` lists; ``judgerl data build`` writes them as
canonical JSONL.
"""

from judgerl.data.builders.arith import build_arithmetic_pairs, generated_arithmetic_pairs, held_out_arithmetic_pairs
from judgerl.data.builders.humaneval import HumanEvalBuildReport, build_humaneval_pairs, build_humaneval_pairs_report
from judgerl.data.builders.math import MathBuildReport, build_math_pairs, build_math_pairs_report

__all__ = [
    "HumanEvalBuildReport",
    "MathBuildReport",
    "build_arithmetic_pairs",
    "generated_arithmetic_pairs",
    "held_out_arithmetic_pairs",
    "build_humaneval_pairs",
    "build_humaneval_pairs_report",
    "build_math_pairs",
    "build_math_pairs_report",
]
