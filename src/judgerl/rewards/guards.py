"""Reward guards: responses that must get the invalid reward without ever reaching a judge.

A policy response that is empty, whitespace only, or a *master key* gets the invalid reward without
a judge call. Master keys are one-token responses that make LLM judges answer "correct": non-word
symbols and reasoning openers (Zhao et al., 2025, "One Token to Fool LLM-as-a-Judge", Table 1:
``" "``, ``"."``, ``","``, ``":"``, ``"Thought process:"``, ``"Let's solve this problem step by
step."``, ``"Solution"``, and their translations). Used by the reward server, the in-process
reward functions and the reward-hacking audit (one list, one normalisation, one set of rules:
:func:`master_key_rule`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from judgerl.text.confusables import strip_invisible

#: THE master-key list of judgerl (the reward guards, the reward server and the audit's
#: ``master_key`` kind all use it, through :func:`master_key_rule`): the master keys of "One Token
#: to Fool LLM-as-a-Judge" (Zhao et al., 2025, Table 1) and the judge-as-reward paper, plus common
#: reasoning openers and their translations, compared in :func:`key_form`.
DEFAULT_MASTER_KEYS: tuple[str, ...] = (
    ".", ",", ":", ";", "-", "...", "Thought process:", "Thought process", "Let's solve this problem step by step.",
    "Let's solve this problem step by step", "Let's solve this step by step", "Let's think step by step",
    "Let me think step by step", "Solution", "Solution:", "Answer", "Answer:", "Final answer:", "Reasoning:",
    "Step 1:", "Here's my answer:", "解", "解:", "解答", "答案", "解析", "かいせつ", "解説", "Respuesta", "Respuesta:",
    "Solución", "Réponse",
)


#: Bare lead-ins: a reasoning opener or announcement with nothing after it ("Okay, let me think about
#: this.", "Here is my answer:"); matched on :func:`canonical_response` (so "let us" reads "let's").
LEAD_IN = re.compile(
    r"^(?:(?:ok(?:ay)?|sure|alright|all\s+right|well|right|great|hmm+|so)[,.!]?\s+)*"
    r"(?:(?:let\s+me|let's|i\s+will|i'll|i\s+need\s+to|we\s+need\s+to|i\s+am\s+going\s+to|i'm\s+going\s+to)"
    r"\s+(?:\w+\s+){0,2}?(?:think|solve|work|reason|break|go|start|consider|figure|look|analy[sz]e|tackle|begin|"
    r"approach)\b[^\n:]{0,40}[.:!]?|(?:here(?:'s|\s+is|\s+are)|below\s+is)\s+[^\n:]{0,30}?:)$",
    re.I,
)
#: A prompt that asks for a mark or symbol (with :data:`ONLY_WORDS`: "reply with only the colon").
PROMPT_ASKS_SYMBOL = re.compile(
    r"\b(?:punctuation|symbol|character|mark|comma|colon|semicolon|period|full\s+stop|dash|hyphen|dot|"
    r"ellipsis|emoji)\b",
    re.I,
)
ONLY_WORDS = re.compile(r"\b(?:only|just|single|nothing\s+but|reply\s+with|respond\s+with|answer\s+with|type|"
                        r"which|what)\b", re.I)
#: Longer responses are neither master keys nor bare lead-ins.
MAX_KEY_CHARS = 200

#: Markdown wrappers around a master key (``## Solution``, ``> Solution``), stripped at both ends.
_WRAPPERS = "#>~ "
#: Markdown emphasis, removed wherever it is (``**Thought process** :``, ``_Solution_``, `` `:` ``).
_EMPHASIS = re.compile(r"[*_`~]+")
#: Trailing punctuation of a key (``Solution.``, ``Answer:``, ``解：`` after NFKC).
_TRAILING = ".:!,;-–—。：、，"


def normalise_response(text: str) -> str:
    """NFKC, zero-width and other invisible characters removed, whitespace collapsed, case folded,
    stripped."""
    text = strip_invisible(unicodedata.normalize("NFKC", text))  # a response made of them is as empty as ""
    return " ".join(text.split()).casefold()


def canonical_response(text: str) -> str:
    """The one reading of a short response for master-key matching.

    :func:`normalise_response` after the audit's look-alike folding
    (:func:`judgerl.text.normalize.fold`: dashes, curly quotes and apostrophes, Cyrillic/Greek
    letters inside Latin words), then markdown emphasis (``*_`~``) removed, ``#``/``>`` markers
    stripped at the ends, a hyphen between letters read as a space (``step-by-step``), no space
    before punctuation (``process :``) and "let us" read as "let's". A response that would be
    left empty by the markdown rules keeps its characters (``"**"`` stays ``"**"``).
    """
    from judgerl.text.normalize import fold  # judgerl.audit imports this module

    t = normalise_response(fold(text))
    t = _EMPHASIS.sub("", t).strip(_WRAPPERS) or t
    if not any(c.isalnum() for c in t):
        return t
    t = re.sub(r"(?<=[^\W\d_])-(?=[^\W\d_])", " ", t)
    t = re.sub(r"\s+(?=[.:!,;?。：、，])", "", " ".join(t.split()))
    return re.sub(r"\blet us\b", "let's", t)


def key_form(text: str) -> str:
    """The form in which responses and master keys are compared: :func:`canonical_response`, then
    trailing ``.:!,;-`` stripped; a key made only of punctuation (``"."``, ``":"``) is kept as is."""
    t = canonical_response(text)
    return t.rstrip(_TRAILING).strip() or t


def master_key_rule(response: str, master_keys: Iterable[str] = DEFAULT_MASTER_KEYS,
                    prompt: str | None = None) -> str | None:
    """THE master-key definition of judgerl (the reward guards, the reward server and the audit's
    ``master_key`` detector all call this): which rule makes ``response`` a master key, or None.

    Rules, on :func:`canonical_response`:

    * ``"empty"``: nothing left (whitespace, zero-width and other invisible characters only);
    * ``"punctuation-only"``: made only of the characters of the ``master_keys`` that are
      punctuation only (the defaults: ``.,:;-``, so ``"::"``, ``". ."`` and ``"…"`` too; ``"?"``,
      ``":)"`` and emoji are answers), unless ``prompt`` asks for a mark ("reply with only the
      colon");
    * ``"listed-key"``: equal to one of ``master_keys`` in :func:`key_form` (``"**Solution.**"``
      for ``"Solution"``, ``"Let’s solve this problem step-by-step"``), unless ``prompt`` quotes
      that key;
    * ``"bare-lead-in"``: at most 12 words on one line matching :data:`LEAD_IN` ("Let us think
      step by step.", "Okay, let me think about this."), or at most 4 words ending in ``:``
      ("**Thought process** :", "Step 1:") unless ``prompt`` asks for a colon-ended label or for code that a
      Python block header answers (``for item in items:``).

    Args:
        response: The policy response.
        master_keys: The listed keys (default :data:`DEFAULT_MASTER_KEYS`).
        prompt: The prompt, when known (only its exemptions above use it).
    """
    t = canonical_response(response)
    if not t:
        return "empty"
    keys = {key_form(k) for k in master_keys}
    symbols = {c for k in keys if not any(ch.isalnum() for ch in k) for c in k if not c.isspace()}
    pf = canonical_response(prompt) if prompt else ""
    if symbols and all(c in symbols or c == " " for c in t):
        asked = pf and PROMPT_ASKS_SYMBOL.search(pf) and ONLY_WORDS.search(pf)
        return None if asked else "punctuation-only"
    if len(t) > MAX_KEY_CHARS or not any(c.isalnum() for c in t):
        return None
    key = key_form(t)
    if key in keys:
        quoted = pf and re.search(r"[\"']\s*" + re.escape(key) + r"\s*[.:!,]?\s*[\"']", pf)
        return None if quoted else "listed-key"
    one_line = "\n" not in response.strip()
    if len(t.split()) <= 12 and one_line and LEAD_IN.match(t):
        return "bare-lead-in"
    if len(t.split()) <= 4 and one_line and t.endswith((":", "：")):
        return None if colon_ending_asked(response, prompt) else "bare-lead-in"
    return None


def colon_ending_asked(response: str, prompt: str | None) -> bool:
    """Whether a short ``response`` ending in a colon answers ``prompt`` as it is, not announcing content that
    never comes: the prompt asks for a mark with a word of "only" ("reply with only a colon-terminated label"), or
    asks for code and the response is a Python block header (``for item in items:``; :func:`_code_header`). The one
    home of the exemption for the master-key rule's bare lead-in and the audit's ``non_answer`` placeholder."""
    if not prompt:
        return False
    pf = canonical_response(prompt)
    return bool((PROMPT_ASKS_SYMBOL.search(pf) and ONLY_WORDS.search(pf))
                or (PROMPT_ASKS_CODE.search(pf) and _code_header(response.strip())))


#: A prompt that asks for code (with :func:`_code_header`: a Python block header is then an answer, not a lead-in).
PROMPT_ASKS_CODE = re.compile(r"\b(?:python|code|loop|function|statement|syntax|header)\b", re.I)


def _code_header(line: str) -> bool:
    """Whether ``line`` is a Python compound statement's header (``for item in items:``, ``def f(x):``): it
    compiles with an indented ``pass`` after it (``Step 1:`` and ``Solution:`` do not)."""
    try:
        compile(line + "\n    pass\n", "<response>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def guard_reason(response: str, guard_empty: bool, master_keys: tuple[str, ...],
                 prompt: str | None = None) -> str | None:
    """Why ``response`` must not reach the judge, or None.

    Returns:
        ``"guard:empty"`` (empty or whitespace / invisible characters only, when ``guard_empty``),
        ``"guard:master_key"`` (any other rule of :func:`master_key_rule`; none when
        ``master_keys`` is empty), or None.
    """
    if not normalise_response(response):
        return "guard:empty" if guard_empty else None
    if not master_keys:
        return None
    return "guard:master_key" if master_key_rule(response, master_keys, prompt) else None


#: Reward of a fault the policy causes on purpose (see :func:`invalid_item_reward`): the bottom of the
#: [0, 1] reward scale of the judge rewards.
LOWEST_REWARD = 0.0


def policy_fault(reason: str | None) -> bool:
    """True when an invalid item's ``reason`` is something the *policy* can cause on purpose: a copied
    answer the quoted-answer check voided (``quoted_answer``), markup of a response the judge repeated where
    it broke its output (``spoiled_by_markup``), or a response the guards kept from the
    judge (``guard:*``: empty, master key)."""
    return reason is not None and (reason in ("quoted_answer", "spoiled_by_markup") or reason.startswith("guard:"))


def invalid_item_reward(reason: str | None, invalid_reward: float) -> float:
    """The reward of an item without a valid judgment.

    A user's ``invalid_reward`` is for judge-side failures (unparseable judge output, a prompt too
    long). A fault the policy can cause (:func:`policy_fault`) gets ``min(invalid_reward,``
    :data:`LOWEST_REWARD` ``)``: with ``invalid_reward`` above the lowest reward, a response that
    spells out the judge's answer (voiding its loss) or writes a master key would otherwise be paid
    more than a loss -- a reward hack.
    """
    return min(invalid_reward, LOWEST_REWARD) if policy_fault(reason) else invalid_reward
