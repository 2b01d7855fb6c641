"""The instruction-constraint teacher: one check per IFEval instruction type, written as code over the text.

IFEval (Zhou et al., 2023, arXiv:2311.07911) has 25 instruction types; :data:`CHECKS` writes each
as a Python expression over ``t`` (a response), following the rule of IFEval's checker (as ported
in ``lm_eval.tasks.ifeval.instructions``) with the standard library only, since the sandbox has no
site-packages: ``"," not in t``, ``t == t.lower()``, ``len(re.findall(r"\\w+", t)) >= 300``, ... Two
checks approximate what IFEval does with other libraries: sentences are split at ``.``/``!``/``?``
(nltk's punkt there), and the response language is told by the share of common English words
(langdetect there). The judge's code, with the response namespace::

    import json, re
    def checks(t):
        return [
            "," not in t,                                  # punctuation:no_comma
            len(re.findall(r"\\w+", t)) < 120,             # length_constraints:number_words
        ]
    for name, text in (("A", A), ("B", B)):
        c = checks(text)
        print(name, sum(c), "of", len(c))

The teacher reads ``A 2 of 2`` / ``B 1 of 2``: more instructions followed wins, equal counts give
no verdict. Pointwise (the instruction-following judge of the judge-as-reward study): the gold's
score rule, :func:`judgerl.gold.ifeval.score_from_counts`, on the counts (0-9 scale only).
Instructions come from the pair's ``meta`` (``instruction_ids``, ``kwargs``; those the gold skipped,
``meta["skipped"]``, are left out as the gold leaves them out) -- never from ``broken`` or the label.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from judgerl.train.teach.base import Case, Turn, pick, read_counts, shown_names
from judgerl.types import PreferencePair

_REL = {"less than": "<", "at least": ">="}
_HELPERS = {
    "words": 'def words(t):\n    return re.findall(r"\\w+", t)\n',
    "english": ('EN = {"the", "and", "of", "to", "is", "that", "it", "with", "for", "this", "are", "was", "you"}\n'
                'def english(t):\n    w = re.findall(r"[a-z]+", t.lower())\n'
                '    return sum(x in EN for x in w) >= 0.08 * max(len(w), 1)\n'),
    "sentences": 'def sentences(t):\n    return len([s for s in re.split(r"(?<=[.!?])\\s+", t.strip()) if s])\n',
    "paragraphs": ('def paragraphs(t, n):\n    parts = re.split(r"\\s?\\*\\*\\*\\s?", t)\n'
                   '    inner = [p for p in parts[1:-1] if not p.strip()]\n'
                   '    return not inner and len([p for p in parts if p.strip()]) == n\n'),
    "nth": ('def nth_first_word(t, n, k, word):\n    parts = re.split(r"\\n\\n", t)\n'
            '    if len([p for p in parts if p.strip()]) != n or k > len(parts) or not parts[k - 1].strip():\n'
            '        return False\n'
            '    first = parts[k - 1].strip().split()[0].lstrip("\'").lstrip(\'"\')\n'
            '    return re.split(r"[.,?!\'\\"]", first)[0].lower() == word.lower()\n'),
    "two": ('def two_responses(t):\n    parts = t.split("******")\n'
            '    if any(not p.strip() for p in parts[1:-1]):\n        return False\n'
            '    kept = [p for p in parts if p.strip()]\n'
            '    return len(kept) == 2 and kept[0].strip() != kept[1].strip()\n'),
    "json": ('def is_json(t):\n    t = t.strip()\n    for p in ("```json", "```Json", "```JSON", "```"):\n'
             '        t = t.removeprefix(p)\n    t = t.removesuffix("```").strip()\n    try:\n'
             '        json.loads(t)\n    except ValueError:\n        return False\n    return True\n'),
    "highlights": ('def highlights(t):\n    one = re.findall(r"\\*[^\\n\\*]*\\*", t)\n'
                   '    two = re.findall(r"\\*\\*[^\\n\\*]*\\*\\*", t)\n'
                   '    return sum(bool(h.strip("*").strip()) for h in one + two)\n'),
}


def _postscript(marker: str) -> str:
    m = marker.strip().lower()
    pattern = r"\s*p\.\s?p\.\s?s.*$" if m == "p.p.s" else r"\s*p\.\s?s\..*$" if m == "p.s." else r"\s*" + m + ".*$"
    return f"bool(re.findall({pattern!r}, t.lower(), re.M))"


def _rel(kw: Mapping[str, Any], key: str, what: str) -> str:
    rel = _REL.get(str(kw.get(key) or "at least"))
    if rel is None:
        raise ValueError(f"unknown relation {kw.get(key)!r} (IFEval has 'less than' and 'at least')")
    return rel


#: IFEval instruction id -> (kwargs -> (helpers needed, Python expression over ``t``)).
CHECKS: dict[str, Callable[[Mapping[str, Any]], tuple[tuple[str, ...], str]]] = {
    "keywords:existence": lambda kw: ((), "all(re.search(k, t, re.I) for k in " + repr(list(kw["keywords"])) + ")"),
    "keywords:frequency": lambda kw: ((), f"len(re.findall({kw['keyword']!r}, t, re.I)) "
                                          f"{_rel(kw, 'relation', 'frequency')} {int(kw['frequency'])}"),
    "keywords:forbidden_words": lambda kw: ((), "not any(re.search(r'\\b' + w + r'\\b', t, re.I) for w in "
                                                + repr(list(kw["forbidden_words"])) + ")"),
    "keywords:letter_frequency": lambda kw: ((), f"t.lower().count({str(kw['letter']).lower()!r}) "
                                                 f"{_rel(kw, 'let_relation', 'letters')} {int(kw['let_frequency'])}"),
    "language:response_language": lambda kw: (("english",), "english(t)" if kw["language"] == "en" else "not english(t)"),
    "length_constraints:number_sentences": lambda kw: (("sentences",), f"sentences(t) {_rel(kw, 'relation', 's')} "
                                                                       f"{int(kw['num_sentences'])}"),
    "length_constraints:number_paragraphs": lambda kw: (("paragraphs",), f"paragraphs(t, {int(kw['num_paragraphs'])})"),
    "length_constraints:number_words": lambda kw: (("words",), f"len(words(t)) {_rel(kw, 'relation', 'w')} "
                                                               f"{int(kw['num_words'])}"),
    "length_constraints:nth_paragraph_first_word": lambda kw: (("nth",), (
        f"nth_first_word(t, {int(kw['num_paragraphs'])}, {int(kw['nth_paragraph'])}, {str(kw['first_word'])!r})")),
    "detectable_content:number_placeholders": lambda kw: ((), f"len(re.findall(r'\\[.*?\\]', t)) >= {int(kw['num_placeholders'])}"),
    "detectable_content:postscript": lambda kw: ((), _postscript(str(kw["postscript_marker"]))),
    "detectable_format:number_bullet_lists": lambda kw: ((), (
        "len(re.findall(r'^\\s*\\*[^\\*].*$', t, re.M)) + len(re.findall(r'^\\s*-.*$', t, re.M)) == "
        f"{int(kw['num_bullets'])}")),
    "detectable_format:constrained_response": lambda kw: ((), (
        "any(o in t.strip() for o in ('My answer is yes.', 'My answer is no.', 'My answer is maybe.'))")),
    "detectable_format:number_highlighted_sections": lambda kw: (("highlights",), f"highlights(t) >= {int(kw['num_highlights'])}"),
    "detectable_format:multiple_sections": lambda kw: ((), (
        f"len(re.split(r'\\s?' + {str(kw['section_spliter'])!r} + r'\\s?\\d+\\s?', t)) - 1 >= {int(kw['num_sections'])}")),
    "detectable_format:json_format": lambda kw: (("json",), "is_json(t)"),
    "detectable_format:title": lambda kw: ((), "any(x.lstrip('<').rstrip('>').strip() for x in re.findall(r'<<[^\\n]+>>', t))"),
    "combination:two_responses": lambda kw: (("two",), "two_responses(t)"),
    "combination:repeat_prompt": lambda kw: ((), f"t.strip().lower().startswith({str(kw['prompt_to_repeat']).strip().lower()!r})"),
    "startend:end_checker": lambda kw: ((), f"t.strip().strip('\"').lower().endswith({str(kw['end_phrase']).strip().lower()!r})"),
    "change_case:capital_word_frequency": lambda kw: (("words",), (
        f"sum(w.isupper() for w in words(t)) {_rel(kw, 'capital_relation', 'c')} {int(kw['capital_frequency'])}")),
    "change_case:english_capital": lambda kw: ((), "t.isupper()"),
    "change_case:english_lowercase": lambda kw: ((), "t.islower()"),
    "punctuation:no_comma": lambda kw: ((), "',' not in t"),
    "startend:quotation": lambda kw: ((), "len(t.strip()) > 1 and t.strip()[0] == '\"' and t.strip()[-1] == '\"'"),
}


def labels_of(instruction_ids: list[str]) -> list[str]:
    """The gold's label of each instruction: the id, ``<id>#2`` for its second occurrence, ..."""
    seen: dict[str, int] = {}
    out = []
    for iid in instruction_ids:
        seen[iid] = seen.get(iid, 0) + 1
        out.append(iid if seen[iid] == 1 else f"{iid}#{seen[iid]}")
    return out


