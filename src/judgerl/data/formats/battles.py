"""Two-model battles with a human vote: Chatbot Arena conversations, MT-Bench human judgments, PPE.

Shared record layout (Zheng et al., 2023, "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena";
``lmsys/chatbot_arena_conversations``, ``lmsys/mt_bench_human_judgments``; PPE human preference,
Frick et al., 2024, "How to Evaluate Reward Models for RLHF", built from Arena battles):
``question_id, model_a, model_b, winner, conversation_a: [messages], conversation_b: [messages]``.

``winner`` is ``"model_a"``, ``"model_b"``, ``"tie"`` or ``"tie (bothbad)"`` (both ties -> a tie pair,
``meta["tie_kind"]`` keeps which). Any other value is refused. The two conversations share the user
turns; they are cut at their first differing message (:func:`~judgerl.data.formats.chat.split_conversations`):
the shared context is the prompt and the rest of each conversation, later turns included, is its
response (``meta["multi_turn_response"]`` when that is more than one message).

* ``arena`` (Chatbot Arena conversations): detected by ``anony`` / ``tstamp`` next to the battle fields. source = ``"arena/<language>"``.
* ``mtbench-human``: has ``judge`` and ``turn`` and neither ``anony`` nor ``tstamp``. A ``turn`` 1 judgment compares the
  first answers only, so both conversations are cut to their first two messages; ``turn`` 2 keeps
  both turns. source = ``"mtbench/turn<turn>"``; ``meta["judge"]`` keeps the annotator.
* ``ppe`` (PPE human preference, ``lmarena-ai/PPE-Human-Preference-V1``): its dataset card's layout
  ``question_id, model_a, model_b, winner, prompt, response_1, response_2`` (``response_1`` is
  ``model_a``'s; one user turn), or the Arena conversation fields; read only when named
  (``--format ppe``), since its keys overlap the Arena ones. source = ``"ppe"``; ``meta["benchmark"] = "ppe"`` makes the
  evaluation report the PPE score (:mod:`judgerl.eval.benchmarks`).

id = ``"<question_id>-<index>"`` (one question has many battles); ``meta`` keeps ``model_a``,
``model_b`` and ``chosen_position``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgerl.data.errors import FieldError
from judgerl.data.formats.base import (Format, RecordContext, as_int_label, get_label, get_optional_text, get_text,
                                      order_pair)
from judgerl.data.formats.chat import conversation_pair_fields, get_messages
from judgerl.types import PreferencePair

_KEYS = {"model_a", "model_b", "winner", "conversation_a", "conversation_b"}
_WINNER: dict[Any, int | None] = {"model_a": 1, "model_b": 2, "tie": None, "tie (bothbad)": None}


def _battle(record: Mapping[str, Any], ctx: RecordContext, source: str, max_messages: int | None,
            extra: Mapping[str, Any]) -> list[PreferencePair]:
    conv_a, conv_b = get_messages(record, "conversation_a"), get_messages(record, "conversation_b")
    if max_messages is not None:
        conv_a, conv_b = conv_a[:max_messages], conv_b[:max_messages]
    winner = get_label(record, "winner", _WINNER)
    prompt, first, second, meta = conversation_pair_fields(conv_a, conv_b, "conversation_a")
    chosen, rejected = order_pair(first, second, winner)
    meta.update(extra)
    for key in ("model_a", "model_b"):
        if isinstance(record.get(key), str):
            meta[key] = record[key]
    if winner is None:
        meta["tie_kind"] = str(record["winner"]).strip()
    else:
        meta["chosen_position"] = winner
    qid = record.get("question_id")
    rid = f"{qid}-{ctx.index}" if isinstance(qid, (str, int)) and not isinstance(qid, bool) else ctx.default_id
    return [PreferencePair(id=rid, prompt=prompt, chosen=chosen, rejected=rejected, source=source,
                           tie=winner is None, meta=meta)]


def _arena_matches(record: Mapping[str, Any]) -> bool:
    return record.keys() >= _KEYS and bool({"anony", "tstamp"} & record.keys())


def _arena(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    language = get_optional_text(record, "language")
    return _battle(record, ctx, f"arena/{language}" if language else "arena", None, {})


def _mtbench_matches(record: Mapping[str, Any]) -> bool:
    return record.keys() >= _KEYS | {"judge", "turn"} and not {"anony", "tstamp"} & record.keys()


def _mtbench(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    turn = as_int_label(record.get("turn"))
    if turn is None or turn < 1:
        raise FieldError("turn", f"must be a positive integer, got {record.get('turn')!r}")
    extra = {"turn": turn}
    judge = record.get("judge")
    if isinstance(judge, str):
        extra["judge"] = judge
    return _battle(record, ctx, f"mtbench/turn{turn}", 2 * turn, extra)


def _ppe(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    if "conversation_a" not in record and "response_1" in record:  # lmarena-ai/PPE-Human-Preference-V1 layout
        prompt = get_text(record, "prompt", allow_empty=False)
        record = {**record, **{f"conversation_{side}": [{"role": "user", "content": prompt},
                                                         {"role": "assistant", "content": get_text(record, key)}]
                               for side, key in (("a", "response_1"), ("b", "response_2"))}}
    return _battle(record, ctx, "ppe", None, {"benchmark": "ppe"})


ARENA = Format("arena", "question_id, model_a, model_b, winner, conversation_a/b[messages] (+ anony, language)",
               _arena_matches, _arena)
MTBENCH = Format("mtbench-human", "question_id, model_a, model_b, winner, judge, turn, conversation_a/b[messages]",
                 _mtbench_matches, _mtbench)
PPE = Format("ppe", "PPE human preference: question_id, model_a, model_b, winner, prompt, response_1/2 (or Arena "
             "conversation_a/b); named only: --format ppe", None, _ppe)
