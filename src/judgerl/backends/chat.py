"""Chat rendering shared by the hf backend, the openai backend's local rendering and training.

One home for turning :data:`judgerl.types.Messages` into a model's prompt text, so that what a
judge is trained on (TRL rollouts, SFT) and what it is evaluated or served with are the same
tokens.
"""

from __future__ import annotations

from typing import Any

from judgerl.types import Messages


def render_chat(tokenizer: Any, messages: Messages) -> str:
    """Render chat messages to the model's prompt text.

    A trailing assistant message is *continued* (prefill): the template is applied to the
    messages before it with a generation prompt, and the assistant content is appended verbatim
    (no end-of-turn token), so the model's output continues that text.

    Args:
        tokenizer: A transformers tokenizer; its ``chat_template`` is used when it has one,
            otherwise messages are joined as ``"role: content"`` paragraphs.
        messages: The chat prompt.

    Raises:
        ValueError: a message lacks a ``role`` or ``content`` field (names the message index).
    """
    msgs = []
    for i, m in enumerate(messages):
        if "role" not in m or "content" not in m:
            raise ValueError(f"message {i} needs 'role' and 'content' fields, got keys {sorted(m)}")
        msgs.append({"role": m["role"], "content": m["content"]})
    prefix = ""
    if msgs and msgs[-1]["role"] == "assistant":
        prefix = msgs.pop()["content"]
    if not msgs:  # nothing before the prefill: the text to continue is all there is
        return prefix
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    else:  # base models without a template: plain concatenation
        text = "\n\n".join(f"{m['role']}: {m['content']}" for m in msgs) + "\n\nassistant: "
    return text + prefix


def continue_prompt(messages: Messages, prefix: str) -> list[dict[str, str]]:
    """``messages`` with ``prefix`` as the assistant text to continue (prefill).

    If ``messages`` already ends with an assistant message, ``prefix`` is appended to it; else a new
    assistant message holding ``prefix`` is added. An empty ``prefix`` returns a plain copy.
    """
    msgs = [dict(m) for m in messages]
    if not prefix:
        return msgs
    if msgs and msgs[-1].get("role") == "assistant":
        msgs[-1]["content"] = str(msgs[-1].get("content", "")) + prefix
    else:
        msgs.append({"role": "assistant", "content": prefix})
    return msgs


def prefill_of(messages: Messages) -> str:
    """The content of a trailing assistant message (the prompt's prefill), else ``""``."""
    if messages and messages[-1].get("role") == "assistant":
        return str(messages[-1].get("content") or "")
    return ""
