"""HelpSteer3-Preference (Wang et al., 2025, "HelpSteer3-Preference").

Record: ``domain, language, context: [messages], response1, response2, overall_preference``
(+ ``individual_preference``). ``overall_preference`` is an integer in −3…+3: **negative means
response1 is better**, positive means response2 is better (−3/+3 "much better", −1/+1 "slightly
better"), 0 means the two are about the same (a tie pair, first response kept first). Any other
value is refused (never guessed). The whole ``context`` (multi-turn, system messages included) is the
prompt (see :mod:`judgerl.data.formats.chat`). id = ``"<stem>-<index>"``; source =
``"helpsteer3/<domain>"``; ``meta`` keeps ``overall_preference``, ``chosen_position`` (1 or 2) and
``language``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgerl.data.formats.base import Format, RecordContext, get_label, get_optional_text, get_text, order_pair
from judgerl.data.formats.chat import get_messages, render_messages
from judgerl.types import PreferencePair

_KEYS = {"context", "response1", "response2", "overall_preference"}
#: overall_preference -> 1-based winner (None = tie). Negative: response1 better.
_WINNER: dict[Any, int | None] = {-3: 1, -2: 1, -1: 1, 0: None, 1: 2, 2: 2, 3: 2}


def matches(record: Mapping[str, Any]) -> bool:
    return record.keys() >= _KEYS


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    context = record.get("context")
    prompt = get_text(record, "context", allow_empty=False) if isinstance(context, str) else \
        render_messages(get_messages(record, "context"))
    first, second = get_text(record, "response1"), get_text(record, "response2")
    winner = get_label(record, "overall_preference", _WINNER)
    chosen, rejected = order_pair(first, second, winner)
    meta: dict[str, Any] = {"overall_preference": int(record["overall_preference"])}
    if winner is not None:
        meta["chosen_position"] = winner
    language = get_optional_text(record, "language")
    if language:
        meta["language"] = language
    domain = get_optional_text(record, "domain")
    return [PreferencePair(id=ctx.default_id, prompt=prompt, chosen=chosen, rejected=rejected,
                           source=f"helpsteer3/{domain}" if domain else "helpsteer3", tie=winner is None, meta=meta)]


FORMAT = Format(
    "helpsteer3",
    "context[messages], response1, response2, overall_preference (-3..3, negative = response1 better)",
    matches,
    convert,
)
