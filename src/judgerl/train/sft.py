"""SFT of judges on trajectories with TRL's SFTTrainer: assistant tokens only, tool outputs masked.

An SFT target is an :class:`SFTExample`: the judge prompt (chat messages) and the judgment as
``(segment kind, text)`` pieces -- the same kinds as a :class:`~judgerl.types.Trajectory`
(``model`` / ``code`` written by the judge, ``tool`` = interpreter output judgerl inserted,
``forced`` = an answer-forcing prefill). :func:`tokenize_example` turns it into a pre-tokenized
row for TRL: ``input_ids`` = the rendered prompt (:func:`judgerl.backends.chat.render_chat`, the
same text eval and GRPO show the judge) followed by the tokens of the judgment and EOS, and
``completion_mask`` = 0 on the prompt and on ``tool`` tokens, 1 elsewhere. With
``completion_only_loss=True`` TRL 1.16 turns every 0 into label -100 (``SFTTrainer._prepare_dataset``:
"labels are built from the optional completion_mask column"), so the loss covers the judge's own
tokens only: TIR-Judge (Xu et al., 2025, Sec. 3) masks interpreter output out of the loss.
``forced`` text *is* trained here: in SFT it is the answer format the judge should learn to write
itself (TIR-Judge-Zero's rounds rely on this); GRPO rollouts mask it (it is not the policy's).

Two sources of examples live here; teacher trajectories come from :mod:`judgerl.train.distill`:

* :func:`templated_examples` -- a *format* warm-up built from the training pairs themselves: a
  short ``<think>`` (the pair's ``meta["rationale"]`` when it has one, e.g. ``48 + 24 = 72``)
  followed by the correct final-answer tags of the protocol; with tools, a python block and its
  output (masked). The embedded 135M model never emits the answer tags unprompted, so without this
  the first GRPO steps would see all-invalid groups with zero reward variance and learn nothing.
* :func:`example_from_judgment` -- any :class:`~judgerl.judge.Judgment` (teacher or self-sampled).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from judgerl.text.codeblocks import output_block
from judgerl.types import Decision, PreferencePair

#: Segment kinds excluded from the SFT loss (interpreter output; TIR-Judge).
SFT_MASKED_KINDS: tuple[str, ...] = ("tool",)
_KINDS = ("model", "code", "tool", "forced")
_TOOL_SLOT = "\x00TOOL\x00"


@dataclass(frozen=True)
class SFTExample:
    """One SFT target.

    Attributes:
        messages: The judge prompt (chat messages; a GRPO row's ``prompt``).
        pieces: The judgment as ``(kind, text)`` pieces in order; kinds ``model``, ``code``,
            ``tool``, ``forced``.
        key: Identity of the row it answers (``<pair_id>/<order or role>``), for logs and files.
        meta: JSON-able extras (teacher, sample seed, tokens, tool calls).

    Raises:
        ValueError: an unknown piece kind, or no piece.
    """

    messages: tuple[Mapping[str, str], ...]
    pieces: tuple[tuple[str, str], ...]
    key: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.pieces:
            raise ValueError(f"SFT example {self.key!r}: no pieces")
        for kind, text in self.pieces:
            if kind not in _KINDS or not isinstance(text, str):
                raise ValueError(f"SFT example {self.key!r}: bad piece ({kind!r}, {type(text).__name__})")

    @property
    def text(self) -> str:
        """The whole judgment text."""
        return "".join(t for _, t in self.pieces)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "messages": [dict(m) for m in self.messages],
                "pieces": [list(p) for p in self.pieces], "meta": dict(self.meta)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SFTExample":
        return cls(tuple(dict(m) for m in d["messages"]), tuple((str(k), str(t)) for k, t in d["pieces"]),
                   str(d.get("key", "")), dict(d.get("meta") or {}))


def write_examples(examples: Iterable[SFTExample], path: str | Path) -> int:
    """Write examples as JSON Lines (one :meth:`SFTExample.to_dict` per line); returns the count."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    tmp = p.with_name(p.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for e in examples:
            f.write(json.dumps(e.to_dict(), ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(p)
    return n


def read_examples(path: str | Path) -> list[SFTExample]:
    """Read :func:`write_examples` output.

    Raises:
        ValueError: a line is not a valid example (names the file and line).
    """
    out = []
    with Path(path).open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(SFTExample.from_dict(json.loads(line)))
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{lineno}: not an SFT example ({e})") from None
    return out


def tokenize_example(tokenizer: Any, example: SFTExample, masked: Sequence[str] = SFT_MASKED_KINDS) -> dict[str, list[int]]:
    """A pre-tokenized TRL SFT row: ``input_ids`` and ``completion_mask``.

    ``input_ids`` = tokens of the rendered prompt + tokens of the judgment text + EOS (the judgment is
    tokenized as one text, as GRPO rollouts are: :func:`judgerl.train.rollout.trajectory_ids`);
    ``completion_mask`` is 0 on the prompt and on the pieces whose kind is in ``masked``, else 1.
    A token straddling a piece boundary belongs to the piece where it starts.

    Args:
        tokenizer: The student's transformers tokenizer (fast tokenizers give exact offsets).
        example: The target.
        masked: Piece kinds left out of the loss (default: tool output).
    """
    from judgerl.backends.chat import defuse_text, render_chat
    from judgerl.tools.tir import build_trajectory
    from judgerl.train.rollout import trajectory_ids

    prompt_ids = tokenizer(render_chat(tokenizer, example.messages), add_special_tokens=False)["input_ids"]
    # a target that writes a special token as text (a quoted response's ``<|im_end|>``) is trained as text:
    # the end-of-turn id mid-judgment would teach the student to stop there
    traj = build_trajectory([(k, defuse_text(tokenizer, t)) for k, t in example.pieces if t], tokenizer)
    ids, mask = trajectory_ids(tokenizer, traj, max_len=1 << 30, masked=masked)
    return {"input_ids": list(prompt_ids) + ids, "completion_mask": [0] * len(prompt_ids) + mask}


# -- templated warm-up ------------------------------------------------------------------------------


def _tool_pieces(pair: PreferencePair) -> list[tuple[str, str]]:
    expr = pair.meta.get("expression")
    if not expr:
        return []
    return [("model", "Let me check with Python.\n"), ("code", f"```python\nprint({expr})\n```\n"),
            ("tool", output_block(str(pair.meta["value"])))]


def pairwise_decision(protocol: Any, winner: int) -> Decision:
    """The decision naming response ``winner`` (0 = first shown) in ``protocol``'s format.

    Pairwise: verdict A/B, score protocols ``max - 1`` for the winner and ``min + 1`` for the loser
    (the extremes on tiny scales); PaV carries the verdict only. Listwise: the winner best / ranked
    first.
    """
    if protocol.kind == "listwise":
        ranking = (winner, 1 - winner)
        return Decision(valid=True, ranking=ranking if protocol.mode == "rank" else ranking[:1])
    verdict = ("A", "B")[winner]
    if protocol.name == "pav":
        return Decision(valid=True, verdict=verdict)  # type: ignore[arg-type]
    lo, hi = protocol.score_scale or (0.0, 10.0)
    good, bad = (hi - 1, lo + 1) if hi - lo > 2 else (hi, lo)
    return Decision(valid=True, verdict=verdict, scores=(good, bad) if winner == 0 else (bad, good))  # type: ignore[arg-type]


def render_pieces(protocol: Any, thought: str, decision: Decision,
                  head: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """``protocol.render_judgment(head + thought, decision)`` as pieces: the ``head`` pieces (e.g. a
    python block and its output) keep their kinds, the rest is ``model`` text."""
    if not head:
        return [("model", protocol.render_judgment(thought, decision))]
    full = protocol.render_judgment(_TOOL_SLOT + thought, decision)
    before, after = full.split(_TOOL_SLOT, 1)
    return [("model", before), *head, ("model", after)]


def warmup_pieces(
    pair: PreferencePair,
    protocol: Any,
    *,
    order: int | None = None,
    role: str | None = None,
    gold_score: float | None = None,
    tools: bool = False,
) -> list[tuple[str, str]]:
    """The templated correct judgment of one row as pieces, written by the protocol itself
    (:meth:`~judgerl.protocols.JudgeProtocol.render_judgment`), so every protocol -- listwise
    included -- gets its own answer format and scale.

    Pairwise (``order`` 0 = chosen shown as A, 1 = chosen shown as B): a short thought and the
    correct decision (:func:`pairwise_decision`). Pointwise (``role`` "chosen"/"rejected"):
    ``gold_score`` if given, else ``max_score`` for the chosen and ``min_score`` for the rejected
    response. Listwise (``order`` as pairwise, the two responses as Response 1 and 2): the chosen
    one is best / ranked first. With ``tools=True`` and an arithmetic pair the thinking starts with
    a python block (``code``) and its output (``tool``, masked from the SFT loss).

    Raises:
        ValueError: neither/both of ``order`` and ``role`` given for the protocol's kind.
    """
    rationale = str(pair.meta.get("rationale") or "")
    head = _tool_pieces(pair) if tools else []
    lead = f"{rationale}. " if rationale else ""
    kind = protocol.kind
    if kind in ("pairwise", "listwise"):
        if order not in (0, 1) or role is not None:
            raise ValueError(f"a {kind} target needs order=0|1 and no role")
        first, second = (pair.chosen, pair.rejected) if order == 0 else (pair.rejected, pair.chosen)
        winner = ("A", "B")[order] if kind == "pairwise" else ("1", "2")[order]
        if rationale:
            think = f"{lead}The first says {_short(first)}, the second says {_short(second)}. {winner} is correct."
        else:
            think = f"Response {winner} follows the instruction better."
        return render_pieces(protocol, think, pairwise_decision(protocol, order), head)
    if kind == "pointwise":
        if role not in ("chosen", "rejected") or order is not None:
            raise ValueError("a pointwise target needs role='chosen'|'rejected' and no order")
        if gold_score is None:
            lo, hi = protocol.score_scale
            gold_score = hi if role == "chosen" else lo
        response = pair.chosen if role == "chosen" else pair.rejected
        if rationale:
            verdict = "correct" if role == "chosen" else "wrong"
            think = f"{lead}The answer says {_short(response)}, which is {verdict}."
        else:
            think = "The response follows the instruction well." if role == "chosen" else "The response is poor."
        return render_pieces(protocol, think, Decision(valid=True, scores=(float(gold_score),)), head)
    raise ValueError(f"no warm-up template for {kind} protocol {protocol.name!r}")


def warmup_target(pair: PreferencePair, protocol: Any, **kwargs: Any) -> str:
    """The text of :func:`warmup_pieces` (same arguments)."""
    return "".join(t for _, t in warmup_pieces(pair, protocol, **kwargs))


def _short(response: str) -> str:
    """The part after the last '=' of an arithmetic response (the claimed value), else the text."""
    return response.rsplit("=", 1)[-1].strip() if "=" in response else response.strip()


def row_key(row: Mapping[str, Any]) -> str:
    """``<pair_id>/<protocol>/<order or role>``: the identity of a GRPO row (seeds, files)."""
    return f"{row['pair_id']}/{row['protocol']}/{row['role'] if row.get('role') is not None else row['order']}"


def templated_examples(rows: Sequence[dict[str, Any]], pairs_by_id: dict[str, PreferencePair],
                       protocols: Any) -> list[SFTExample]:
    """SFT examples: the GRPO ``rows`` (see ``judgerl.train.datasets``) with their templated
    correct judgments (:func:`warmup_pieces`; tool rows get the python block and masked output).

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
        pieces = warmup_pieces(
            pair,
            by_name[r["protocol"]],
            order=r["order"] if r["role"] is None else None,
            role=r["role"],
            gold_score=r.get("gold_score"),
            tools=tools,
        )
        out.append(SFTExample(tuple(dict(m) for m in r["prompt"]), tuple(pieces), row_key(r), {"source": "templated"}))
    return out


def example_from_judgment(messages: Any, judgment: Any, key: str = "", meta: Mapping[str, Any] | None = None) -> SFTExample:
    """An SFT example from a :class:`~judgerl.judge.Judgment`: its trajectory's segments (tool
    output stays a ``tool`` piece and is masked; a forced answer prefill is a ``forced`` piece and is
    trained), or its text as one ``model`` piece. A prompt ending in an assistant prefill (a nudge
    judgerl wrote, :func:`judgerl.train.datasets.with_prefill`) loses it, and the prefill becomes the
    first ``forced`` piece: the SFT model learns to write it itself.

    Raises:
        ValueError: the judgment has no text.
    """
    msgs = [dict(m) for m in messages]
    head: tuple[tuple[str, str], ...] = ()
    if msgs and msgs[-1].get("role") == "assistant":
        head = (("forced", str(msgs.pop()["content"])),)
    if judgment.trajectory is not None:
        pieces = tuple((s.kind, s.text) for s in judgment.trajectory.segments if s.text)
    else:
        pieces = (("model", judgment.text),) if judgment.text else ()
    if not pieces:
        raise ValueError(f"judgment for {key!r} has no text")
    return SFTExample(tuple(msgs), tuple(p for p in head + pieces if p[1]), key, dict(meta or {}))


def make_sft_trainer(
    model: Any,
    tokenizer: Any,
    examples: Sequence[SFTExample],
    output_dir: str | Path,
    sft_kwargs: dict[str, Any] | None = None,
    callbacks: Sequence[Any] = (),
    peft_config: Any = None,
) -> Any:
    """A ``trl.SFTTrainer`` on ``examples`` (see :func:`run_sft`; its prepared ``train_dataset``
    holds the ``labels``, -100 on the prompt and on tool output).

    Raises:
        ValueError: no examples.
    """
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from judgerl.train.trainer import cpu_precision_defaults

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
    kw.update(cpu_precision_defaults())
    kw.update(sft_kwargs or {})
    kw["completion_only_loss"] = True
    rows = [tokenize_example(tokenizer, e) for e in examples]
    return SFTTrainer(
        model=model,
        args=SFTConfig(**kw),
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=list(callbacks),
        peft_config=peft_config,
    )


def run_sft(
    model: Any,
    tokenizer: Any,
    examples: Sequence[SFTExample],
    output_dir: str | Path,
    sft_kwargs: dict[str, Any] | None = None,
    callbacks: Sequence[Any] = (),
    peft_config: Any = None,
    resume_from: str | None = None,
) -> Any:
    """Fine-tune ``model`` on ``examples`` with ``trl.SFTTrainer`` (loss on the judge's own tokens).

    The examples are pre-tokenized with :func:`tokenize_example`; ``completion_only_loss`` is forced
    on, so TRL sets label -100 on the prompt and on tool-output tokens.

    Args:
        model: A transformers causal LM (trained in place), a ``peft`` model, or a model path.
        tokenizer: Its tokenizer (with a chat template).
        examples: The targets.
        output_dir: SFT logs directory (``save_strategy="no"``: a checkpoint is saved only when a callback asks,
            e.g. :class:`~judgerl.train.callbacks.TimeLimit` when it stops the run).
        sft_kwargs: ``trl.SFTConfig`` keyword arguments (``max_steps``, ``learning_rate``, …).
        callbacks: Extra ``TrainerCallback``s (e.g. :class:`~judgerl.train.callbacks.MetricsLogger`).
        peft_config: A ``peft.LoraConfig`` to wrap a plain model with (None: train as given).
        resume_from: A ``checkpoint-N`` directory of an earlier run of the same examples and arguments: the
            weights, optimizer, scheduler and data position continue from it.

    Returns:
        The trained model (``trainer.model``; a ``peft`` model when LoRA is used).

    Raises:
        ValueError: no examples.
    """
    trainer = make_sft_trainer(model, tokenizer, examples, output_dir, sft_kwargs, callbacks, peft_config)
    trainer.train(resume_from_checkpoint=resume_from)
    return trainer.model
