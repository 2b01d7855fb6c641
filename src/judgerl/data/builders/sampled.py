"""J1 synthetic verifiable pairs: sampled solutions to GSM8K questions, labelled by the math verifier.

J1 (Whitehouse et al., 2025, Sec. 3: "verifiable prompts: sample several solutions; chosen matches
the gold answer, rejected does not") and TIR-Judge's synthetic verifiable data: for each question,
sample ``n`` solutions with any backend (seeds from (seed, question id, sample index)), read each
one's final answer (:func:`judgerl.verify.math.extract_final_answer`) and label it with
:func:`judgerl.verify.math.answers_match` against the gold solution:

* True -> correct, False -> wrong;
* None (undecided: an ambiguous answer, a timeout) -> dropped and counted (``undecided``), never
  guessed;
* no stated final answer -> dropped and counted (``no_answer``): a missing answer is not the
  same kind of mistake as a wrong one.

Each question gives up to ``max_pairs_per_question`` pairs (chosen = a correct solution, rejected =
a wrong one; distinct texts; drawn with an RNG seeded by (seed, question id)), with provenance in
``meta``: ``generator_model``, ``seed``, ``samples`` (n), ``chosen_sample`` / ``rejected_sample``
(sample indices), both final answers, ``gold_answer``, ``question_id``. Output and resume: see
:class:`~judgerl.data.builders._sink.PairSink` (a question whose generation failed is retried).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from judgerl.backends.base import SamplingParams, derive_seed
from judgerl.data.builders._sink import PairSink
from judgerl.data.errors import DataFormatError
from judgerl.data.io import iter_records
from judgerl.types import PreferencePair

SOURCE = "synthetic/sampled-solutions"
#: The solver's instructions: think step by step, end with GSM8K's answer line.
SOLVE_SYSTEM = ("Solve the math problem step by step. End your answer with a final line of the form "
                "'#### <number>'.")


@dataclass(frozen=True)
class Question:
    """One GSM8K item: ``id``, ``question``, the ``gold`` solution text (ending ``#### N``) and its
    ``location`` in the file (``"line 12"``; empty for a question made in code)."""

    id: str
    question: str
    gold: str
    location: str = ""


def iter_gsm8k(path: str | Path) -> Iterator[Question]:
    """The questions of a GSM8K JSONL file (``question``, ``answer``), in file order, read lazily: the one
    GSM8K record reader (the J1 sampled pairs, the word-problem pairs of
    :mod:`judgerl.data.builders.gsm8k_forms`).

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: invalid JSON or a missing / empty field (names line and field).
    """
    for raw in iter_records(path):
        if raw.error is not None:
            raise DataFormatError(path, raw.location, None, raw.error)
        rec = raw.value
        if not isinstance(rec, dict):
            raise DataFormatError(path, raw.location, None, "is not a JSON object")
        for name in ("question", "answer"):
            if not isinstance(rec.get(name), str) or not rec[name].strip():
                raise DataFormatError(path, raw.location, name, "is missing or not a non-empty string")
        yield Question(f"{Path(path).stem}-{raw.index}", rec["question"].strip(), rec["answer"], raw.location)


def read_gsm8k(path: str | Path, limit: int | None = None) -> list[Question]:
    """The first ``limit`` (all: None) questions of :func:`iter_gsm8k`.

    Raises:
        FileNotFoundError, DataFormatError: as :func:`iter_gsm8k`.
    """
    return list(islice(iter_gsm8k(path), limit))


def solve_messages(question: str) -> list[dict[str, str]]:
    """The solver's prompt for one question."""
    return [{"role": "system", "content": SOLVE_SYSTEM}, {"role": "user", "content": question}]


def _failed(c: Any) -> bool:
    return c.error is not None or c.finish_reason in ("error", "content_filter", "prompt_too_long")


def build_sampled_solution_pairs(
    questions: Sequence[Question],
    backend: Any,
    out: str | Path,
    *,
    samples: int = 8,
    seed: int = 0,
    params: SamplingParams | None = None,
    max_pairs_per_question: int = 1,
    batch_size: int = 4,
    verifier: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Sample, verify and pair solutions into ``out`` (see the module docstring), resumably.

    Args:
        questions: E.g. :func:`read_gsm8k`.
        backend: The generator. samples: Solutions per question (>= 2).
        out: Canonical JSONL output; ``<out>.progress.jsonl`` is its ledger.
        seed: Base of the sampling seeds and of the pair choice.
        params: Default: 256 new tokens, temperature 0.8.
        max_pairs_per_question: Pairs kept per question (>= 1).
        batch_size: Questions per generation call (speed only).
        verifier: A :class:`judgerl.verify.math.MathVerifier` (default: the process-wide one).
        progress: Called ``f(done, total)`` after each batch.

    Returns:
        :meth:`PairSink.summary` (counts ``correct``, ``wrong``, ``undecided``, ``no_answer``,
        ``truncated`` over all questions, ``by_status``: ``pair`` / ``no_pair``) plus ``retry``.

    Raises:
        ValueError: ``samples`` < 2, ``max_pairs_per_question`` < 1, or from :class:`PairSink`.
    """
    from judgerl.verify.math import answers_match, extract_final_answer

    if samples < 2:
        raise ValueError(f"samples must be >= 2 to find a correct and a wrong solution, got {samples}")
    if max_pairs_per_question < 1:
        raise ValueError(f"max_pairs_per_question must be >= 1, got {max_pairs_per_question}")
    p = params or SamplingParams(max_new_tokens=256, temperature=0.8)
    name = getattr(backend, "name", "?")
    sink = PairSink(out, {"builder": "sampled-solutions", "generator_model": name, "seed": seed, "samples": samples,
                          "max_pairs_per_question": max_pairs_per_question,
                          "params": {"max_new_tokens": p.max_new_tokens, "temperature": p.temperature, "top_p": p.top_p}})
    todo = [q for q in questions if not sink.done(q.id)]
    retry = 0
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        prompts = [solve_messages(q.question) for q in batch for _ in range(samples)]
        seeds = [derive_seed(seed, q.id, k) for q in batch for k in range(samples)]
        outs = backend.generate(prompts, p, seeds=seeds)
        for b, q in enumerate(batch):
            sols = outs[b * samples : (b + 1) * samples]
            if any(_failed(c) for c in sols):
                retry += 1
                continue
            counts = {"correct": 0, "wrong": 0, "undecided": 0, "no_answer": 0, "truncated": 0}
            good, bad = [], []
            for k, c in enumerate(sols):
                text = c.text.strip()
                counts["truncated"] += c.finish_reason == "length"
                answer = extract_final_answer(text) if text else None
                if answer is None:
                    counts["no_answer"] += 1
                    continue
                label = answers_match(q.gold, text, verifier)
                if label is None:
                    counts["undecided"] += 1
                    continue
                counts["correct" if label else "wrong"] += 1
                (good if label else bad).append((k, text, answer))
            pairs = _pairs(q, good, bad, name, seed, samples, max_pairs_per_question, extract_final_answer(q.gold))
            sink.finish(q.id, pairs, "pair" if pairs else "no_pair", **counts)
        if progress is not None:
            progress(min(start + batch_size, len(todo)), len(todo))
    summary = sink.summary()
    summary["retry"] = retry
    return summary


def _pairs(q: Question, good: list, bad: list, model: str, seed: int, samples: int, max_pairs: int,
           gold: str | None) -> list[PreferencePair]:
    combos, seen = [], set()
    for g in good:
        for b in bad:
            if g[1] != b[1] and (g[1], b[1]) not in seen:
                seen.add((g[1], b[1]))
                combos.append((g, b))
    if len(combos) > max_pairs:
        rng = random.Random(f"{seed}/{q.id}")
        combos = [combos[i] for i in sorted(rng.sample(range(len(combos)), max_pairs))]
    return [
        PreferencePair(
            id=f"sampled-{q.id}-{g[0]}-{b[0]}", prompt=q.question, chosen=g[1], rejected=b[1], source=SOURCE,
            meta={"generator_model": model, "seed": seed, "samples": samples, "chosen_sample": g[0],
                  "rejected_sample": b[0], "chosen_answer": g[2], "rejected_answer": b[2], "gold_answer": gold,
                  "question_id": q.id},
        )
        for g, b in combos
    ]
