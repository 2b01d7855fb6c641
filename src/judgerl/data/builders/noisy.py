"""J1 synthetic pairs for non-verifiable prompts: answers to an instruction vs to a noisy variant.

J1 (Whitehouse et al., 2025, Sec. 3, after Self-Taught Evaluators, Wang et al., 2024) builds
preference pairs without human labels for WildChat-style prompts: an LLM rewrites the instruction
x into a *noisy* variant x' that is close but asks for something slightly different; a model
answers both; chosen = its answer to x, rejected = its answer to x' (a fluent answer to the wrong
question). Any backend can rewrite and answer (``openai/<model>``, a local model, the embedded one,
``scripted/<file>`` in tests).

Items are instructions read from a JSON / JSONL file (any of the fields ``prompt``, ``instruction``,
``question``, ``input``, or ``--field``). Per item, with seeds derived from (seed, item id, role):

1. rewrite: the rewriter gets :data:`REWRITE_SYSTEM` and the instruction; its output is cleaned
   (a leading "Rewritten instruction:" label and wrapping quotes removed). Dropped when empty,
   unchanged (case and whitespace ignored) or over ``max_growth`` times longer;
2. answer x and x' with the answerer; dropped when an answer is empty, cut by the token limit
   (``finish_reason`` length, unless ``allow_truncated``) or identical to the other;
3. a pair ``noisy-<item id>`` with provenance in ``meta``: ``noisy_instruction``,
   ``generator_model`` (answerer), ``rewriter_model``, ``seed``, ``source_id``, ``source_file``.

A failed generation (API error, filtered answer) leaves the item undone, so a resumed run retries
it; every other outcome is recorded in the ledger (:class:`~judgerl.data.builders._sink.PairSink`)
and counted in the summary. Instructions repeated in the input (same text up to case and
whitespace) are built once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from judgerl.backends.base import SamplingParams, derive_seed
from judgerl.data.builders._sink import PairSink
from judgerl.data.errors import DataFormatError
from judgerl.data.io import iter_records
from judgerl.types import PreferencePair

SOURCE = "synthetic/noisy-instruction"
INSTRUCTION_FIELDS = ("prompt", "instruction", "question", "input")
ID_FIELDS = ("key", "id", "idx")
#: The rewriter's instructions (Self-Taught Evaluators' "modified instruction" prompt, shortened).
REWRITE_SYSTEM = (
    "Rewrite the user's instruction into a new instruction that is highly relevant to it but asks for "
    "something slightly different: change one requirement, detail, constraint or quantity, so that a "
    "correct answer to the new instruction would be a wrong answer to the original. Output only the new "
    "instruction, nothing else."
)
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:new|rewritten|modified|noisy)?\s*instruction\s*(?::\s*\*\*|\*\*\s*:|:)\s*",
                    re.IGNORECASE)


@dataclass(frozen=True)
class Instruction:
    """One input item: ``id`` (stable across runs) and the instruction ``text``."""

    id: str
    text: str


def read_instructions(path: str | Path, field: str | None = None, limit: int | None = None) -> list[Instruction]:
    """Instructions from a JSON / JSONL file (optionally gzipped).

    Args:
        path: The file.
        field: The instruction field (default: the first of :data:`INSTRUCTION_FIELDS` present).
        limit: Stop after this many records.

    Returns:
        Items with ids from ``key`` / ``id`` / ``idx`` or ``<file stem>-<index>``.

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: invalid JSON, or a record without a non-empty string instruction (names
            line and field).
    """
    out = []
    for raw in iter_records(path):
        if raw.error is not None:
            raise DataFormatError(path, raw.location, None, raw.error)
        rec = raw.value
        if not isinstance(rec, dict):
            raise DataFormatError(path, raw.location, None, "is not a JSON object")
        name = field or next((f for f in INSTRUCTION_FIELDS if f in rec), None)
        if name is None:
            raise DataFormatError(path, raw.location, None, f"has none of the fields {', '.join(INSTRUCTION_FIELDS)} "
                                  "(choose one with --field)")
        text = rec.get(name)
        if not isinstance(text, str) or not text.strip():
            raise DataFormatError(path, raw.location, name, "is missing or not a non-empty string")
        rid = next((rec[f] for f in ID_FIELDS if isinstance(rec.get(f), (str, int)) and not isinstance(rec.get(f), bool)), None)
        out.append(Instruction(str(rid) if rid is not None else f"{Path(path).stem}-{raw.index}", text.strip()))
        if limit is not None and len(out) >= limit:
            break
    return out


def normalize(text: str) -> str:
    """Case- and whitespace-insensitive form of a text (duplicate / unchanged checks)."""
    return " ".join(text.split()).casefold()


def clean_rewrite(text: str) -> str:
    """The rewriter's output without a leading label (``Rewritten instruction:``) or wrapping quotes."""
    t = _LABEL.sub("", text.strip(), count=1).strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'`":
        t = t[1:-1].strip()
    return t


