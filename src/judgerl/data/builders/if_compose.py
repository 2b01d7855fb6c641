"""Responses that follow an IFEval prompt's instructions, built by rules (no model).

IFEval (Zhou et al., 2023, arXiv:2311.07911) has 25 checkable instruction types. :func:`plan_for`
reads a prompt's instructions into one :class:`Plan` (what the text must contain and how it is laid
out); :func:`render` writes a response for that plan with ``n`` body sentences from
:mod:`.if_text`; :func:`compose` tries the body lengths whose word count fits the length
instructions and keeps the first text an IFEval checker passes in full (the checker is the caller's:
``check(text) -> labels of the instructions not followed``; this module never judges a text itself).

Layout, outermost first: JSON wrapper or quotation marks; the two-responses separator ``******``;
the repeated request; ``My answer is yes.``; then *blocks* (paragraphs split by ``***`` or blank
lines, or ``Section i`` sections), the first holding the ``<<title>>``, the nth starting with the
required first word, the last holding the bullet list, the postscript and the end phrase. Inside
a block: body sentences (some with a ``*highlighted*`` part), then the sentences that carry
keywords, letters, all-capital words and ``[placeholders]``. Lower / upper case is applied to the
whole text. A combination no layout satisfies (e.g. "all lowercase" with ``SECTION 1``) is reported
by :func:`compose` returning None; the caller counts it.
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from judgerl.data.builders.if_text import LANGUAGES, LETTER_WORDS

#: The 25 instruction ids of IFEval's registry that :func:`plan_for` reads.
SUPPORTED: tuple[str, ...] = (
    "change_case:capital_word_frequency", "change_case:english_capital", "change_case:english_lowercase",
    "combination:repeat_prompt", "combination:two_responses", "detectable_content:number_placeholders",
    "detectable_content:postscript", "detectable_format:constrained_response", "detectable_format:json_format",
    "detectable_format:multiple_sections", "detectable_format:number_bullet_lists",
    "detectable_format:number_highlighted_sections", "detectable_format:title", "keywords:existence",
    "keywords:forbidden_words", "keywords:frequency", "keywords:letter_frequency", "language:response_language",
    "length_constraints:nth_paragraph_first_word", "length_constraints:number_paragraphs",
    "length_constraints:number_sentences", "length_constraints:number_words", "punctuation:no_comma",
    "startend:end_checker", "startend:quotation",
)
CONSTRAINED_ANSWER = "My answer is yes."
TITLES = ("Notes on the Topic", "The Short Answer", "Simple Steps Forward", "Points to Remember")
CAPITAL_WORDS = ("KEY", "NOTE", "CLEAR", "SIMPLE", "SAFE", "FAST", "FAIR", "GOOD", "TRUE", "REAL",
                 "BOLD", "CALM", "WARM", "OPEN", "FREE", "FULL", "RICH", "WISE", "KIND", "NEAT")
PLACEHOLDERS = ("name", "address", "date", "city", "company", "phone", "email", "title", "amount", "time")
KEYWORD_SENTENCES = ("This answer also covers {kw}.", "We come back to {kw} here.", "Keep {kw} in mind.",
                     "There is more to say about {kw}.")
_MAX_SENTENCES = 200


class UnsupportedInstruction(ValueError):
    """An instruction :func:`plan_for` cannot plan for (an unknown id, a language with no bank)."""


@dataclass(frozen=True)
class Plan:
    """What a response must satisfy, gathered from every instruction of one prompt.

    Counts follow the checks: ``*_max`` is the largest allowed count (``less than N`` gives N - 1),
    ``*_min`` the smallest (``at least N``). ``sections`` is (splitter, count); ``first_word`` is
    (paragraphs, nth paragraph 1-based, word).
    """

    language: str = "en"
    case: str | None = None
    no_comma: bool = False
    quotation: bool = False
    json: bool = False
    end_phrase: str | None = None
    title: bool = False
    bullets: int | None = None
    postscript: str | None = None
    forbidden: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    keyword_min: Mapping[str, int] = field(default_factory=dict)
    keyword_max: Mapping[str, int] = field(default_factory=dict)
    letter_min: Mapping[str, int] = field(default_factory=dict)
    letter_max: Mapping[str, int] = field(default_factory=dict)
    capital_min: int = 0
    capital_max: int | None = None
    placeholders: int = 0
    highlights: int = 0
    sections: tuple[str, int] | None = None
    paragraphs: int | None = None
    first_word: tuple[int, int, str] | None = None
    words_min: int = 0
    words_max: int | None = None
    sentences_min: int = 0
    sentences_max: int | None = None
    constrained: bool = False
    two_responses: bool = False
    repeat: str | None = None


def _bound(relation: Any, n: Any, where: str) -> tuple[str, int]:
    if relation not in ("less than", "at least") or not isinstance(n, int):
        raise UnsupportedInstruction(f"{where}: relation {relation!r} / count {n!r} not supported")
    return relation, n


def plan_for(instruction_ids: Sequence[str], kwargs: Sequence[Mapping[str, Any]]) -> Plan:
    """The :class:`Plan` of a prompt's instructions (IFEval ``instruction_id_list`` and ``kwargs``).

    Raises:
        UnsupportedInstruction: an id outside :data:`SUPPORTED`, an argument it cannot use, or a
            response language with no sentence bank in :mod:`.if_text`.
    """
    p: dict[str, Any] = {"keyword_min": {}, "keyword_max": {}, "letter_min": {}, "letter_max": {}}
    for iid, raw in zip(instruction_ids, kwargs):
        kw = {k: v for k, v in dict(raw).items() if v is not None and v != ""}
        kind = iid.split(":", 1)[-1]
        if iid not in SUPPORTED:
            raise UnsupportedInstruction(f"instruction {iid!r} has no generator")
        if kind == "response_language":
            if kw.get("language") not in LANGUAGES:
                raise UnsupportedInstruction(f"{iid}: no sentence bank for language {kw.get('language')!r}")
            p["language"] = kw["language"]
        elif kind in ("english_lowercase", "english_capital"):
            p["case"] = "lower" if kind == "english_lowercase" else "upper"
        elif kind == "capital_word_frequency":
            rel, n = _bound(kw.get("capital_relation"), kw.get("capital_frequency"), iid)
            p["capital_min" if rel == "at least" else "capital_max"] = n if rel == "at least" else n - 1
        elif kind in ("no_comma", "quotation", "json_format", "title", "constrained_response", "two_responses"):
            p[{"no_comma": "no_comma", "quotation": "quotation", "json_format": "json", "title": "title",
               "constrained_response": "constrained", "two_responses": "two_responses"}[kind]] = True
        elif kind == "end_checker":
            p["end_phrase"] = str(kw["end_phrase"]).strip()
        elif kind == "postscript":
            p["postscript"] = str(kw["postscript_marker"]).strip()
        elif kind == "number_bullet_lists":
            p["bullets"] = int(kw["num_bullets"])
        elif kind == "forbidden_words":
            p["forbidden"] = tuple(p.get("forbidden", ())) + tuple(kw["forbidden_words"])
        elif kind == "existence":
            p["keywords"] = tuple(p.get("keywords", ())) + tuple(kw["keywords"])
        elif kind == "frequency":
            rel, n = _bound(kw.get("relation"), kw.get("frequency"), iid)
            key = str(kw["keyword"]).strip()
            if rel == "at least":
                p["keyword_min"][key] = n
            else:
                p["keyword_max"][key] = n - 1
        elif kind == "letter_frequency":
            rel, n = _bound(kw.get("let_relation"), kw.get("let_frequency"), iid)
            letter = str(kw.get("letter", "")).strip().lower()
            if len(letter) != 1 or not "a" <= letter <= "z":
                raise UnsupportedInstruction(f"{iid}: letter {letter!r} is not a-z")
            p["letter_min" if rel == "at least" else "letter_max"][letter] = n if rel == "at least" else n - 1
        elif kind == "number_placeholders":
            p["placeholders"] = int(kw["num_placeholders"])
        elif kind == "number_highlighted_sections":
            p["highlights"] = int(kw["num_highlights"])
        elif kind == "multiple_sections":
            p["sections"] = (str(kw["section_spliter"]).strip(), int(kw["num_sections"]))
        elif kind == "number_paragraphs":
            p["paragraphs"] = int(kw["num_paragraphs"])
        elif kind == "nth_paragraph_first_word":
            p["first_word"] = (int(kw["num_paragraphs"]), int(kw["nth_paragraph"]), str(kw["first_word"]).strip())
        elif kind == "number_words":
            rel, n = _bound(kw.get("relation"), kw.get("num_words"), iid)
            if rel == "at least":
                p["words_min"] = max(p.get("words_min", 0), n)
            else:
                p["words_max"] = min(p.get("words_max") or n, n - 1)
        elif kind == "number_sentences":
            rel, n = _bound(kw.get("relation"), kw.get("num_sentences"), iid)
            if rel == "at least":
                p["sentences_min"] = max(p.get("sentences_min", 0), n)
            else:
                p["sentences_max"] = min(p.get("sentences_max") or n, n - 1)
        elif kind == "repeat_prompt":
            p["repeat"] = str(kw["prompt_to_repeat"]).strip()
    return Plan(**p)


def _mentions(text: str, word: str, whole: bool) -> int:
    pattern = rf"\b{re.escape(word)}\b" if whole else re.escape(word)
    return len(re.findall(pattern, text, flags=re.IGNORECASE))


def _pool(plan: Plan) -> list[str]:
    """Bank sentences that mention no forbidden word, no capped keyword and few capped letters."""
    bank = LANGUAGES[plan.language]
    pool = [s for s in bank
            if not any(_mentions(s, w, True) for w in plan.forbidden)
            and not any(_mentions(s, k, False) for k in plan.keyword_max)]
    if plan.letter_max:
        pool.sort(key=lambda s: sum(s.lower().count(c) for c in plan.letter_max))
        pool = pool[: max(4, len(pool) // 2)]
    return pool or list(bank[:1])


def _highlight(sentence: str) -> str:
    """``sentence`` with all but its first word in ``*...*`` (never at a line start)."""
    head, _, rest = sentence.partition(" ")
    if not rest:
        return f"{head[:-1]} *{head[-1]}*"
    end = rest[-1] if rest[-1] in ".!?।。" else ""
    return f"{head} *{rest[: len(rest) - len(end)]}*{end}"


def _extras(plan: Plan) -> list[str]:
    """The sentences carrying keywords, letters, capital words and placeholders."""
    out = [KEYWORD_SENTENCES[i % len(KEYWORD_SENTENCES)].format(kw=k) for i, k in enumerate(plan.keywords)]
    for k, n in plan.keyword_min.items():
        out += [KEYWORD_SENTENCES[i % len(KEYWORD_SENTENCES)].format(kw=k) for i in range(n)]
    for letter, n in plan.letter_min.items():
        word = LETTER_WORDS[letter]
        out.append("Think of " + " ".join([word] * math.ceil(n / word.count(letter))) + ".")
    if plan.capital_min:
        words = [CAPITAL_WORDS[i % len(CAPITAL_WORDS)] for i in range(plan.capital_min)]
        out.append("Remember these words: " + " ".join(words) + ".")
    if plan.placeholders:
        names = [PLACEHOLDERS[i % len(PLACEHOLDERS)] + (str(i // len(PLACEHOLDERS) + 1) if i >= len(PLACEHOLDERS) else "")
                 for i in range(plan.placeholders)]
        out.append("Fill in " + " and ".join(f"[{n}]" for n in names) + ".")
    return out


def n_blocks(plan: Plan) -> int:
    """Blocks (paragraphs or sections) the layout needs."""
    return max(plan.paragraphs or 1, plan.sections[1] if plan.sections else 1,
               plan.first_word[0] if plan.first_word else 1)


def render(plan: Plan, n: int, seed: int = 0) -> str:
    """A response for ``plan`` with ``n`` body sentences (raised to the blocks and highlights it
    needs), drawn from the bank in a ``seed``-ed rotation. Deterministic in (plan, n, seed)."""
    pool = _pool(plan)
    rng = random.Random(seed)
    start = rng.randrange(len(pool))
    blocks_n = n_blocks(plan)
    n = max(n, blocks_n, plan.highlights, 1)
    body = [pool[(start + i) % len(pool)] for i in range(n)]
    body = [_highlight(s) if i < plan.highlights else s for i, s in enumerate(body)]
    extras = _extras(plan)
    units = body + extras
    per = [units[i::blocks_n] for i in range(blocks_n)]  # round-robin keeps every block non-empty
    blocks = [" ".join(b) for b in per]
    if plan.first_word:
        _, nth, word = plan.first_word
        if 1 <= nth <= blocks_n:
            blocks[nth - 1] = f"{word[:1].upper()}{word[1:]} is the theme of this part. " + blocks[nth - 1]
    if plan.title:
        title = f"<<{TITLES[seed % len(TITLES)]}>>"
        if plan.first_word and plan.first_word[1] == 1:
            first, _, rest = blocks[0].partition(". ")
            blocks[0] = f"{first}.\n{title}\n{rest}" if rest else f"{first}\n{title}"
        else:
            blocks[0] = f"{title}\n{blocks[0]}"
    if plan.sections:
        splitter = plan.sections[0]
        blocks = [f"{splitter} {i + 1}\n{b}" for i, b in enumerate(blocks)]
    tail = []
    if plan.bullets:
        tail += [f"* {pool[(start + n + i) % len(pool)]}" for i in range(plan.bullets)]
    if plan.postscript:
        tail.append(f"{plan.postscript} {pool[(start + n + (plan.bullets or 0)) % len(pool)]}")
    if plan.end_phrase:
        tail.append(plan.end_phrase)
    if tail:
        blocks[-1] = blocks[-1] + "\n" + "\n".join(tail)
    text = ("\n\n***\n\n" if plan.paragraphs else "\n\n").join(blocks)
    if plan.constrained:
        text = f"{CONSTRAINED_ANSWER} {text}"
    if plan.repeat:
        text = f"{plan.repeat}\n{text}"
    if plan.two_responses:
        other = " ".join(pool[(start + 1 + i) % len(pool)] for i in range(2))
        text = f"{other}\n******\n{text}"
    if plan.case == "lower":
        text = text.lower()
    elif plan.case == "upper":
        text = text.upper()
    if plan.json:
        text = json.dumps({"response": text}, ensure_ascii=False)
    elif plan.quotation:
        text = f'"{text}"'
    return text


def count_words(text: str) -> int:
    """Words as IFEval counts them (runs of \\w characters)."""
    return len(re.findall(r"\w+", text))  # IFEval's count: nltk RegexpTokenizer(r"\w+")


def lengths_to_try(plan: Plan, seed: int = 0, tries: int = 8) -> list[int]:
    """Body lengths whose rendered word count fits ``words_min``/``words_max``, nearest to the
    sentence target first (at most ``tries``)."""
    ok = [n for n in range(1, _MAX_SENTENCES + 1)
          if plan.words_min <= count_words(render(plan, n, seed)) <= (plan.words_max if plan.words_max is not None else 10**9)]
    if plan.words_min and not plan.sentences_max and not plan.sentences_min:
        return ok[:tries]
    lo = plan.sentences_min
    hi = plan.sentences_max if plan.sentences_max is not None else max(lo, 3) + 4
    target = (lo + hi) / 2 if plan.sentences_min or plan.sentences_max is not None else 3
    extras = len(_extras(plan)) + bool(plan.postscript) + bool(plan.end_phrase) + (plan.bullets or 0)
    return sorted(ok, key=lambda n: (abs(n + extras - target), n))[:tries]


def compose(plan: Plan, check: Callable[[str], set[str]], seed: int = 0, tries: int = 8) -> tuple[str, int] | None:
    """``(text, n)``: the first rendered response that ``check`` finds no fault with and its body
    length, or None.

    Args:
        plan: From :func:`plan_for`.
        check: ``check(text) -> set of labels of instructions not followed`` (empty: all followed).
        seed: Picks the bank rotation and the title.
        tries: Body lengths tried (:func:`lengths_to_try`).
    """
    for n in lengths_to_try(plan, seed, tries):
        text = render(plan, n, seed)
        if not check(text):
            return text, n
    return None


def without(plan: Plan, **changes: Any) -> Plan:
    """``plan`` with ``changes`` (a :func:`dataclasses.replace` used by the breakers)."""
    return replace(plan, **changes)
