"""Turn preference pairs into GRPO prompt rows (position-agnostic batching, pointwise splits).

Every task writes rows in *blocks of two* that must be generated in the same batch:

* ``pairwise`` / ``tir``: (x, chosen, rejected) with ``order=0, label="A"`` then
  (x, rejected, chosen) with ``order=1, label="B"`` — J1's position-agnostic batching;
* ``pointwise``: (x, chosen) with ``role="chosen"`` then (x, rejected) with ``role="rejected"`` —
  J1's pointwise judge trained from pairwise labels;
* ``multitask``: the pairwise block and the pointwise block of every pair;
* ``tir-pointwise``: (x, chosen) and (x, rejected) with tools, each with its ``gold_score``
  (:func:`gold_scores`): TIR-Judge's pointwise format;
* ``regression``: (x, chosen) and (x, rejected), each with its ``gold_score``.

:class:`~judgerl.train.trainer.PairBlockRepeatSampler` shuffles whole blocks, never splitting one,
so with an even number of prompts per generation batch both halves of a block always reach the
same reward-function call.

Columns of every row: ``prompt`` (chat messages), ``protocol``, ``pair_id``, ``order``, ``label``,
``role``, ``gold_score``, ``source`` (unused fields are None), ``responses``: the responses the
prompt shows, in prompt order -- the rewards and the TIR rollout read every completion against them
(:func:`judgerl.judge.decision.read_decision`), so a verdict or score copied from a response is invalid --,
``question`` (the user question: ``PROMPT`` of the response namespace) and ``category`` (the pair's
``meta["domain"]``: the TIR reward's format term requires no tool call on ``chat`` / ``safety`` rows).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from judgerl.protocols.base import JudgeProtocol
from judgerl.text.codeblocks import MAX_TOOL_ROUNDS
from judgerl.train.config import TASKS, TIR_TASKS, RecipeError
from judgerl.train.sections import DataConfig
from judgerl.types import Messages, PreferencePair

BLOCK = 2  #: rows per block; generation batches must hold whole blocks


def _category(pair: PreferencePair) -> str | None:
    """The row's ``category`` (the TIR reward's no-tool rule reads it): the pair's ``meta["domain"]``
    (``chat`` / ``safety`` from :mod:`judgerl.data.builders.chat_mix`, ``arith/<form>``, ``code``, ``if``)."""
    domain = pair.meta.get("domain") if isinstance(pair.meta, dict) else None
    return domain if isinstance(domain, str) else None


def _row(messages: Any, protocol: Any, pair: PreferencePair, responses: Sequence[str], **extra: Any) -> dict[str, Any]:
    row = {
        "prompt": [dict(m) for m in messages],
        "responses": list(responses),
        "protocol": protocol.name,
        "pair_id": pair.id,
        "order": None,
        "label": None,
        "role": None,
        "gold_score": None,
        "source": pair.source,
        "question": pair.prompt,
        "category": _category(pair),
    }
    row.update(extra)
    return row


def gold_scores(pair: PreferencePair, score_min: float, score_max: float) -> tuple[float, float]:
    """Gold pointwise scores of (chosen, rejected) for the regression task.

    Uses ``pair.chosen_score`` / ``pair.rejected_score`` when both are set (clipped to the scale);
    otherwise — verifiable pairs, whose chosen answer is correct and rejected answer wrong — the
    chosen response gets ``score_max`` and the rejected one ``score_min`` (e.g. 9 / 0 on 0–9).
    """
    if pair.chosen_score is not None and pair.rejected_score is not None:
        clip = lambda s: float(min(max(s, score_min), score_max))  # noqa: E731
        return clip(pair.chosen_score), clip(pair.rejected_score)
    return float(score_max), float(score_min)


def build_rows(
    pairs: Sequence[PreferencePair],
    task: str,
    pairwise: JudgeProtocol | None = None,
    pointwise: JudgeProtocol | None = None,
    *,
    max_tool_rounds: int = MAX_TOOL_ROUNDS,
) -> list[dict[str, Any]]:
    """GRPO dataset rows for ``task`` (see module docstring), in blocks of :data:`BLOCK`.

    Args:
        pairs: Training pairs; ties are skipped (no gold preference).
        task: ``pairwise``, ``pointwise``, ``multitask``, ``tir``, ``tir-pointwise`` or ``regression``.
        pairwise: The pairwise protocol object (tasks pairwise / multitask / tir).
        pointwise: The pointwise protocol object with its scale (pointwise / multitask / regression /
            tir-pointwise); regression and tir-pointwise gold scores are clipped to its scale.
        max_tool_rounds: The rollouts' tool budget, stated in ``tir`` / ``tir-pointwise`` prompts.

    Prompts are built with these protocols (``tools=True`` for the TIR tasks), each with its pair's
    :attr:`~judgerl.types.PreferencePair.rubric` (rubric-conditioned judging: a judge trained on rubric prompts is
    served and evaluated with ``--rubric``); the ``protocol`` column holds each row's protocol name.

    Raises:
        ValueError: unknown task, a protocol the task needs is missing, or no usable (non-tie) pair.
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}")
    pw = pairwise if task in ("pairwise", "multitask", "tir") else None
    pt = pointwise if task in ("pointwise", "multitask", "regression", "tir-pointwise") else None
    if task in ("pairwise", "multitask", "tir") and pw is None:
        raise ValueError(f"task {task!r} needs a pairwise protocol")
    if task in ("pointwise", "multitask", "regression", "tir-pointwise") and pt is None:
        raise ValueError(f"task {task!r} needs a pointwise protocol")
    tools = task in TIR_TASKS
    scored = task in ("regression", "tir-pointwise")
    rows: list[dict[str, Any]] = []
    for p in pairs:
        if p.tie:
            continue
        ab, ba = [p.chosen, p.rejected], [p.rejected, p.chosen]
        if pw is not None:
            rows.append(_row(pw.build(p.prompt, ab, tools=tools, max_tool_rounds=max_tool_rounds, rubric=p.rubric),
                             pw, p, ab, order=0, label="A"))
            rows.append(_row(pw.build(p.prompt, ba, tools=tools, max_tool_rounds=max_tool_rounds, rubric=p.rubric),
                             pw, p, ba, order=1, label="B"))
        if pt is not None and not scored:
            rows.append(_row(pt.build(p.prompt, [p.chosen], rubric=p.rubric), pt, p, [p.chosen], role="chosen"))
            rows.append(_row(pt.build(p.prompt, [p.rejected], rubric=p.rubric), pt, p, [p.rejected], role="rejected"))
        if scored:
            sc, sr = gold_scores(p, *pt.score_scale)  # type: ignore[misc]
            for role, text, gold in (("chosen", p.chosen, sc), ("rejected", p.rejected, sr)):
                msgs = pt.build(p.prompt, [text], tools=tools, max_tool_rounds=max_tool_rounds,  # type: ignore[union-attr]
                                rubric=p.rubric)
                rows.append(_row(msgs, pt, p, [text], role=role, gold_score=gold))
    if not rows:
        raise ValueError("no usable pairs: every pair is a tie or the list is empty")
    return rows


