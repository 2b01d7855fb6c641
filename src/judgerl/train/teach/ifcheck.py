"""The instruction-constraint teacher: one check per IFEval instruction type, written as code over the text.

IFEval (Zhou et al., 2023, arXiv:2311.07911) has 25 instruction types; :data:`CHECKS` writes each
as a Python expression over ``t`` (a response) in the text measures of the response namespace
(:mod:`judgerl.tools.namespace_text`: ``words(t)``, ``has_title(t)``, ...; they follow the rule of
IFEval's checker with the standard library only) or in plain Python where that is short (``"," not in t``,
``t.islower()``). The judge's code, with the response namespace and its measures named in the prompt
(protocol option ``measures=True``)::

    for name, t in (("A", A), ("B", B)):
        c = [
            ',' not in t,  # punctuation:no_comma
            words(t) < 120,  # length_constraints:number_words
        ]
        print(name, sum(c), "of", len(c))

Pointwise (one response, ``t`` is ``A``) the line also prints the score of the gold's rule
(:func:`judgerl.gold.ifeval.score_from_counts`: ``9 * followed / checked`` rounded half up), ``print(sum(c),
"of", len(c), "score", (18 * sum(c) + len(c)) // (2 * len(c)))``, so the judge copies a number its code printed
instead of doing the division in its head (stop 45: a judge trained on counts alone wrote only 0 or 9).

Without ``measures`` (the prompt names only ``code_of``, ``value_of``, ...) the program first defines the
measures it calls (their source, :func:`helper_source`), so both forms compute the same counts.

The teacher reads ``A 2 of 2`` / ``B 1 of 2``: more instructions followed wins, equal counts give
no verdict. Pointwise (the instruction-following judge of the judge-as-reward study): the printed score
(``3 of 4 score 7``), which must equal the gold's rule on the printed counts (0-9 scale only).
Instructions come from the pair's ``meta`` (``instruction_ids``, ``kwargs``; those the gold skipped,
``meta["skipped"]``, are left out as the gold leaves them out) -- never from ``broken`` or the label.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Iterable, Mapping

from judgerl.train.teach.base import Case, Turn, pick, read_counts, read_score, shown_names
from judgerl.types import PreferencePair

_REL = {"less than": "<", "at least": ">="}


def _postscript(marker: str) -> str:
    return f"has_postscript(t, {str(marker).strip()!r})"


def _rel(kw: Mapping[str, Any], key: str) -> str:
    rel = _REL.get(str(kw.get(key) or "at least"))
    if rel is None:
        raise ValueError(f"unknown relation {kw.get(key)!r} (IFEval has 'less than' and 'at least')")
    return rel


#: IFEval instruction id -> (kwargs -> Python expression over ``t``, a response), in the measures of
#: :mod:`judgerl.tools.namespace_text` where one fits, plain Python where it is short.
CHECKS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "keywords:existence": lambda kw: "all(occurrences(t, k) for k in " + repr(list(kw["keywords"])) + ")",
    "keywords:frequency": lambda kw: f"occurrences(t, {kw['keyword']!r}) {_rel(kw, 'relation')} {int(kw['frequency'])}",
    "keywords:forbidden_words": lambda kw: "not any(has_word(t, w) for w in " + repr(list(kw["forbidden_words"])) + ")",
    "keywords:letter_frequency": lambda kw: (f"t.lower().count({str(kw['letter']).lower()!r}) "
                                             f"{_rel(kw, 'let_relation')} {int(kw['let_frequency'])}"),
    "language:response_language": lambda kw: "english(t)" if kw["language"] == "en" else "not english(t)",
    "length_constraints:number_sentences": lambda kw: f"sentences(t) {_rel(kw, 'relation')} {int(kw['num_sentences'])}",
    "length_constraints:number_paragraphs": lambda kw: f"paragraphs(t) == {int(kw['num_paragraphs'])}",
    "length_constraints:number_words": lambda kw: f"words(t) {_rel(kw, 'relation')} {int(kw['num_words'])}",
    "length_constraints:nth_paragraph_first_word": lambda kw: (
        f"nth_first_word(t, {int(kw['num_paragraphs'])}, {int(kw['nth_paragraph'])}, {str(kw['first_word'])!r})"),
    "detectable_content:number_placeholders": lambda kw: f"placeholders(t) >= {int(kw['num_placeholders'])}",
    "detectable_content:postscript": lambda kw: _postscript(str(kw["postscript_marker"])),
    "detectable_format:number_bullet_lists": lambda kw: f"bullets(t) == {int(kw['num_bullets'])}",
    "detectable_format:constrained_response": lambda kw: (
        "any(o in t.strip() for o in ('My answer is yes.', 'My answer is no.', 'My answer is maybe.'))"),
    "detectable_format:number_highlighted_sections": lambda kw: f"highlights(t) >= {int(kw['num_highlights'])}",
    "detectable_format:multiple_sections": lambda kw: (
        f"sections(t, {str(kw['section_spliter'])!r}) >= {int(kw['num_sections'])}"),
    "detectable_format:json_format": lambda kw: "is_json(t)",
    "detectable_format:title": lambda kw: "has_title(t)",
    "combination:two_responses": lambda kw: "two_responses(t)",
    "combination:repeat_prompt": lambda kw: f"t.strip().lower().startswith({str(kw['prompt_to_repeat']).strip().lower()!r})",
    "startend:end_checker": lambda kw: f"ends_with(t, {str(kw['end_phrase']).strip()!r})",
    "change_case:capital_word_frequency": lambda kw: (
        f"capital_words(t) {_rel(kw, 'capital_relation')} {int(kw['capital_frequency'])}"),
    "change_case:english_capital": lambda kw: "t.isupper()",
    "change_case:english_lowercase": lambda kw: "t.islower()",
    "punctuation:no_comma": lambda kw: "',' not in t",
    "startend:quotation": lambda kw: "quoted(t)",
}
_CALL = re.compile(r"\b([a-z_]+)\(")


def helper_source(names: Iterable[str]) -> str:
    """The source of the text measures ``names`` (:mod:`judgerl.tools.namespace_text`) with what they use, for a
    program that defines them itself (the plain form: no ``measures`` in the prompt); "" for none."""
    from judgerl.tools import namespace_text as nt

    wanted = [n for n in nt.MEASURES if n in set(names)]
    if not wanted:
        return ""
    parts = ["import json, re\n" if "is_json" in wanted else "import re\n"]
    parts += ["_EN = " + repr(sorted(nt._EN)) + "\n"] if "english" in wanted else []
    parts += [inspect.getsource(nt._text)] + [inspect.getsource(getattr(nt, n)) for n in wanted]
    return "".join(re.sub(r'\n    """.*?"""\n', "\n", src, flags=re.S) for src in parts)


def labels_of(instruction_ids: list[str]) -> list[str]:
    """The gold's label of each instruction: the id, ``<id>#2`` for its second occurrence, ..."""
    seen: dict[str, int] = {}
    out = []
    for iid in instruction_ids:
        seen[iid] = seen.get(iid, 0) + 1
        out.append(iid if seen[iid] == 1 else f"{iid}#{seen[iid]}")
    return out


