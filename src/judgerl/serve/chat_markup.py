"""The policy's chat-template markup, so that a judge reads plain text, not template markers.

RL frameworks that post templated full texts (OpenRLHF's ``query`` / ``prompts``) leave the policy's
chat markup in what the judge would read: ``<start_of_turn>user`` (Gemma), ``[INST]`` (Mistral),
``<|user|>`` (Phi-3), ``<｜User｜>`` (DeepSeek-R1), ``<|im_start|>`` (ChatML), ``<|start_header_id|>``
(Llama-3), and end-of-turn tokens after the response. A :class:`ChatMarkup` names those markers.

* :func:`markup_from_tokenizer` derives them from **the policy's own tokenizer** (any model): it
  renders a probe conversation with ``tokenizer.apply_chat_template`` and reads the markers off the
  text between the probe contents (``judgerl serve --policy-tokenizer PATH``);
* :data:`KNOWN_MARKUPS` is the fallback when no tokenizer is given: the markers of the common
  template families, tried in order.

What the judge reads of a templated prompt (:func:`untemplate_prompt`): the last user turn, and the system
prompt when the template gives it a turn of its own (ChatML, Llama-3, Phi-3, DeepSeek-R1; Gemma and Mistral
fold it into a user turn, where it is kept anyway), rendered ``"System: …\n\nUser: …"`` as the data readers
render a conversation (:func:`judgerl.data.formats.chat.render_messages`): the system prompt is part of the
instruction the policy followed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class ChatMarkup:
    """The markers of one chat template.

    Attributes:
        name: Template family (or ``tokenizer:<name>`` when derived).
        user_start: Text that opens a user turn (the content follows it).
        turn_ends: Texts that may close a user turn's content (the first one found ends it).
        end_tokens: End-of-turn / end-of-text markers that may follow a response.
        system_start: Text that opens a system turn (``""``: the system prompt is the text before the first
            user turn); None when the template has no system turn of its own.
        system_ends: Texts that may close the system turn's content (the user-turn opener always does).
        drop_system_lines: Prefixes of lines the template itself writes into the system turn (Llama-3.1's
            ``Cutting Knowledge Date:``), dropped from what the judge reads.
    """

    name: str
    user_start: str
    turn_ends: tuple[str, ...]
    end_tokens: tuple[str, ...]
    system_start: str | None = None
    system_ends: tuple[str, ...] = ()
    drop_system_lines: tuple[str, ...] = ()

    def system_turn(self, text: str) -> str | None:
        """The system prompt of ``text`` (before its first user turn), or None when it has none."""
        if self.system_start is None:
            return None
        first_user = text.find(self.user_start.strip())
        head = text if first_user < 0 else text[:first_user]
        start = self.system_start.strip()
        i = head.find(start) if start else 0
        if i < 0:
            return None
        rest = head[i + len(start):]
        cuts = [rest.find(e) for e in self.system_ends if e and rest.find(e) >= 0]
        content = rest[: min(cuts)] if cuts else rest
        drop = self.drop_system_lines
        lines = [ln for ln in content.splitlines() if not (drop and ln.strip().startswith(drop))]
        return "\n".join(lines).strip() or None

    def last_user_turn(self, text: str) -> str | None:
        """The content of the last user turn in ``text``, or None when ``text`` has none of this markup."""
        start = self.user_start.strip()
        i = text.rfind(start) if start else -1
        if i < 0:
            return None
        rest = text[i + len(start):]
        cuts = [rest.find(e) for e in self.turn_ends if e and rest.find(e) >= 0]
        return (rest[: min(cuts)] if cuts else rest).strip()


#: Markers of the common template families, tried in this order when the policy's tokenizer is not given.
KNOWN_MARKUPS: tuple[ChatMarkup, ...] = (
    ChatMarkup("chatml", "<|im_start|>user\n", ("<|im_end|>", "<|im_start|>"), ("<|im_end|>", "<|endoftext|>"),
               "<|im_start|>system\n", ("<|im_end|>", "<|im_start|>")),
    ChatMarkup("llama-3", "<|start_header_id|>user<|end_header_id|>", ("<|eot_id|>", "<|start_header_id|>"),
               ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"), "<|start_header_id|>system<|end_header_id|>",
               ("<|eot_id|>", "<|start_header_id|>"), ("Cutting Knowledge Date:", "Today Date:")),
    ChatMarkup("gemma", "<start_of_turn>user\n", ("<end_of_turn>", "<start_of_turn>"), ("<end_of_turn>", "<eos>")),
    ChatMarkup("phi-3", "<|user|>", ("<|end|>", "<|assistant|>"), ("<|end|>", "<|endoftext|>"), "<|system|>",
               ("<|end|>", "<|user|>")),
    ChatMarkup("deepseek-r1", "<｜User｜>", ("<｜Assistant｜>", "<｜end▁of▁sentence｜>"), ("<｜end▁of▁sentence｜>",),
               "<｜begin▁of▁sentence｜>", ("<｜User｜>",)),
    ChatMarkup("mistral", "[INST]", ("[/INST]",), ("</s>",)),
)

#: End markers stripped from responses when no tokenizer is given (every known family's, and ``</s>``).
DEFAULT_STRIP_TOKENS: tuple[str, ...] = tuple(dict.fromkeys(t for m in KNOWN_MARKUPS for t in m.end_tokens))

# Probe contents: plain words survive templates that trim, capitalise nothing, or split on </think>.
_U1, _A1, _U2 = "JRLPROBEUSERONE", "JRLPROBEASSISTANTONE", "JRLPROBEUSERTWO"


def _common_suffix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return a[len(a) - n:] if n else ""


def markup_from_tokenizer(tokenizer: Any) -> ChatMarkup:
    """Derive the chat markup of ``tokenizer``'s chat template (any model).

    Renders ``[user U1, assistant A1, user U2]`` with ``add_generation_prompt=True`` and
    ``[user U1, assistant A1]`` without it, and reads: the end-of-turn markers after A1 (with the
    tokenizer's ``eos_token``), the user-turn opener (the text between A1 and U2 without those
    markers; it must also open U1), and what closes a user turn (the text after U1, and the
    generation prompt after U2).

    Args:
        tokenizer: A transformers tokenizer with a ``chat_template`` (``apply_chat_template``).

    Raises:
        ValueError: the tokenizer has no chat template, or its rendering does not show the probe
            contents in order (the message names the tokenizer).
    """
    name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"tokenizer {name!r} has no chat template; its markup cannot be derived")

    def render(messages: list[dict[str, str]], gen: bool) -> str:
        try:
            return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen))
        except Exception as e:  # jinja errors (e.g. a template that raises on a role order)
            raise ValueError(f"tokenizer {name!r}: its chat template failed on a probe conversation: {e}") from e

    conv = [{"role": "user", "content": _U1}, {"role": "assistant", "content": _A1}, {"role": "user", "content": _U2}]
    text = render(conv, True)
    pos = [text.find(_U1), text.find(_A1), text.find(_U2)]
    if min(pos) < 0 or not pos[0] < pos[1] < pos[2]:
        raise ValueError(f"tokenizer {name!r}: its chat template does not show the probe turns in order: {text[:200]!r}")
    p0, p1 = text[: pos[0]], text[pos[0] + len(_U1): pos[1]]
    p2, p3 = text[pos[1] + len(_A1): pos[2]], text[pos[2] + len(_U2):]
    two = render(conv[:2], False)
    after_a1 = two[two.find(_A1) + len(_A1):]
    eos = getattr(tokenizer, "eos_token", None)
    end_tokens = [t for t in after_a1.split() if t]
    # Between A1 and U2: the end of the assistant turn, then the user header.
    user_start, changed = p2.lstrip(), True
    while changed:
        changed = False
        for t in end_tokens:
            if user_start.startswith(t):
                user_start, changed = user_start[len(t):].lstrip(), True
    if not user_start.strip() or not p0.rstrip().endswith(user_start.strip()):
        user_start = _common_suffix(p0, p2)
    if not user_start.strip():
        raise ValueError(f"tokenizer {name!r}: no user-turn marker in its chat template ({text[:200]!r})")
    assistant_end = p2[: len(p2) - len(user_start)].strip() if p2.endswith(user_start) else ""
    end_tokens += [t for t in assistant_end.split() if t]
    if isinstance(eos, str) and eos:
        end_tokens.append(eos)
    turn_ends = tuple(dict.fromkeys(e for e in (p1.strip(), p3.strip(), user_start.strip()) if e))
    system_start, system_ends = _system_markers(render, user_start)
    return ChatMarkup(f"tokenizer:{name}", user_start, turn_ends, tuple(dict.fromkeys(end_tokens)), system_start,
                      system_ends)


_S0 = "JRLPROBESYSTEMONE"


def _system_markers(render: Any, user_start: str) -> tuple[str | None, tuple[str, ...]]:
    """(system_start, system_ends) of a chat template, read off ``[system S0, user U1]``: None when the
    template refuses a system message, drops it, or folds it into the user turn (then it is kept with it)."""
    try:
        text = render([{"role": "system", "content": _S0}, {"role": "user", "content": _U1}], True)
    except ValueError:
        return None, ()
    pos_s, pos_u = text.find(_S0), text.find(_U1)
    if pos_s < 0 or pos_u < 0 or pos_s > pos_u:
        return None, ()
    between = text[pos_s + len(_S0): pos_u]
    cut = between.find(user_start.strip())
    if cut < 0:  # no user-turn opener between them: the system prompt is inside the user turn
        return None, ()
    ends = tuple(dict.fromkeys(e for e in (between[:cut].strip(), user_start.strip()) if e))
    return text[:pos_s], ends


def load_policy_markup(path: str | os.PathLike[str]) -> ChatMarkup:
    """:func:`markup_from_tokenizer` of the tokenizer saved in directory ``path`` (no hub access).

    Raises:
        ValueError: ``path`` is not a directory holding a tokenizer, or it has no usable chat template.
    """
    from transformers import AutoTokenizer

    if not os.path.isdir(path):
        raise ValueError(f"--policy-tokenizer {path}: not a directory (give the policy's tokenizer directory)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as e:  # transformers raises OSError / ValueError / others for a bad directory
        raise ValueError(f"--policy-tokenizer {path}: cannot load a tokenizer: {e}") from e
    return markup_from_tokenizer(tokenizer)


def untemplate_prompt(text: str, markups: Sequence[ChatMarkup] = KNOWN_MARKUPS) -> str:
    """What the judge reads of a chat-templated prompt (first of ``markups`` that matches): the last user turn,
    with the system prompt before it when there is one (``"System: …\n\nUser: …"``, module docstring); else
    ``text`` stripped."""
    from judgerl.data.formats.chat import render_messages

    for markup in markups:
        turn = markup.last_user_turn(text)
        if turn is not None:
            system = markup.system_turn(text)
            if system is None:
                return turn
            return render_messages([{"role": "system", "content": system}, {"role": "user", "content": turn}])
    return text.strip()


def clean_response(text: str, strip_tokens: Sequence[str] = DEFAULT_STRIP_TOKENS) -> str:
    """Remove trailing end-of-turn markers (repeatedly) and surrounding whitespace."""
    text = text.strip()
    changed = True
    while changed:
        changed = False
        for tok in strip_tokens:
            if tok and text.endswith(tok):
                text = text[: -len(tok)].rstrip()
                changed = True
    return text
