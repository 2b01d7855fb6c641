"""The text measures of the response namespace: what an instruction-following judge checks, one call each.

With the protocol option ``measures=True`` (beside ``namespace=True``; :mod:`judgerl.tools.namespace`) the
judge's prompt documents these functions, so its code for "answer in at least 300 words, no commas, with a
title" is ``c = [words(t) >= 300, "," not in t, has_title(t)]`` rather than a page of regular expressions
re-typed from memory (a 135M judge gets the call right far more often than the regex). They follow the rules of
IFEval's checker (Zhou et al., 2023, arXiv:2311.07911, as ported in ``lm_eval.tasks.ifeval.instructions``) with
the standard library only (the sandbox has no site-packages): sentences split at ``.``/``!``/``?`` (nltk's punkt
there), the language told by the share of common English words (langdetect there). The judge still reads each
instruction and its number from the prompt: which measure, which comparison, which threshold is its reasoning.

The file is also sandbox source: it is executed inside the sandbox with the other helpers
(:data:`judgerl.tools.namespace._HELPERS`), so it imports only the standard library and never judgerl. Every
function takes a text (a non-str counts as empty) and never raises on text.

==========================  ======================================================================================
``words(t)``                number of words (``\\w+`` runs)
``sentences(t)``            number of sentences
``paragraphs(t)``           number of paragraphs separated by ``***`` (0 when an empty one sits between two)
``highlights(t)``           number of ``*highlighted*`` / ``**bold**`` sections with text
``bullets(t)``              number of markdown bullet lines (``* item`` / ``- item``)
``placeholders(t)``         number of ``[placeholders]``
``sections(t, marker)``     number of sections opened by ``marker`` + a number (``SECTION 1``)
``capital_words(t)``        number of words in all capital letters
``occurrences(t, word)``    times ``word`` occurs (case-insensitive)
``has_word(t, word)``       whether ``word`` occurs as a whole word (case-insensitive)
``is_json(t)``              whether the text (fences stripped) is JSON
``has_title(t)``            whether a ``<<title>>`` with text is there
``english(t)``              whether the text reads as English
``ends_with(t, phrase)``    whether the text ends with ``phrase`` (case-insensitive, outer quotes ignored)
``quoted(t)``               whether the whole text is wrapped in double quotes
``has_postscript(t, mark)`` whether a postscript starting with ``mark`` (``P.S.``, ``P.P.S``) is there
``two_responses(t)``        whether the text holds two different responses separated by ``******``
``nth_first_word(t, n, k,   whether the text has ``n`` paragraphs (split by blank lines) and the ``k``-th
word)``                     starts with ``word``
==========================  ======================================================================================
"""

import json
import re

_EN = {"the", "and", "of", "to", "is", "that", "it", "with", "for", "this", "are", "was", "you"}


def _text(t):
    return t if isinstance(t, str) else ""


def words(t):
    """Number of words (``\\w+`` runs) of ``t``."""
    return len(re.findall(r"\w+", _text(t)))


def sentences(t):
    """Number of sentences of ``t`` (split after ``.``, ``!`` or ``?`` and white space)."""
    return len([s for s in re.split(r"(?<=[.!?])\s+", _text(t).strip()) if s])


def paragraphs(t):
    """Number of paragraphs of ``t`` separated by ``***``; 0 when an empty paragraph sits between two markers
    (IFEval's ``number_paragraphs`` fails it)."""
    parts = re.split(r"\s?\*\*\*\s?", _text(t))
    if any(not p.strip() for p in parts[1:-1]):
        return 0
    return len([p for p in parts if p.strip()])


def highlights(t):
    """Number of highlighted sections (``*text*`` or ``**text**`` on one line) with text inside."""
    t = _text(t)
    found = re.findall(r"\*[^\n\*]*\*", t) + re.findall(r"\*\*[^\n\*]*\*\*", t)
    return sum(bool(h.strip("*").strip()) for h in found)


def bullets(t):
    """Number of markdown bullet lines: ``* item`` (not ``**``) or ``- item``."""
    t = _text(t)  # IFEval's ^\s* may span blank lines; [^\S\n]* counts the same lines in linear time
    return len(re.findall(r"^[^\S\n]*\*[^\*].*$", t, re.M)) + len(re.findall(r"^[^\S\n]*-.*$", t, re.M))


def placeholders(t):
    """Number of ``[placeholders]`` in square brackets."""
    n = 0  # IFEval's \[.*?\] (non-overlapping, one line), scanned in linear time ("[[[[..." is quadratic there)
    for line in _text(t).split("\n"):
        i = line.find("[")
        while i >= 0:
            j = line.find("]", i + 1)
            if j < 0:
                break
            n += 1
            i = line.find("[", j + 1)
    return n