def load_training_pairs(data: DataConfig, seed: int = 0) -> list[PreferencePair]:
    """A recipe's training pairs: ``data.builder`` or ``data.path`` (via ``judgerl.data.load_pairs``),
    without ties, ``data.offset`` skipped and at most ``data.limit`` kept; ``seed`` seeds a builder.

    See :class:`~judgerl.train.sections.DataConfig` for the fields.

    Raises:
        RecipeError: unknown builder, missing ``source``, or no usable pair.
        judgerl.data.DataFormatError / FileNotFoundError: from the loaders.
    """
    d = data
    need = None if d.limit is None else int(d.limit) + int(d.offset)
    if d.builder:
        if d.builder != "gsm8k-arith":
            raise RecipeError(f"data.builder={d.builder!r}: known builders: gsm8k-arith")
        if not d.source:
            raise RecipeError("data.builder=gsm8k-arith needs data.source (a GSM8K jsonl file)")
        from judgerl.data.builders.arith import build_arithmetic_pairs

        pairs = build_arithmetic_pairs(d.source, limit=need, seed=seed, max_value=int(d.max_value), ops=d.ops)
    else:
        from judgerl.data import load_pairs

        res = load_pairs(d.path, format=d.format, field_map=d.field_map, skip_invalid=bool(d.skip_invalid), limit=None)
        pairs = [p for p in res.pairs if not p.tie]
        if need is not None:
            pairs = pairs[:need]
    pairs = pairs[int(d.offset):]
    if not pairs:
        raise RecipeError("data: no usable (non-tie) training pairs")
    return pairs


def prompt_key(messages: Messages) -> str:
    """The identity of a judge prompt without its assistant prefill (JSON of the other messages): how
    the TIR rollout and the programmatic teacher find a prompt's row."""
    msgs = list(messages)
    if msgs and msgs[-1].get("role") == "assistant":
        msgs = msgs[:-1]
    return json.dumps([[m.get("role"), m.get("content")] for m in msgs], ensure_ascii=False)


def with_prefill(rows: Sequence[dict[str, Any]], prefill: str | None) -> list[dict[str, Any]]:
    """Copies of ``rows`` whose prompt ends with an assistant message holding ``prefill`` (the judge
    continues that text; e.g. ``<think>Let me check with Python.\n```python\n`` nudges a small base
    to write code). ``None`` or ``""`` returns the rows unchanged.

    Raises:
        ValueError: a row's prompt already ends with an assistant message.
    """
    if not prefill:
        return list(rows)
    out = []
    for r in rows:
        if r["prompt"] and r["prompt"][-1]["role"] == "assistant":
            raise ValueError(f"row of pair {r['pair_id']!r} already has an assistant prefill")
        out.append({**r, "prompt": [*r["prompt"], {"role": "assistant", "content": prefill}]})
    return out


def to_dataset(rows: list[dict[str, Any]]) -> Any:
    """A ``datasets.Dataset`` of the rows (all columns kept; None-only columns typed as strings)."""
    from datasets import Dataset, Features, Value

    features = Features(
        {
            "prompt": [{"role": Value("string"), "content": Value("string")}],
            "responses": [Value("string")],
            "protocol": Value("string"),
            "pair_id": Value("string"),
            "order": Value("int64"),
            "label": Value("string"),
            "role": Value("string"),
            "gold_score": Value("float64"),
            "source": Value("string"),
            "question": Value("string"),
            "category": Value("string"),
        }
    )
    return Dataset.from_list(rows, features=features)