def rewrite_messages(instruction: str) -> list[dict[str, str]]:
    """The rewriter's prompt for one instruction."""
    return [{"role": "system", "content": REWRITE_SYSTEM}, {"role": "user", "content": instruction}]


def _failed(c: Any) -> bool:
    return c.error is not None or c.finish_reason in ("error", "content_filter", "prompt_too_long")


def build_noisy_instruction_pairs(
    items: Sequence[Instruction],
    rewriter: Any,
    answerer: Any,
    out: str | Path,
    *,
    seed: int = 0,
    rewrite_params: SamplingParams | None = None,
    answer_params: SamplingParams | None = None,
    batch_size: int = 16,
    max_growth: float = 3.0,
    allow_truncated: bool = False,
    source_file: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Build noisy-instruction pairs into ``out`` (see the module docstring), resumably.

    Args:
        items: Instructions (e.g. :func:`read_instructions`).
        rewriter: Backend writing the noisy variants. answerer: Backend answering (the generator).
        out: Canonical JSONL output; ``<out>.progress.jsonl`` is its ledger.
        seed: Base of every sampling seed.
        rewrite_params: Default: 128 new tokens, temperature 0.7.
        answer_params: Default: 256 new tokens, greedy.
        batch_size: Items per generation call (speed only; seeds are per item).
        max_growth: A rewrite longer than ``max_growth × len(x) + 200`` characters is dropped.
        allow_truncated: Keep answers cut by the token limit.
        source_file: Recorded in ``meta``.
        progress: Called ``f(done, total)`` after each batch.

    Returns:
        The :meth:`PairSink.summary` plus ``retry`` (items left for a later run after failed
        generations) and ``duplicates`` (repeated instructions in the input).

    Raises:
        ValueError: from :class:`PairSink` (a ledger of another configuration, a ``.gz`` output).
    """
    rp = rewrite_params or SamplingParams(max_new_tokens=128, temperature=0.7)
    ap = answer_params or SamplingParams(max_new_tokens=256, temperature=0.0)
    rname, aname = getattr(rewriter, "name", "?"), getattr(answerer, "name", "?")
    sink = PairSink(out, {"builder": "noisy-instructions", "rewriter_model": rname, "generator_model": aname,
                          "seed": seed, "rewrite_params": _params(rp), "answer_params": _params(ap)})
    seen: set[str] = set()
    todo, duplicates = [], 0
    for it in items:
        key = normalize(it.text)
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        if not sink.done(it.id):
            todo.append(it)
    retry = 0
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        rewrites = rewriter.generate([rewrite_messages(it.text) for it in batch], rp,
                                     seeds=[derive_seed(seed, it.id, "rewrite") for it in batch])
        keep: list[tuple[Instruction, str]] = []
        for it, c in zip(batch, rewrites):
            if _failed(c):
                retry += 1
                continue
            noisy = clean_rewrite(c.text)
            if not noisy:
                sink.finish(it.id, [], "rewrite_empty")
            elif normalize(noisy) == normalize(it.text):
                sink.finish(it.id, [], "rewrite_unchanged")
            elif len(noisy) > max_growth * len(it.text) + 200:
                sink.finish(it.id, [], "rewrite_too_long")
            else:
                keep.append((it, noisy))
        prompts, seeds = [], []
        for it, noisy in keep:
            prompts += [[{"role": "user", "content": it.text}], [{"role": "user", "content": noisy}]]
            seeds += [derive_seed(seed, it.id, "chosen"), derive_seed(seed, it.id, "rejected")]
        answers = answerer.generate(prompts, ap, seeds=seeds) if prompts else []
        for k, (it, noisy) in enumerate(keep):
            good, bad = answers[2 * k], answers[2 * k + 1]
            if _failed(good) or _failed(bad):
                retry += 1
                continue
            if not good.text.strip() or not bad.text.strip():
                sink.finish(it.id, [], "answer_empty")
            elif not allow_truncated and "length" in (good.finish_reason, bad.finish_reason):
                sink.finish(it.id, [], "answer_truncated")
            elif normalize(good.text) == normalize(bad.text):
                sink.finish(it.id, [], "identical_answers")
            else:
                pair = PreferencePair(
                    id=f"noisy-{it.id}", prompt=it.text, chosen=good.text.strip(), rejected=bad.text.strip(),
                    source=SOURCE,
                    meta={"noisy_instruction": noisy, "generator_model": aname, "rewriter_model": rname,
                          "seed": seed, "source_id": it.id, "source_file": source_file},
                )
                sink.finish(it.id, [pair], "pair")
        if progress is not None:
            progress(min(start + batch_size, len(todo)), len(todo))
    summary = sink.summary()
    summary.update(retry=retry, duplicates=duplicates)
    return summary


def _params(p: SamplingParams) -> dict[str, Any]:
    return {"max_new_tokens": p.max_new_tokens, "temperature": p.temperature, "top_p": p.top_p}