def check_program(instruction_ids: list[str], kwargs: list[Mapping[str, Any]], skipped: set[str],
                  names: list[str]) -> str:
    """The judge's code checking the instructions on the responses named ``names`` (see the module
    docstring).

    Raises:
        ValueError: an id with no check, bad arguments, or nothing left to check.
    """
    helpers: list[str] = []
    lines = []
    for iid, label, kw in zip(instruction_ids, labels_of(instruction_ids), kwargs):
        if label in skipped:
            continue
        if iid not in CHECKS:
            raise ValueError(f"no check for instruction {iid!r}")
        try:
            need, expr = CHECKS[iid](kw or {})
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"instruction {iid!r}: bad arguments {dict(kw or {})!r}: {e}") from e
        helpers += [h for h in need if h not in helpers]
        lines.append(f"        {expr},  # {iid}")
    if not lines:
        raise ValueError("no instruction to check")
    body = "".join(_HELPERS[h] for h in helpers)
    loop = "(" + ", ".join(f'("{n}", {n})' for n in names) + ("," if len(names) == 1 else "") + ")"
    label = "name, " if len(names) > 1 else ""
    return (f"import json, re\n{body}def checks(t):\n    return [\n" + "\n".join(lines) + "\n    ]\n"
            f"for name, text in {loop}:\n    c = checks(text)\n    print({label}sum(c), \"of\", len(c))\n")


