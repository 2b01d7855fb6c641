"""Adapters for RL frameworks that send templated full texts (OpenRLHF ``--remote_rm_url``).

OpenRLHF posts ``query`` = the policy's chat-templated prompt followed by the response, and
``prompts`` = the templated prompt alone. The judge wants the plain instruction and the plain
response, so the prompt is split off and the chat-template markup removed. ChatML
(``<|im_start|>role ... <|im_end|>``, Qwen / SmolLM) and Llama-3 (``<|start_header_id|>role
<|end_header_id|> ... <|eot_id|>``) are recognised; other texts are used as they are.
"""

from __future__ import annotations

import re

#: End-of-turn / end-of-text markers stripped from the end of a response.
DEFAULT_STRIP_TOKENS: tuple[str, ...] = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "</s>",
    "<eos>",
    "<end_of_turn>",
)

_CHATML_USER = re.compile(r"<\|im_start\|>user\s*\n(.*?)(?:<\|im_end\|>|\Z)", re.S)
_LLAMA3_USER = re.compile(
    r"<\|start_header_id\|>user<\|end_header_id\|>\s*(.*?)(?:<\|eot_id\|>|\Z)", re.S
)


def untemplate_prompt(text: str) -> str:
    """The last user turn of a chat-templated prompt (ChatML or Llama-3), else ``text`` stripped."""
    for pattern in (_CHATML_USER, _LLAMA3_USER):
        turns = pattern.findall(text)
        if turns:
            return turns[-1].strip()
    return text.strip()


def clean_response(text: str, strip_tokens: tuple[str, ...] = DEFAULT_STRIP_TOKENS) -> str:
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


def split_query(query: str, prompt: str, strip_tokens: tuple[str, ...] = DEFAULT_STRIP_TOKENS) -> tuple[str, str]:
    """Split an OpenRLHF ``query`` (templated prompt + response) into (instruction, response).

    Leading / trailing whitespace around the prompt is tolerated.

    Raises:
        ValueError: ``query`` does not start with ``prompt`` (the message shows both beginnings).
    """
    for q in (query, query.lstrip()):
        for p in (prompt, prompt.strip()):
            if p and q.startswith(p):
                return untemplate_prompt(p), clean_response(q[len(p) :], strip_tokens)
    raise ValueError(
        f"query does not start with its prompt: query begins {query[:60]!r}, prompt begins {prompt[:60]!r}"
    )
