"""SFT warm-up / cold start on judge trajectories with TRL's SFTTrainer (assistant tokens only).

Two sources of trajectories:

* :func:`templated_examples` — a *format* warm-up built from the training pairs themselves: a
  short ``<think>`` (the pair's ``meta["rationale"]`` when it has one, e.g. ``48 + 24 = 72`` for
  the GSM8K arithmetic pairs) followed by the correct final-answer tags of the protocol. The
  embedded 135M model never emits the answer tags unprompted, so without this the first GRPO
  steps would see all-invalid groups with zero reward variance and learn nothing.
* :func:`rejection_sample` — judgments sampled from any backend (a stronger judge, or the model
  itself: TIR-Judge-Zero's rejection sampling), keeping per prompt the correct one that is
  shortest with the fewest tool calls.

Both yield prompt–completion examples ``{"prompt": [messages], "completion": [{"role":
"assistant", "content": …}]}``; TRL's SFTTrainer then computes the loss on the completion
(assistant) tokens only (``completion_only_loss``, its default for this dataset shape).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from judgerl.types import Decision, PreferencePair


def _tool_think(pair: PreferencePair) -> str:
    expr = pair.meta.get("expression")
    if not expr:
        return ""
    return f"Let me check with Python.\n```python\nprint({expr})\n```\n```output\n{pair.meta['value']}\n```\n"


def warmup_target(
    pair: PreferencePair,
    protocol: Any,
    *,
    order: int | None = None,
    role: str | None = None,
    gold_score: float | None = None,
    tools: bool = False,
) -> str:
    """The templated correct judgment of one row, written by the protocol itself
    (:meth:`~judgerl.protocols.JudgeProtocol.render_judgment`), so every protocol -- listwise
    included -- gets its own answer format and scale.

    Pairwise (``order`` 0 = chosen shown as A, 1 = chosen shown as B): a short thought and the
    correct verdict (score protocols: ``max - 1`` for the winner, ``min + 1`` for the loser, or the
    extremes on tiny scales). Pointwise (``role`` "chosen"/"rejected"): ``gold_score`` if given,
    else ``max_score`` for the chosen and ``min_score`` for the rejected response. Listwise
    (``order`` as pairwise, the two responses as Response 1 and 2): the chosen one is best / ranked
    first. With ``tools=True`` and an arithmetic pair the thinking contains a python block and its
    output.

    Raises:
        ValueError: neither/both of ``order`` and ``role`` given for the protocol's kind.
    """
    rationale = str(pair.meta.get("rationale") or "")
    think_head = (_tool_think(pair) if tools else "") + (f"{rationale}. " if rationale else "")
    kind = protocol.kind
    if kind in ("pairwise", "listwise"):
        if order not in (0, 1) or role is not None:
            raise ValueError(f"a {kind} target needs order=0|1 and no role")
        first, second = (pair.chosen, pair.rejected) if order == 0 else (pair.rejected, pair.chosen)
        winner = ("A", "B")[order] if kind == "pairwise" else ("1", "2")[order]
        if rationale:
            think = f"{think_head}The first says {_short(first)}, the second says {_short(second)}. {winner} is correct."
        else:
            think = f"{think_head}Response {winner} follows the instruction better."
        if kind == "listwise":
            ranking = (order, 1 - order)
            decision = Decision(valid=True, ranking=ranking if protocol.mode == "rank" else ranking[:1])
        else:
            lo, hi = float(getattr(protocol, "min_score", 0)), float(getattr(protocol, "max_score", 10))
            good, bad = (hi - 1, lo + 1) if hi - lo > 2 else (hi, lo)
            scores = (good, bad) if order == 0 else (bad, good)
            decision = Decision(valid=True, verdict=winner, scores=scores)  # type: ignore[arg-type]
            if protocol.name == "pav":
                decision = Decision(valid=True, verdict=winner)  # type: ignore[arg-type]
        return protocol.render_judgment(think, decision)
    if kind == "pointwise":
        if role not in ("chosen", "rejected") or order is not None:
            raise ValueError("a pointwise target needs role='chosen'|'rejected' and no order")
        if gold_score is None:
            gold_score = protocol.max_score if role == "chosen" else protocol.min_score
        response = pair.chosen if role == "chosen" else pair.rejected
        if rationale:
            verdict = "correct" if role == "chosen" else "wrong"
            think = f"{think_head}The answer says {_short(response)}, which is {verdict}."
        else:
            think = "The response follows the instruction well." if role == "chosen" else "The response is poor."
        return protocol.render_judgment(think, Decision(valid=True, scores=(float(gold_score),)))
    raise ValueError(f"no warm-up template for {kind} protocol {protocol.name!r}")


def _short(response: str) -> str:
    """The part after the last '=' of an arithmetic response (the claimed value), else the text."""
    return response.rsplit("=", 1)[-1].strip() if "=" in response else response.strip()


def templated_examples(rows: Sequence[dict[str, Any]], pairs_by_id: dict[str, PreferencePair],
                       protocols: Any) -> list[dict[str, Any]]:
    """Prompt–completion SFT examples: the GRPO ``rows`` (see ``judgerl.train.datasets``) with
    their templated correct judgments.

    Args:
        rows: GRPO rows (``prompt``, ``protocol`` name, ``pair_id``, ``order``/``role``, ``gold_score``).
        pairs_by_id: The pairs the rows came from.
        protocols: The protocol objects of the rows (one or a list); each row uses the one its
            ``protocol`` column names.

    Raises:
        KeyError: a row's ``pair_id`` is not in ``pairs_by_id``, or its protocol is not given.
    """
    from judgerl.rewards._columns import protocol_set

    by_name = protocol_set(protocols)
    out = []
    for r in rows:
        pair = pairs_by_id[r["pair_id"]]
        if r["protocol"] not in by_name:
            raise KeyError(f"row of pair {r['pair_id']!r}: protocol {r['protocol']!r} not among {sorted(by_name)}")
        tools = "```python" in r["prompt"][0]["content"]
        target = warmup_target(
            pair,
            by_name[r["protocol"]],
            order=r["order"] if r["role"] is None else None,
            role=r["role"],
            gold_score=r.get("gold_score"),
            tools=tools,
        )
        out.append({"prompt": r["prompt"], "completion": [{"role": "assistant", "content": target}]})
    return out


def rejection_sample(
    backend: Any,
    rows: Sequence[dict[str, Any]],
    samples: int,
    params: Any,
    is_correct: Any,
) -> list[dict[str, Any]]:
    """TIR-Judge-Zero rejection sampling: per row keep the correct judgment that is shortest.

    Args:
        backend: A judgerl backend (``generate(prompts, params)``).
        rows: GRPO rows (``prompt`` messages, ``protocol``, …).
        samples: Judgments sampled per row (``params`` should sample, temperature > 0).
        params: ``SamplingParams``; the seed is offset per sample.
        is_correct: ``f(row, text) -> bool`` (e.g. built from a reward function).

    Returns:
        Prompt–completion examples; rows with no correct sample are left out. Ties in length are
        broken by the fewest ``python`` code blocks.

    Raises:
        ValueError: ``samples`` < 1.
    """
    from dataclasses import replace

    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    best: dict[int, tuple[tuple[int, int], str]] = {}
    for s in range(samples):
        p = replace(params, seed=None if params.seed is None else params.seed + s)
        for i, c in enumerate(backend.generate([r["prompt"] for r in rows], p)):
            if not is_correct(rows[i], c.text):
                continue
            key = (c.completion_tokens, c.text.count("```python"))
            if i not in best or key < best[i][0]:
                best[i] = (key, c.text)
    return [
        {"prompt": rows[i]["prompt"], "completion": [{"role": "assistant", "content": best[i][1]}]}
        for i in sorted(best)
    ]


def run_sft(
    model: Any,
    tokenizer: Any,
    examples: Sequence[dict[str, Any]],
    output_dir: str | Path,
    sft_kwargs: dict[str, Any] | None = None,
    callbacks: Sequence[Any] = (),
) -> Any:
    """Fine-tune ``model`` on prompt–completion ``examples`` with ``trl.SFTTrainer``.

    Args:
        model: A transformers causal LM (trained in place) or a model path.
        tokenizer: Its tokenizer (with a chat template).
        examples: ``{"prompt": messages, "completion": [assistant message]}`` dicts.
        output_dir: SFT checkpoints / logs directory.
        sft_kwargs: ``trl.SFTConfig`` keyword arguments (``max_steps``, ``learning_rate``, …);
            ``completion_only_loss`` is forced on (loss on the assistant's tokens only).
        callbacks: Extra ``TrainerCallback``s (e.g. :class:`~judgerl.train.callbacks.MetricsLogger`).

    Returns:
        The trained model (``trainer.model``).

    Raises:
        ValueError: no examples.
    """
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    if not examples:
        raise ValueError("SFT needs at least one example")
    kw = dict(
        output_dir=str(output_dir),
        per_device_train_batch_size=8,
        learning_rate=5e-5,
        max_steps=50,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        max_length=1024,
    )
    from judgerl.train.trainer import cpu_precision_defaults

    kw.update(cpu_precision_defaults())
    kw.update(sft_kwargs or {})
    kw["completion_only_loss"] = True
    config = SFTConfig(**kw)
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(list(examples)),
        processing_class=tokenizer,
        callbacks=list(callbacks),
    )
    trainer.train()
    return trainer.model