class InstructionPlan:
    """The instruction-constraint domain plan (see the module docstring)."""

    domain = "if"

    def accepts(self, pair: PreferencePair) -> bool:
        return pair.meta.get("domain") == "if" and bool(pair.meta.get("instruction_ids"))

    def prepare(self, pair: PreferencePair, protocol: Any, tools: bool) -> tuple[list[str], list, set[str]]:
        if not tools or not protocol.namespace:
            raise ValueError(f"pair {pair.id!r}: the instruction teacher checks the responses with code: it needs "
                             "tools and the response namespace (protocol option namespace=true)")
        if protocol.kind == "pointwise" and tuple(protocol.score_scale) != (0.0, 9.0):
            raise ValueError(f"the instruction teacher scores on the gold's 0-9 scale, not {protocol.score_scale}")
        ids, kws = list(pair.meta["instruction_ids"]), list(pair.meta.get("kwargs") or [{}] * len(pair.meta["instruction_ids"]))
        if len(kws) != len(ids):
            raise ValueError(f"pair {pair.id!r}: {len(ids)} instruction ids but {len(kws)} kwargs")
        skipped = set(pair.meta.get("skipped") or ())
        check_program(ids, kws, skipped, ["A"])  # raises ValueError for an instruction it cannot check
        return ids, kws, skipped

    def first(self, case: Case, seed: int | None) -> Turn:
        ids, kws, skipped = case.data
        what = "the answer" if case.protocol.kind == "pointwise" else "each answer"
        return Turn(f"Let me check every instruction on {what} with Python.",
                    check_program(ids, kws, skipped, shown_names(case)))

    def after(self, case: Case, observation: str) -> Turn:
        from judgerl.gold.ifeval import score_from_counts

        counts = read_counts(observation, len(case.responses))
        if counts is None:
            return Turn("The check failed, so I cannot compare the answers.")
        said = " ".join(f"{n} follows {p} of {t} instructions." for n, (p, t) in zip(shown_names(case), counts))
        if case.protocol.kind == "pointwise":
            score = score_from_counts(*counts[0])
            if score is None:
                return Turn(said + " Nothing could be checked.")
            return Turn(said, decision=pick(case.protocol, [float(score)], "")[1])
        thought, decision = pick(case.protocol, [p for p, _ in counts], said + " ")
        return Turn(thought, decision=decision)