def check_program(instruction_ids: list[str], kwargs: list[Mapping[str, Any]], skipped: set[str],
                  names: list[str], measures: bool = True) -> str:
    """The judge's code checking the instructions on the responses named ``names`` (see the module
    docstring); ``measures=False`` (the prompt does not name the text measures) defines the ones it uses.

    Raises:
        ValueError: an id with no check, bad arguments, or nothing left to check.
    """
    lines = []
    for iid, label, kw in zip(instruction_ids, labels_of(instruction_ids), kwargs):
        if label in skipped:
            continue
        if iid not in CHECKS:
            raise ValueError(f"no check for instruction {iid!r}")
        try:
            expr = CHECKS[iid](kw or {})
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"instruction {iid!r}: bad arguments {dict(kw or {})!r}: {e}") from e
        lines.append(f"        {expr},  # {iid}")
    if not lines:
        raise ValueError("no instruction to check")
    body = "" if measures else helper_source(_CALL.findall("\n".join(lines)))
    head = "import re\n" if any("re." in x for x in lines) and (measures or not body) else ""
    loop = "(" + ", ".join(f'("{n}", {n})' for n in names) + ("," if len(names) == 1 else "") + ")"
    label = "name, " if len(names) > 1 else ""
    score = ", \"score\", (18 * sum(c) + len(c)) // (2 * len(c))" if len(names) == 1 else ""
    return (f"{head}{body}for name, t in {loop}:\n    c = [\n" + "\n".join(lines) + "\n    ]\n"
            f"    print({label}sum(c), \"of\", len(c){score})\n")


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
                    check_program(ids, kws, skipped, shown_names(case), bool(getattr(case.protocol, "measures", False))))

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
            if read_score(observation) != score:  # the program prints the rule's score: a mismatch is a failure
                return Turn("The check failed, so I cannot score the answer.")
            return Turn(f"{said} Score {score}.", decision=pick(case.protocol, [float(score)], "")[1])
        thought, decision = pick(case.protocol, [p for p, _ in counts], said + " ")
        return Turn(thought, decision=decision)
