"""Chat-message helpers shared by the conversational formats, and the Skywork-style pair format.

Conversational datasets (Skywork-Reward-Preference, UltraFeedback-binarized, Chatbot Arena, MT-Bench
human judgments, HelpSteer3) hold OpenAI-style message lists ``[{"role": ..., "content": ...}]``.
judgerl keeps the *whole* context: :func:`split_conversations` cuts two conversations at their
first differing message; the shared part is the prompt, the rest of each is its response.
:func:`render_messages` writes a message list as plain text, the way the hh-rlhf reader renders a
dialogue: a single user message is just its text; a longer context becomes
``"User: …\\n\\nAssistant: …\\n\\nUser: …"`` (system messages as ``"System: …"``), so earlier turns
reach the judge prompt (``PreferencePair.prompt`` is plain text; the protocols quote it verbatim).

Skywork-style record (format ``chat-pairs``): ``chosen: [messages], rejected: [messages]`` (+ optional
``id``, ``source``); both conversations share the context and end in the compared assistant turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judgerl.data.errors import FieldError
from judgerl.data.formats.base import Format, RecordContext, get_id, get_optional_text
from judgerl.types import PreferencePair

_ROLE_NAMES = {"user": "User", "human": "User", "assistant": "Assistant", "gpt": "Assistant",
               "system": "System", "bot": "Assistant", "model": "Assistant"}


def is_messages(value: Any) -> bool:
    """True for a non-empty list whose items are all objects with ``role``/``content`` (or ``from``/``value``)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, Mapping) and ({"role", "content"} <= m.keys() or {"from", "value"} <= m.keys())
                for m in value)
    )


def get_messages(record: Mapping[str, Any], key: str) -> list[dict[str, str]]:
    """``record[key]`` as a list of ``{"role", "content"}`` (ShareGPT ``from``/``value`` accepted).

    Raises:
        FieldError: not a non-empty array of messages; a message without a string role/content
            (the field is named ``key[i].content``).
    """
    value = record.get(key)
    if not isinstance(value, list) or not value:
        raise FieldError(key, f"must be a non-empty array of chat messages, got {str(value)[:60]!r}")
    out = []
    for i, m in enumerate(value):
        if not isinstance(m, Mapping):
            raise FieldError(f"{key}[{i}]", f"must be an object with role and content, got {type(m).__name__}")
        role, content = (m.get("role"), m.get("content")) if "role" in m else (m.get("from"), m.get("value"))
        if not isinstance(role, str) or not role.strip():
            raise FieldError(f"{key}[{i}].role", f"must be a non-empty string, got {role!r}")
        if not isinstance(content, str):
            raise FieldError(f"{key}[{i}].content", f"must be a string, got {type(content).__name__}")
        out.append({"role": role.strip().lower(), "content": content})
    return out


def render_messages(messages: Sequence[Mapping[str, str]]) -> str:
    """Plain text of a message list: one user message -> its text; else ``"Role: text"`` blocks."""
    if len(messages) == 1 and messages[0]["role"] in ("user", "human"):
        return messages[0]["content"]
    return "\n\n".join(f"{_ROLE_NAMES.get(m['role'], m['role'].title())}: {m['content']}" for m in messages)


def render_response(messages: Sequence[Mapping[str, str]]) -> str:
    """A response: one assistant message -> its text; several turns -> rendered as a dialogue."""
    if len(messages) == 1 and messages[0]["role"] not in ("user", "human", "system"):
        return messages[0]["content"]
    return render_messages(messages)


def split_conversations(
    first: Sequence[Mapping[str, str]], second: Sequence[Mapping[str, str]], key: str = "chosen"
) -> tuple[list[Mapping[str, str]], list[Mapping[str, str]], list[Mapping[str, str]]]:
    """(shared context, rest of ``first``, rest of ``second``), cut at the first differing message.

    Raises:
        FieldError: (field ``key``) no shared user turn, or a conversation has nothing after it.
    """
    n = 0
    while n < min(len(first), len(second)) and dict(first[n]) == dict(second[n]):
        n += 1
    # The compared turns start at an assistant message: back off to the last user turn's end.
    while n > 0 and first[n - 1]["role"] not in ("user", "human"):
        n -= 1
    if n == 0:
        raise FieldError(key, "shares no user turn with the other conversation (nothing to use as the prompt)")
    if n >= len(first) or n >= len(second):
        raise FieldError(key, "has no response after the shared context")
    return list(first[:n]), list(first[n:]), list(second[n:])


def conversation_pair_fields(chosen: Sequence[Mapping[str, str]], rejected: Sequence[Mapping[str, str]],
                             key: str = "chosen") -> tuple[str, str, str, dict[str, Any]]:
    """(prompt, chosen text, rejected text, meta) of two full conversations (see module docstring).

    ``meta`` has ``turns`` (user turns in the prompt) and ``multi_turn_response`` when a response runs
    over more than one message.
    """
    context, good, bad = split_conversations(chosen, rejected, key)
    meta: dict[str, Any] = {"turns": sum(m["role"] in ("user", "human") for m in context)}
    if len(good) > 1 or len(bad) > 1:
        meta["multi_turn_response"] = True
    return render_messages(context), render_response(good), render_response(bad), meta


def matches(record: Mapping[str, Any]) -> bool:
    return (
        is_messages(record.get("chosen"))
        and is_messages(record.get("rejected"))
        and "score_chosen" not in record  # UltraFeedback-binarized
    )


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    chosen, rejected = get_messages(record, "chosen"), get_messages(record, "rejected")
    prompt, good, bad, meta = conversation_pair_fields(chosen, rejected)
    if not prompt.strip():
        raise FieldError("chosen", "has an empty user turn")
    return [PreferencePair(id=get_id(record, "id", ctx), prompt=prompt, chosen=good, rejected=bad,
                           source=get_optional_text(record, "source") or ctx.stem, meta=meta)]


FORMAT = Format(
    "chat-pairs",
    "chosen[messages], rejected[messages] (Skywork-style conversations; + id, source)",
    matches,
    convert,
)
