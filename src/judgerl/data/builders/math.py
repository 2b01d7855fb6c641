"""Verifiable math preference pairs from model solutions (J1 / TIR-Judge synthetic verifiable data).

Input: GSM8K's ``example_model_solutions.jsonl`` (Cobbe et al., 2021): per test question the
``question``, the reference ``ground_truth`` solution (ending ``A: N``) and several model solutions
``{"<model>": {"is_correct": bool, "solution": str}}``. A question with at least one correct and one
wrong solution gives preference pairs chosen = a correct solution, rejected = a wrong one (J1,
Whitehouse et al., 2025, Sec. 3: "verifiable prompts: chosen matches the gold answer").

Correctness is **re-verified**: each solution's final answer is compared to the ground truth's with
math-verify (:mod:`judgerl.verify.math`, thread-safe timeout) instead of trusting ``is_correct``;
disagreements are counted and listed in the :class:`MathBuildReport`, and the verified label wins.
A solution whose check is undecided (None: an ambiguous or unparseable answer, a timeout; see
:func:`judgerl.verify.answers.equivalent`) is left out, and so is every pair it would be part of:
those are counted (``undecided`` solutions, ``undecided_pairs``) and listed, never guessed.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from judgerl.data.errors import DataFormatError
from judgerl.data.io import iter_records
from judgerl.types import PreferencePair
from judgerl.verify.math import MathVerifier, extract_final_answer, strip_calculator_annotations

logger = logging.getLogger(__name__)

SOURCE = "gsm8k"


@dataclass
class MathBuildReport:
    """What :func:`build_math_pairs_report` built and what it saw.

    Attributes:
        pairs: The preference pairs, in file order of their questions.
        n_questions: Records read.
        n_questions_with_pairs: Questions with >= 1 verified-correct and >= 1 verified-wrong solution.
        n_solutions: Model solutions seen.
        n_undecided: Solutions left out because the equivalence check was undecided (None).
        n_undecided_pairs: Candidate pairs dropped for that reason: pairs of two solutions of one
            question with different texts, at least one of them undecided (its label unknown,
            the pair's direction and even its existence are unknown).
        undecided: One dict per undecided solution: ``{"id", "solution_key", "answer", "gold"}``.
        disagreements: One dict per solution where math-verify disagrees with ``is_correct``:
            ``{"id", "solution_key", "is_correct", "verified", "answer", "gold"}``.
        n_pairs_by_is_correct: Pairs the file's own ``is_correct`` labels would give (before
            ``max_pairs_per_question``), for comparison.
    """

    pairs: list[PreferencePair] = field(default_factory=list)
    n_questions: int = 0
    n_questions_with_pairs: int = 0
    n_solutions: int = 0
    n_undecided: int = 0
    n_undecided_pairs: int = 0
    undecided: list[dict[str, Any]] = field(default_factory=list)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    n_pairs_by_is_correct: int = 0

    def summary(self) -> dict[str, int]:
        """The counts as a JSON-able dict (no pairs)."""
        return {
            "questions": self.n_questions,
            "questions_with_pairs": self.n_questions_with_pairs,
            "solutions": self.n_solutions,
            "undecided": self.n_undecided,
            "undecided_pairs": self.n_undecided_pairs,
            "disagreements": len(self.disagreements),
            "pairs": len(self.pairs),
            "pairs_by_is_correct": self.n_pairs_by_is_correct,
        }


def _solutions(path: str | Path, location: str, record: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    sols = {k: v for k, v in record.items() if isinstance(v, Mapping) and "solution" in v}
    if not sols:
        raise DataFormatError(path, location, None, "has no model solutions ({'solution': …} objects)")
    for key, sol in sols.items():
        if not isinstance(sol.get("solution"), str):
            raise DataFormatError(path, location, f"{key}.solution", "is not a string")
        if not isinstance(sol.get("is_correct"), bool):
            raise DataFormatError(path, location, f"{key}.is_correct", "is missing or not a boolean")
    return sols


def build_math_pairs_report(
    path: str | Path,
    seed: int = 0,
    max_pairs_per_question: int | None = None,
    limit: int | None = None,
    *,
    verifier: MathVerifier | None = None,
    strip_annotations: bool = True,
) -> MathBuildReport:
    """Build verified math preference pairs and report counts and label disagreements.

    Args:
        path: A GSM8K model-solutions JSONL file (optionally gzipped).
        seed: Seeds the choice of pairs when ``max_pairs_per_question`` keeps a subset.
        max_pairs_per_question: Keep at most this many (correct, wrong) pairs per question, drawn
            at random; None keeps all of them.
        limit: Stop after this many pairs in total.
        verifier: The math-verify runner to use (default: a private one, closed at the end).
        strip_annotations: Remove GSM8K calculator annotations ``<<6*2=12>>`` from the solutions
            (they are tool markup, not part of the written answer).

    Returns:
        A :class:`MathBuildReport`. Pair ids are ``gsm8k-<record index>-<chosen key>-<rejected
        key>``; ``meta`` holds the question index, both solution keys, both final answers and the
        gold answer; ``source`` is ``"gsm8k"``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        DataFormatError: a record is not valid JSON, or lacks ``question`` / ``ground_truth`` /
            model solutions (the message names line and field).
        ValueError: ``max_pairs_per_question`` or ``limit`` < 1.
    """
    if max_pairs_per_question is not None and max_pairs_per_question < 1:
        raise ValueError(f"max_pairs_per_question must be >= 1, got {max_pairs_per_question}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    own = verifier is None
    ver = verifier or MathVerifier()
    rng = random.Random(seed)
    report = MathBuildReport()
    try:
        for raw in iter_records(path):
            if raw.error is not None:
                raise DataFormatError(path, raw.location, None, raw.error)
            rec = raw.value
            if not isinstance(rec, Mapping):
                raise DataFormatError(path, raw.location, None, "is not a JSON object")
            for name in ("question", "ground_truth"):
                if not isinstance(rec.get(name), str) or not rec[name].strip():
                    raise DataFormatError(path, raw.location, name, "is missing or not a non-empty string")
            report.n_questions += 1
            _add_question(path, raw.index, raw.location, rec, ver, rng, max_pairs_per_question,
                          strip_annotations, report)
            if limit is not None and len(report.pairs) >= limit:
                del report.pairs[limit:]
                break
    finally:
        if own:
            ver.close()
    if report.disagreements:
        logger.warning(
            "%s: the answer check disagrees with is_correct on %d of %d solutions (verified label used)",
            path, len(report.disagreements), report.n_solutions,
        )
    if report.n_undecided:
        logger.warning(
            "%s: %d of %d solutions undecided (ambiguous answer or timeout); left out with %d candidate pairs",
            path, report.n_undecided, report.n_solutions, report.n_undecided_pairs,
        )
    return report


def _add_question(
    path: str | Path,
    index: int,
    location: str,
    rec: Mapping[str, Any],
    ver: MathVerifier,
    rng: random.Random,
    max_pairs: int | None,
    strip_annotations: bool,
    report: MathBuildReport,
) -> None:
    sols = _solutions(path, location, rec)
    gold = extract_final_answer(rec["ground_truth"])
    if gold is None:
        raise DataFormatError(path, location, "ground_truth", "states no final answer ('A: N' or '#### N')")
    qid = f"{SOURCE}-{index}"
    correct: list[tuple[str, str, str | None]] = []
    wrong: list[tuple[str, str, str | None]] = []
    undecided_texts: list[str] = []
    n_correct_flag = 0
    for key, sol in sols.items():
        report.n_solutions += 1
        n_correct_flag += sol["is_correct"]
        answer = extract_final_answer(sol["solution"])
        verified = False if answer is None else ver.equivalent(gold, answer)
        text = strip_calculator_annotations(sol["solution"]) if strip_annotations else sol["solution"]
        if verified is None:
            report.n_undecided += 1
            report.undecided.append({"id": qid, "solution_key": key, "answer": answer, "gold": gold})
            undecided_texts.append(text.strip())
            continue
        if verified != sol["is_correct"]:
            report.disagreements.append({
                "id": qid, "solution_key": key, "is_correct": sol["is_correct"],
                "verified": verified, "answer": answer, "gold": gold,
            })
        (correct if verified else wrong).append((key, text.strip(), answer))
    report.n_pairs_by_is_correct += n_correct_flag * (len(sols) - n_correct_flag)
    report.n_undecided_pairs += _count_undecided_pairs(undecided_texts, [c[1] for c in correct + wrong])
    # Identical texts from two models would give duplicate pairs: keep the first of each.
    seen: set[tuple[str, str]] = set()
    unique = []
    for c in correct:
        for w in wrong:
            if c[1] != w[1] and (c[1], w[1]) not in seen:
                seen.add((c[1], w[1]))
                unique.append((c, w))
    if max_pairs is not None and len(unique) > max_pairs:
        keep = sorted(rng.sample(range(len(unique)), max_pairs))
        unique = [unique[i] for i in keep]
    if not unique:
        return
    report.n_questions_with_pairs += 1
    for (ck, ctext, cans), (rk, rtext, rans) in unique:
        report.pairs.append(PreferencePair(
            id=f"{qid}-{ck}-{rk}",
            prompt=rec["question"].strip(),
            chosen=ctext,
            rejected=rtext,
            source=SOURCE,
            meta={"question_index": index, "chosen_model": ck, "rejected_model": rk,
                  "chosen_answer": cans, "rejected_answer": rans, "gold_answer": gold},
        ))


def _count_undecided_pairs(undecided: list[str], decided: list[str]) -> int:
    """Distinct-text pairs of one question's solutions with at least one undecided member."""
    pairs = {frozenset((u, d)) for u in undecided for d in decided if u != d}
    pairs |= {frozenset((a, b)) for i, a in enumerate(undecided) for b in undecided[i + 1 :] if a != b}
    return len(pairs)


def build_math_pairs(
    path: str | Path,
    seed: int = 0,
    max_pairs_per_question: int | None = None,
    limit: int | None = None,
    *,
    verifier: MathVerifier | None = None,
) -> list[PreferencePair]:
    """Verified (correct, wrong) solution pairs from a GSM8K model-solutions file.

    See :func:`build_math_pairs_report` (same arguments) for details, counts and the list of
    ``is_correct`` disagreements; this returns only the pairs.
    """
    return build_math_pairs_report(
        path, seed=seed, max_pairs_per_question=max_pairs_per_question, limit=limit, verifier=verifier
    ).pairs
