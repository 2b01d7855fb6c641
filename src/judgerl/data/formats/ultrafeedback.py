"""UltraFeedback (Cui et al., 2024, "UltraFeedback: Boosting Language Models with Scaled AI Feedback").

Two layouts, one format name (``ultrafeedback``):

* **binarized** (``HuggingFaceH4/ultrafeedback_binarized``): ``prompt, prompt_id, chosen[messages],
  rejected[messages], score_chosen, score_rejected`` (+ ``messages``). The messages keep any
  multi-turn context (see :mod:`judgerl.data.formats.chat`); id = ``"<prompt_id>-<index>"`` (a prompt
  id may repeat within a file); scores -> ``chosen_score`` / ``rejected_score``. The labels are
  the file's own: a record whose ``score_chosen`` is *below* ``score_rejected`` is refused, never
  swapped.
* **raw** (``openbmb/UltraFeedback``): ``instruction, completions: [{model, response,
  fine-grained_score | overall_score, ...}]`` (+ ``source``). Every two completions with different
  ratings become a pair, the higher-rated one chosen; equal ratings become a tie pair. The rating is
  ``fine-grained_score`` (the mean of the four aspect ratings, 1-5, what the binarized set ranks by)
  when every completion of the record has one, else ``overall_score`` (the critique's 1-10 rating)
  when every completion has that: one record never mixes the two scales (a fine-grained 4.5 would
  lose to an overall 6), and a record with neither for every completion is refused.
  id = ``"<stem>-<index>-<i>v<j>"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgerl.data.errors import FieldError
from judgerl.data.formats.base import (
    Format,
    RecordContext,
    get_optional_text,
    get_score,
    get_text,
    is_missing,
)
from judgerl.data.formats.chat import conversation_pair_fields, get_messages, is_messages
from judgerl.types import PreferencePair


def matches(record: Mapping[str, Any]) -> bool:
    binarized = {"score_chosen", "score_rejected"} <= record.keys() and is_messages(record.get("chosen"))
    raw = {"instruction", "completions"} <= record.keys() and isinstance(record["completions"], list)
    return binarized or raw


def _binarized(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    prompt, good, bad, meta = conversation_pair_fields(get_messages(record, "chosen"),
                                                       get_messages(record, "rejected"))
    sc, sr = get_score(record, "score_chosen"), get_score(record, "score_rejected")
    if sc is not None and sr is not None and sc < sr:
        raise FieldError("score_chosen", f"is {sc} < score_rejected {sr}: the labels contradict the scores "
                         "(not swapped; fix the file or drop the record with --skip-invalid)")
    pid = record.get("prompt_id")
    rid = f"{pid}-{ctx.index}" if isinstance(pid, str) and pid.strip() else ctx.default_id
    return [PreferencePair(id=rid, prompt=prompt, chosen=good, rejected=bad,
                           source=get_optional_text(record, "source") or ctx.stem, tie=sc is not None and sc == sr,
                           chosen_score=sc, rejected_score=sr, meta=meta)]


#: The rating fields of a raw completion, in order of preference; one of them rates a whole record.
RATING_FIELDS = ("fine-grained_score", "overall_score")


def _rating_field(completions: list[Mapping[str, Any]]) -> str:
    """The first of :data:`RATING_FIELDS` that every completion has: the record's one rating scale."""
    for name in RATING_FIELDS:
        if all(not is_missing(c.get(name)) for c in completions):
            return name
    k = next(k for k, c in enumerate(completions) if is_missing(c.get(RATING_FIELDS[0])))
    raise FieldError(f"completions[{k}].fine-grained_score", "is missing, and not every completion has an "
                     "overall_score (two different scales, never mixed within a record)")


def _raw(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    prompt = get_text(record, "instruction", allow_empty=False)
    completions = record["completions"]
    for i, c in enumerate(completions):
        if not isinstance(c, Mapping):
            raise FieldError(f"completions[{i}]", f"must be an object, got {type(c).__name__}")
    rating = _rating_field(completions)
    rated = []
    for i, c in enumerate(completions):
        try:
            rated.append((get_text(c, "response"), get_score(c, rating), c.get("model")))
        except FieldError as e:
            field = e.field if e.field and e.field.startswith("completions") else f"completions[{i}].{e.field}"
            raise FieldError(field, e.reason) from None
    source = get_optional_text(record, "source") or ctx.stem
    pairs = []
    for i in range(len(rated)):
        for j in range(i + 1, len(rated)):
            (ti, si, mi), (tj, sj, mj) = rated[i], rated[j]
            first_better = si >= sj
            good, bad = ((ti, si, mi), (tj, sj, mj)) if first_better else ((tj, sj, mj), (ti, si, mi))
            meta = {"completions": [i, j] if first_better else [j, i]}
            if isinstance(good[2], str) and isinstance(bad[2], str):
                meta.update(chosen_model=good[2], rejected_model=bad[2])
            pairs.append(PreferencePair(id=f"{ctx.default_id}-{i}v{j}", prompt=prompt, chosen=good[0],
                                        rejected=bad[0], source=source, tie=si == sj, chosen_score=good[1],
                                        rejected_score=bad[1], meta=meta))
    return pairs


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    if "completions" in record and "instruction" in record:
        return _raw(record, ctx)
    return _binarized(record, ctx)


FORMAT = Format(
    "ultrafeedback",
    "binarized: prompt_id, chosen[messages], rejected[messages], score_chosen, score_rejected; "
    "raw: instruction, completions[{response, fine-grained_score}]",
    matches,
    convert,
)