def sections(t, marker):
    """Number of sections opened by ``marker`` followed by a number (``SECTION 1``, ``PARAGRAPH 2``); 0 for an
    empty marker."""
    if not str(marker).strip():
        return 0
    return len(re.split(r"\s?" + re.escape(str(marker)) + r"\s?\d+\s?", _text(t))) - 1


def capital_words(t):
    """Number of words written in all capital letters."""
    return sum(w.isupper() for w in re.findall(r"\w+", _text(t)))


def occurrences(t, word):
    """Times ``word`` occurs in ``t`` (case-insensitive; IFEval's keyword frequency counts inside words too); 0 for
    an empty word (it would match between every two characters)."""
    if not str(word):
        return 0
    return len(re.findall(re.escape(str(word)), _text(t), re.I))


def has_word(t, word):
    """Whether ``word`` occurs in ``t`` as a whole word (case-insensitive); False for an empty word."""
    if not str(word).strip():
        return False
    return re.search(r"\b" + re.escape(str(word)) + r"\b", _text(t), re.I) is not None


def is_json(t):
    """Whether ``t``, without a markdown fence around it, parses as JSON."""
    t = _text(t).strip()
    for p in ("```json", "```Json", "```JSON", "```"):
        t = t.removeprefix(p)
    t = t.removesuffix("```").strip()
    try:
        json.loads(t)
    except (ValueError, RecursionError):  # RecursionError: "[[[[...]]]]" nested deeper than the stack
        return False
    return True


def has_title(t):
    """Whether a title in double angular brackets (``<<title>>``) with text inside is there."""
    for line in _text(t).split("\n"):  # IFEval's <<[^\n]+>> (one match per line: first << to last >>), linear
        i = line.find("<<")
        j = line.rfind(">>")
        if i >= 0 and j >= i + 3 and line[i:j + 2].lstrip("<").rstrip(">").strip():
            return True
    return False


def english(t):
    """Whether ``t`` reads as English: at least 8 % of its words are common English words."""
    w = re.findall(r"[a-z]+", _text(t).lower())
    return sum(x in _EN for x in w) >= 0.08 * max(len(w), 1)


def ends_with(t, phrase):
    """Whether ``t`` ends with ``phrase`` (case-insensitive; outer white space and double quotes ignored); False
    for an empty phrase."""
    if not str(phrase).strip():
        return False
    return _text(t).strip().strip('"').lower().endswith(str(phrase).strip().lower())


def quoted(t):
    """Whether the whole of ``t`` is wrapped in double quotes."""
    t = _text(t).strip()
    return len(t) > 1 and t[0] == '"' and t[-1] == '"'


def has_postscript(t, mark):
    """Whether a postscript starting with ``mark`` is there (``P.S.`` / ``P.P.S`` as IFEval spells them, any
    spacing)."""
    m = str(mark).strip().lower()  # IFEval's \s*<mark>.*$ is found exactly where <mark> is
    if not m:
        return False
    pattern = r"p\.\s?p\.\s?s" if m == "p.p.s" else r"p\.\s?s\." if m == "p.s." else re.escape(m)
    return re.search(pattern, _text(t).lower()) is not None


def two_responses(t):
    """Whether ``t`` holds exactly two different responses separated by ``******``."""
    parts = _text(t).split("******")
    if any(not p.strip() for p in parts[1:-1]):
        return False
    kept = [p for p in parts if p.strip()]
    return len(kept) == 2 and kept[0].strip() != kept[1].strip()


def nth_first_word(t, n, k, word):
    """Whether ``t`` has ``n`` paragraphs (separated by blank lines) and its ``k``-th (from 1) starts with ``word``
    (case-insensitive, leading quotes and trailing punctuation ignored). False when ``n`` or ``k`` is not a whole
    number or ``word`` is empty."""
    try:
        n, k = (int(x) if float(x) == int(x) else None for x in (n, k))
    except (TypeError, ValueError, OverflowError):
        return False
    if n is None or k is None or not str(word).strip():
        return False
    parts = re.split(r"\n\n", _text(t))
    if len([p for p in parts if p.strip()]) != n or not 1 <= k <= len(parts) or not parts[k - 1].strip():
        return False
    first = parts[k - 1].strip().split()[0].lstrip("'").lstrip('"')
    return re.split(r"[.,?!'\"]", first)[0].lower() == str(word).lower()


#: The names :mod:`judgerl.tools.namespace` exposes to the judge's code (in this order in the prompt).
MEASURES = ("words", "sentences", "paragraphs", "highlights", "bullets", "placeholders", "sections", "capital_words",
            "occurrences", "has_word", "is_json", "has_title", "english", "ends_with", "quoted", "has_postscript",
            "two_responses", "nth_first_word")
