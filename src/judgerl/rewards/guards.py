"""Reward guards: responses that must get the invalid reward without ever reaching a judge.

A policy response that is empty, whitespace only, or a *master key* gets the invalid reward without
a judge call. Master keys are one-token responses that make LLM judges answer "correct": non-word
symbols and reasoning openers (Zhao et al., 2025, "One Token to Fool LLM-as-a-Judge", Table 1:
``" "``, ``"."``, ``","``, ``":"``, ``"Thought process:"``, ``"Let's solve this problem step by
step."``, ``"Solution"``, and their translations). Used by the reward server, the in-process
reward functions and the reward-hacking audit (one list, one normalisation).
"""

from __future__ import annotations

import unicodedata

from judgerl.untrusted import strip_invisible

#: THE master-key list of judgerl (the reward guards, the reward server and the audit's
#: ``master_key`` kind all use it): the master keys of "One Token to Fool LLM-as-a-Judge" (Zhao et
#: al., 2025, Table 1) and the judge-as-reward paper, plus common reasoning openers and their
#: translations. The guard compares after :func:`normalise_response` (so both ``"Solution"`` and
#: ``"Solution:"`` are listed); the audit also strips trailing ``.:!,``.
DEFAULT_MASTER_KEYS: tuple[str, ...] = (
    ".", ",", ":", ";", "-", "...", "Thought process:", "Thought process", "Let's solve this problem step by step.",
    "Let's solve this problem step by step", "Let's solve this step by step", "Let's think step by step",
    "Let me think step by step", "Solution", "Solution:", "Answer", "Answer:", "Final answer:", "Reasoning:",
    "Step 1:", "Here's my answer:", "解", "解:", "解答", "答案", "解析", "かいせつ", "解説", "Respuesta", "Respuesta:",
    "Solución", "Réponse",
)


#: Markdown wrappers around a master key (``**Solution**``, ``## Solution``, `` `:` ``).
_WRAPPERS = "*_#`>~ "
#: Trailing punctuation of a key (``Solution.``, ``Answer:``, ``解：`` after NFKC).
_TRAILING = ".:!,;-–—。：、，"


def normalise_response(text: str) -> str:
    """NFKC, zero-width and other invisible characters removed, whitespace collapsed, case folded,
    stripped."""
    text = strip_invisible(unicodedata.normalize("NFKC", text))  # a response made of them is as empty as ""
    return " ".join(text.split()).casefold()


def key_form(text: str) -> str:
    """The form in which responses and master keys are compared: :func:`normalise_response`, then
    markdown wrappers (``*_#`>~``) stripped at both ends and ``.:!,;-`` at the end; a key made only of
    punctuation (``"."``, ``":"``) is kept as is."""
    t = normalise_response(text)
    t = t.strip(_WRAPPERS) or t
    return t.rstrip(_TRAILING).strip() or t


def guard_reason(response: str, guard_empty: bool, master_keys: tuple[str, ...]) -> str | None:
    """Why ``response`` must not reach the judge, or None.

    Returns:
        ``"guard:empty"`` (empty or whitespace / invisible characters only, when ``guard_empty``),
        ``"guard:master_key"`` (equal to one of ``master_keys`` in :func:`key_form`, e.g.
        ``"**Solution.**"`` for ``"Solution"``; or made only of the characters of the keys that are
        punctuation only -- with the default keys ``"::"``, ``". ."`` and ``"…"`` as well as ``":"``),
        or None.
    """
    norm = normalise_response(response)
    if guard_empty and not norm:
        return "guard:empty"
    if not master_keys or not norm:
        return None
    keys = {key_form(k) for k in master_keys}
    symbols = {c for k in keys if not any(ch.isalnum() for ch in k) for c in k if not c.isspace()}
    if symbols and all(c in symbols or c == " " for c in norm):
        return "guard:master_key"
    return "guard:master_key" if key_form(norm) in keys else None
