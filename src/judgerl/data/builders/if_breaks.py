"""One edit that breaks one IFEval instruction of a composed response (:mod:`.if_compose`).

:func:`break_candidates` lists, for one instruction, small edits of a passing response that should
make that instruction fail and leave the rest alone: a capital letter where all must be lowercase,
one comma, the title's ``<<>>`` dropped, one bullet more, the P.S. marker reworded, a forbidden word
put in place of another word, the closing quotation mark removed, one body sentence more or fewer
for a length limit, ... Which edit really breaks exactly that instruction is decided by the
caller's IFEval checker, never here; the edits are ordered smallest first.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from judgerl.data.builders.if_compose import (
    CAPITAL_WORDS,
    CONSTRAINED_ANSWER,
    Plan,
    count_words,
    render,
    without,
)
from judgerl.data.builders.if_text import LETTER_WORDS

_BODY_WORD = re.compile(r"(?<![<\[*\w])\b([a-z]{4,})\b(?![\]>\w])")


def _sub_once(pattern: str, repl: Any, text: str, flags: int = 0, last: bool = False) -> str:
    """``text`` with the first (or last) match of ``pattern`` replaced; unchanged when none."""
    matches = list(re.finditer(pattern, text, flags))
    if not matches:
        return text
    m = matches[-1] if last else matches[0]
    new = repl(m) if callable(repl) else m.expand(repl)
    return text[: m.start()] + new + text[m.end():]


def _replace_words(text: str, word: str, count: int) -> str:
    """``text`` with its first ``count`` plain body words (4+ lowercase letters) replaced by ``word``."""
    out, done, pos = [], 0, 0
    for m in _BODY_WORD.finditer(text):
        if done == count:
            break
        if m.group(1).lower() == word.lower():
            continue
        out.append(text[pos:m.start()] + word)
        pos, done = m.end(), done + 1
    return "".join(out) + text[pos:]


def _rerenders(plan: Plan, n: int, seed: int, smaller: bool) -> list[str]:
    """The response rendered with fewer (or more) body sentences, nearest first."""
    steps = range(n - 1, 0, -1) if smaller else range(n + 1, n + 60)
    return [render(plan, m, seed) for m in list(steps)[:40]]


def break_candidates(instruction_id: str, kwargs: Mapping[str, Any], text: str, plan: Plan, n: int,
                     seed: int = 0) -> list[str]:
    """Edited copies of ``text`` (a response :func:`render`-ed from ``plan`` with ``n`` body
    sentences) meant to break ``instruction_id`` alone; empty when none is known for it.

    Args:
        instruction_id: An IFEval id of the prompt.
        kwargs: That instruction's arguments.
        text: The passing response.
        plan: Its plan; n, seed: how it was rendered (length edits render it again).
    """
    kind = instruction_id.split(":", 1)[-1]
    kw = {k: v for k, v in dict(kwargs).items() if v is not None and v != ""}
    out: list[str] = []
    if kind == "english_lowercase":
        out = [_sub_once(r"[a-z]", lambda m: m.group(0).upper(), text, last=True),
               _sub_once(r"\b[a-z]", lambda m: m.group(0).upper(), text)]
    elif kind == "english_capital":
        out = [_sub_once(r"[A-Z]", lambda m: m.group(0).lower(), text, last=True),
               _sub_once(r"\b[A-Z]", lambda m: m.group(0).lower(), text)]
    elif kind == "capital_word_frequency":
        if plan.capital_min:
            caps = "|".join(CAPITAL_WORDS)
            out = [re.sub(rf"\b({caps})\b", lambda m: m.group(0).lower(), text)]
        else:
            out = [_BODY_WORD.sub(lambda m: m.group(0).upper(), text, count=(plan.capital_max or 0) + k)
                   for k in (1, 2, 4)]
    elif kind == "no_comma":
        out = [_sub_once(r"(?<=[a-z]) (?=[a-z]{3,})", ", ", text, last=True),
               _sub_once(r"(?<=[a-z]) (?=[a-z]{3,})", ", ", text)]
    elif kind == "end_checker":
        phrase = re.escape(str(kw["end_phrase"]).strip())
        out = [_sub_once(phrase, lambda m: m.group(0) + " Thanks for reading.", text, re.IGNORECASE, last=True),
               _sub_once(r"\s*" + phrase, "", text, re.IGNORECASE, last=True)]
    elif kind == "title":
        out = [re.sub(r"<<([^\n]+?)>>", r"\1", text)]
    elif kind == "number_bullet_lists":
        lines = text.split("\n")
        idx = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("* ")]
        if idx:
            extra = lines[idx[-1]].replace("* ", "* Also ", 1)
            out = ["\n".join(lines[: idx[-1] + 1] + [extra] + lines[idx[-1] + 1:]),
                   "\n".join(lines[: idx[-1]] + lines[idx[-1] + 1:])]
    elif kind == "postscript":
        marker = re.escape(str(kw["postscript_marker"]).strip())
        out = [_sub_once(rf"(?m)^{marker}\s*", "Note: ", text, re.IGNORECASE)]
    elif kind == "forbidden_words":
        out = [_replace_words(text, str(w), 1) for w in kw["forbidden_words"]]
    elif kind == "existence":
        out = [re.sub(re.escape(str(k)), "this", text, flags=re.IGNORECASE) for k in kw["keywords"]]
    elif kind == "frequency":
        key, want = str(kw["keyword"]).strip(), int(kw["frequency"])
        if kw.get("relation") == "at least":
            pieces = re.split(f"({re.escape(key)})", text, flags=re.IGNORECASE)
            kept, rebuilt = 0, []
            for i, piece in enumerate(pieces):
                if i % 2 == 1:
                    kept += 1
                    piece = piece if kept < want else "it"
                rebuilt.append(piece)
            out = ["".join(rebuilt)]
        else:
            have = len(re.findall(re.escape(key), text, flags=re.IGNORECASE))
            out = [_replace_words(text, key, max(1, want - have))]
    elif kind == "letter_frequency":
        letter, want = str(kw["letter"]).strip().lower(), int(kw["let_frequency"])
        if kw.get("let_relation") == "at least":
            out = [re.sub(r"\s*Think of [^.]*\.", "", text, flags=re.IGNORECASE)]
        else:
            word = LETTER_WORDS.get(letter, letter * 2)
            need = max(1, want - text.lower().count(letter))
            out = [_replace_words(text, word, -(-need // max(1, word.count(letter))) + k) for k in (0, 1)]
    elif kind == "response_language":
        out = [render(without(plan, language="en"), n, seed)]
    elif kind == "number_words":
        out = [t for t in _rerenders(plan, n, seed, smaller=kw.get("relation") == "at least")
               if (count_words(t) < int(kw["num_words"])) == (kw.get("relation") == "at least")][:6]
    elif kind == "number_sentences":
        out = _rerenders(plan, n, seed, smaller=kw.get("relation") == "at least")[:6]
    elif kind == "number_paragraphs":
        out = [text.replace("\n\n***\n\n", " ", 1), _sub_once(r"\. (?=[A-Za-z])", ".\n\n***\n\n", text, last=True)]
    elif kind == "nth_paragraph_first_word":
        word = re.escape(str(kw["first_word"]).strip())
        out = [_sub_once(rf"\b{word} is the theme", "This is the theme", text, re.IGNORECASE)]
    elif kind == "number_placeholders":
        out = [_sub_once(r"\[([^\]\n]*)\]", r"\1", text)]
    elif kind == "number_highlighted_sections":
        out = [_sub_once(r"(?<![*\n])\*([^\n*]+)\*(?!\*)", r"\1", text)]
    elif kind == "multiple_sections":
        splitter, count = re.escape(str(kw["section_spliter"]).strip()), int(kw["num_sections"])
        out = [_sub_once(rf"{splitter} {count}\n", "", text, last=True)]
    elif kind == "json_format":
        out = [text.rstrip()[:-1]]
    elif kind == "quotation":
        out = [text.rstrip()[:-1]]
    elif kind == "constrained_response":
        out = [_sub_once(re.escape(CONSTRAINED_ANSWER), "My answer is probably yes.", text, re.IGNORECASE)]
    elif kind == "two_responses":
        out = [text.replace("\n******\n", "\n", 1)]
    elif kind == "repeat_prompt":
        head = str(kw["prompt_to_repeat"]).strip()
        out = [_sub_once(re.escape(head) + r"\n", "", text, re.IGNORECASE),
               _sub_once(r"\w+", "So", text)]
    seen, unique = {text}, []
    for cand in out:
        if cand not in seen:
            seen.add(cand)
            unique.append(cand)
    return unique
