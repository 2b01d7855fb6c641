"""Anthropic hh-rlhf transcripts (Bai et al., 2022, "Training a Helpful and Harmless Assistant").

Record: ``{"chosen": transcript, "rejected": transcript}`` where each transcript is the whole
dialogue ``"\\n\\nHuman: … \\n\\nAssistant: … \\n\\nHuman: … \\n\\nAssistant: …"``.

The two transcripts share the dialogue up to the turn being compared. The split point is the
**last ``"\\n\\nAssistant:"`` that lies inside their common prefix**; everything before it is the
prompt, the rest of each transcript is its response. Usually that is the final assistant turn;
in a few records (5 of 2312 in harmless-base-test) the transcripts diverge earlier and a
response then runs on over further turns — ``meta["multi_turn_response"]`` marks those.

For readability the prompt is rendered without the leading blank lines: a single human turn
becomes just its text; a longer dialogue becomes ``"Human: …\\n\\nAssistant: …\\n\\nHuman: …"``.
``meta["turns"]`` counts the human turns in the prompt. id = ``"<stem>-<index>"``, source =
``"hh-rlhf/<stem>"`` (e.g. ``"hh-rlhf/harmless-base-test"``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from judgerl.data.errors import FieldError
from judgerl.data.formats.base import Format, RecordContext, get_text
from judgerl.types import PreferencePair

ASSISTANT = "\n\nAssistant:"
_TURN = re.compile(r"(?:^|\n\n)(Human|Assistant):[ \t]?")
_LATER_TURN = re.compile(r"\n\n(?:Human|Assistant):")


def matches(record: Mapping[str, Any]) -> bool:
    return (
        {"chosen", "rejected"} <= record.keys()
        and "prompt" not in record
        and isinstance(record["chosen"], str)
    )


def split_transcripts(chosen: str, rejected: str) -> tuple[str, str, str]:
    """Split two transcripts into (shared prefix, chosen reply, rejected reply).

    The prefix ends just before the last ``"\\n\\nAssistant:"`` lying fully inside the common
    prefix of both strings; the replies are what follows that marker, stripped.

    Raises:
        FieldError: (field ``"chosen"``) the transcripts share no ``"\\n\\nAssistant:"`` marker.
    """
    common = len(os.path.commonprefix([chosen, rejected]))
    cut = chosen.rfind(ASSISTANT, 0, common)
    if cut < 0:
        raise FieldError(
            "chosen", "shares no '\\n\\nAssistant:' turn with 'rejected' (not an hh-rlhf transcript pair)"
        )
    start = cut + len(ASSISTANT)
    return chosen[:cut], chosen[start:].strip(), rejected[start:].strip()


def render_dialogue(prefix: str) -> tuple[str, int]:
    """Readable prompt from a transcript prefix, and its number of human turns."""
    parts = _TURN.split(prefix)
    # parts = [text before first marker, role, text, role, text, ...]
    lead = parts[0].strip()
    turns = [(parts[k], parts[k + 1].strip()) for k in range(1, len(parts) - 1, 2)]
    n_human = sum(1 for role, _ in turns if role == "Human")
    if not turns:
        return lead, 0
    if len(turns) == 1 and turns[0][0] == "Human" and not lead:
        return turns[0][1], 1
    body = "\n\n".join(f"{role}: {text}" for role, text in turns)
    return (f"{lead}\n\n{body}" if lead else body), n_human


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    chosen_t = get_text(record, "chosen", allow_empty=False)
    rejected_t = get_text(record, "rejected", allow_empty=False)
    prefix, chosen, rejected = split_transcripts(chosen_t, rejected_t)
    prompt, turns = render_dialogue(prefix)
    if not prompt:
        raise FieldError("chosen", "has an empty dialogue before the compared assistant turn")
    meta: dict[str, Any] = {"turns": turns}
    if any(_LATER_TURN.search(reply) for reply in (chosen, rejected)):
        meta["multi_turn_response"] = True
    return [
        PreferencePair(
            id=ctx.default_id,
            prompt=prompt,
            chosen=chosen,
            rejected=rejected,
            source=f"hh-rlhf/{ctx.stem}",
            meta=meta,
        )
    ]


FORMAT = Format("hh-rlhf", "chosen, rejected (full Human/Assistant transcripts)", matches, convert)
