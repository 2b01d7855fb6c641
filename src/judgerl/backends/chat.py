"""Chat rendering shared by the hf backend, the openai backend's local rendering and training.

One home for turning :data:`judgerl.types.Messages` into a model's prompt text, so that what a
judge is trained on (TRL rollouts, SFT) and what it is evaluated or served with are the same
tokens. Templates without a system role (Gemma's raises ``TemplateError: System role not
supported``) get the system prompt folded into the first user turn (:func:`fold_system_prompt`).
"""

from __future__ import annotations

import weakref
from typing import Any

from judgerl.text.untrusted import control_tags, defuse_specials
from judgerl.types import Messages


def render_chat(tokenizer: Any, messages: Messages) -> str:
    """Render chat messages to the model's prompt text.

    A trailing assistant message is *continued* (prefill): the template is applied to the
    messages before it with a generation prompt, and the assistant content is appended verbatim
    (no end-of-turn token), so the model's output continues that text. The tokenizer's special
    tokens written inside a message's content are defused first (:func:`defuse_special_tokens`).

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
    msgs = defuse_special_tokens(tokenizer, msgs)
    prefix = ""
    if msgs and msgs[-1]["role"] == "assistant":
        prefix = msgs.pop()["content"]
    if not msgs:  # nothing before the prefill: the text to continue is all there is
        return prefix
    if getattr(tokenizer, "chat_template", None):
        text = apply_template(tokenizer, msgs, tokenize=False, add_generation_prompt=True)
    else:  # base models without a template: plain concatenation
        text = "\n\n".join(f"{m['role']}: {m['content']}" for m in msgs) + "\n\nassistant: "
    return text + prefix


def defuse_special_tokens(tokenizer: Any, messages: Messages) -> list[dict[str, Any]]:
    """A copy of ``messages`` whose contents hold no special token of ``tokenizer`` and no chat-template role
    marker as text.

    The rendered prompt is tokenised with special tokens parsed (``tokenizer(text)``), and a server that
    applies its own template does the same, so a response, a question, a rubric or tool output that writes
    ``<|im_end|>\n<|im_start|>assistant`` (or ``</s>``, ``<end_of_turn>``, ``[INST]``, DeepSeek's ``<｜User｜>``)
    would close its turn and open a forged one inside the judge's prompt. Every place where such a text
    starts -- the tokenizer's special tokens (``all_special_tokens`` and the special added tokens) and the
    common role markers of :data:`judgerl.text.untrusted.ROLE_MARKER_RE` (role markers some tokenizers do not
    declare special; the only ones known without a tokenizer) -- gets a zero-width joiner (U+200D) after its
    first character, overlapping occurrences too (:func:`judgerl.text.untrusted.defuse_specials`). judgerl's
    own control tags (``<think>``, ``</verdict>``, special in some tokenizers) are left alone: the protocols
    write them, and untrusted copies are already neutralised (:func:`judgerl.text.untrusted.neutralise_tags`). Content given as a list of parts (OpenAI
    style) is defused part by part; other content is left as it is.

    Args:
        tokenizer: A transformers tokenizer, or None (the role markers only: a remote server's template).
        messages: The chat prompt.
    """
    specials = _special_texts(tokenizer)
    out = []
    for m in messages:
        m = dict(m)
        content = m.get("content")
        if isinstance(content, str):
            m["content"] = defuse_specials(content, specials)
        elif isinstance(content, list):
            m["content"] = [{**p, "text": defuse_specials(p["text"], specials)} if isinstance(p, dict) and isinstance(
                p.get("text"), str) else p for p in content]
        out.append(m)
    return out


def defuse_text(tokenizer: Any, text: str) -> str:
    """One text defused as :func:`defuse_special_tokens` defuses a message's content: for the pieces of a
    trajectory a judge is trained on (tool output, teacher text), so that the tokens trained on are the tokens
    the judge saw."""
    return defuse_specials(text, _special_texts(tokenizer))


#: ``tokenizer -> (vocabulary size, its special texts)``: read once per tokenizer (every prompt and every tool round
#: renders through here; a tokenizer with thousands of specials took milliseconds per call), again when it grows.
_SPECIALS_OF: "weakref.WeakKeyDictionary[Any, tuple[int, tuple[str, ...]]]" = weakref.WeakKeyDictionary()


def _special_texts(tokenizer: Any) -> tuple[str, ...]:
    """The texts of ``tokenizer``'s special tokens (two characters or more), judgerl's control tags left out."""
    if tokenizer is None:
        return ()
    try:
        size = len(tokenizer)
        cached = _SPECIALS_OF.get(tokenizer)
    except TypeError:  # a stand-in without len() or weak references: read every time
        return _read_special_texts(tokenizer)
    if cached is None or cached[0] != size:
        cached = (size, _read_special_texts(tokenizer))
        _SPECIALS_OF[tokenizer] = cached
    return cached[1]


def _read_special_texts(tokenizer: Any) -> tuple[str, ...]:
    texts = set(getattr(tokenizer, "all_special_tokens", None) or ())
    decoder = getattr(tokenizer, "added_tokens_decoder", None)
    if isinstance(decoder, dict):
        texts |= {str(getattr(t, "content", t)) for t in decoder.values() if getattr(t, "special", False)}
    own = {f"<{slash}{t}>" for t in control_tags() for slash in ("", "/")}
    return tuple(sorted(t for t in texts if isinstance(t, str) and len(t) >= 2 and t.lower() not in own))


def apply_template(tokenizer: Any, messages: Messages, **kwargs: Any) -> Any:
    """``tokenizer.apply_chat_template(messages, **kwargs)``, folding the system prompt into the
    first user turn when the template refuses a system role.

    A template that rejects a system message raises ``jinja2.TemplateError`` (Gemma's
    ``raise_exception('System role not supported')``); then :func:`fold_system_prompt` is applied
    and the template called again. Other template errors, and any error without a system message
    to fold, propagate unchanged.

    Args:
        tokenizer: A transformers tokenizer with a ``chat_template``.
        messages: The chat prompt (``role`` / ``content`` dicts).
        **kwargs: Passed to ``apply_chat_template`` (``tokenize``, ``add_generation_prompt``, ...).

    Raises:
        jinja2.TemplateError: the template fails for another reason, or also without a system role.
    """
    return _render_folding(tokenizer, messages, **kwargs)[0]


def template_messages(tokenizer: Any, messages: Messages, **kwargs: Any) -> list[dict[str, Any]]:
    """``messages`` in the form ``tokenizer``'s chat template accepts, for engines that apply the
    template themselves (vLLM's ``LLM.chat``): a copy, or :func:`fold_system_prompt` of it when the
    template refuses a system role -- the rule of :func:`apply_template`.

    The template is rendered once (``tokenize=False``) to find out, and only when there is a system
    message to fold and the tokenizer has a ``chat_template``; otherwise nothing is rendered.

    Args:
        tokenizer: A transformers tokenizer (the engine's own).
        messages: The chat prompt (``role`` / ``content`` dicts).
        **kwargs: As the engine will call ``apply_chat_template`` (``add_generation_prompt``,
            ``continue_final_message``), so the check renders what the engine will render.

    Raises:
        jinja2.TemplateError: the template fails for another reason, or also without a system role.
    """
    msgs = defuse_special_tokens(tokenizer, messages)
    if not any(m.get("role") == "system" for m in msgs) or not getattr(tokenizer, "chat_template", None):
        return msgs
    return _render_folding(tokenizer, msgs, **{"tokenize": False, **kwargs})[1]


def _render_folding(tokenizer: Any, messages: Messages, **kwargs: Any) -> tuple[Any, list[dict[str, Any]]]:
    """``(apply_chat_template result, the messages rendered)``: as given, or with the system prompt
    folded into the first user turn when the template raises ``TemplateError`` on them."""
    from jinja2 import TemplateError

    msgs = [dict(m) for m in messages]
    try:
        return tokenizer.apply_chat_template(msgs, **kwargs), msgs
    except TemplateError:
        if not any(m.get("role") == "system" for m in msgs):
            raise
    folded = fold_system_prompt(msgs)
    return tokenizer.apply_chat_template(folded, **kwargs), folded


def fold_system_prompt(messages: Messages) -> list[dict[str, Any]]:
    """``messages`` without system messages: their contents (joined by a blank line) are prepended,
    followed by a blank line, to the first user message, or become a user message of their own
    when no user message follows them.
    """
    system = [str(m.get("content") or "") for m in messages if m.get("role") == "system"]
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    if not system:
        return rest
    head = "\n\n".join(system)
    for m in rest:
        if m.get("role") == "user":
            m["content"] = f"{head}\n\n{m.get('content') or ''}"
            return rest
    return [{"role": "user", "content": head}, *rest]


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
