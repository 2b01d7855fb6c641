"""Word-problem arithmetic pairs from GSM8K: the gold solution vs a programmatically corrupted one.

For each GSM8K question (``question``, ``answer`` ending ``#### N``) one pair is made; the label is
GSM8K's gold number, never a response:

* a *corrupted solution*: one calculation ``<<a*b=c>>`` of the gold solution slips (off by one or
  ten, two digits swapped; a result of two digits or more) and the slip **propagates**: every later
  calculation that uses the slipped number is recomputed exactly
  (:func:`judgerl.data.builders.arith_exact.exact_value`), the numbers shown in the text follow, and
  the final line states the wrong final number. When no calculation can slip that way, the final
  answer itself slips (``error`` ``"final"``);
* *short answers*: "The answer is N." vs a slipped N (the verifiable phrasings of
  :data:`judgerl.data.builders.arith_render.RESPONSES` that show no steps), and mixed lengths (a short
  answer vs a full solution, the right one drawn per pair), so length never tells the label.

Calculator annotations are removed from both responses. The response phrasings (how the
solution ends, which short phrasing) are families split by
:func:`judgerl.data.builders.splits.partition`: training pairs come from ``train.jsonl``, held-out
ones from ``test.jsonl`` in phrasings training never uses, minus any question that also occurs in
the training file. ``meta``: ``domain`` ``"arith/word"``, ``value`` / ``answer`` (the gold number),
``wrong`` / ``wrong_answer``, ``error``, ``problem_key``, ``response_family``, ``gsm8k_location``,
``calculations`` (the reference solution's ``<<a*b=c>>`` left-hand sides in order: what a teacher's
code computes, never a response).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterator

from judgerl.backends.base import derive_seed
from judgerl.data.builders import arith_render as R
from judgerl.data.builders.arith_exact import as_json_number, exact_value, fmt, is_decimal, slip
from judgerl.data.builders.sampled import iter_gsm8k
from judgerl.data.builders.splits import check_split, grouped_families_of, problem_key
from judgerl.data.errors import DataFormatError
from judgerl.types import PreferencePair
from judgerl.verify.answers import strip_calculator_annotations

_ANNOTATION = re.compile(r"<<([^<>=]*)=([^<>]*)>>")
_FINAL = re.compile(r"^[ \t]*####[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_NUMBER_TEXT = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")
_NUMBER = re.compile(r"(?<![\d.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")
_KINDS = ("off-by-one", "off-by-ten", "digit-swap")
#: How a solution-style pair ends (the short phrasings are those of ``arith_render.RESPONSES``).
SOLUTION_STYLES: dict[str, str] = {
    "gsm8k:hashes": "#### {v}",
    "gsm8k:answer-is": "The answer is {v}.",
    "gsm8k:therefore": "Therefore, the final answer is {v}.",
    "gsm8k:boxed": "So the answer is $\\boxed{{{v}}}$.",
    "gsm8k:mixed-length": "#### {v}",
    "gsm8k:mixed-length-therefore": "Therefore, the final answer is {v}.",
}
#: :data:`SOLUTION_STYLES` by kind (each split has both: full solutions, and one short vs one long).
SOLUTION_GROUPS: dict[str, list[str]] = {
    "solution": ["gsm8k:hashes", "gsm8k:answer-is", "gsm8k:therefore", "gsm8k:boxed"],
    "mixed": ["gsm8k:mixed-length", "gsm8k:mixed-length-therefore"],
}
if sorted(f for fams in SOLUTION_GROUPS.values() for f in fams) != sorted(SOLUTION_STYLES):
    raise AssertionError("SOLUTION_GROUPS must list every SOLUTION_STYLES family exactly once")
#: ``RESPONSES`` families used for short answers (no steps, no unit, no expression to repeat).
SHORT_STYLES = ("answer-is", "result-colon", "bold", "boxed", "final-answer", "we-get")


@dataclass(frozen=True)
class GoldProblem:
    """One GSM8K record: its ``location`` ("line 12"), ``question``, ``solution`` and ``gold`` number."""

    location: str
    question: str
    solution: str
    gold: Fraction


def read_gold(path: str | Path) -> Iterator[GoldProblem]:
    """The records of a GSM8K JSONL file (read by :func:`~judgerl.data.builders.sampled.iter_gsm8k`) with their
    gold numbers, in file order.

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: invalid JSON, a missing or empty ``question`` / ``answer``, or an answer
            without a final ``#### <number>`` line (names the file, line and field).
    """
    for q in iter_gsm8k(path):
        finals = _FINAL.findall(q.gold)
        text = finals[-1] if finals else ""
        if not _NUMBER_TEXT.fullmatch(text):
            raise DataFormatError(path, q.location, "answer", f"has no final '#### <number>' line (got {text!r:.40})")
        yield GoldProblem(q.location, q.question, q.gold, Fraction(text.replace(",", "")))


def _value(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


def _sub_numbers(text: str, changed: dict[Fraction, Fraction]) -> str:
    """``text`` with every number whose value was changed written as its new value."""
    def one(m: re.Match) -> str:
        new = changed.get(_value(m.group(0)))
        return m.group(0) if new is None else fmt(new, separators="," in m.group(0))
    return _NUMBER.sub(one, text) if changed else text


def _propagate(solution: str, k: int, new_k: Fraction) -> tuple[str, dict[Fraction, Fraction]] | None:
    """The solution with calculation ``k`` resulting in ``new_k`` and the slip carried through the later
    calculations and text (annotations removed), and ``{old value: new value}``; None when a later
    calculation cannot be recomputed."""
    changed: dict[Fraction, Fraction] = {}
    out, pos = [], 0
    for j, m in enumerate(_ANNOTATION.finditer(solution)):
        pre = solution[pos:m.start()]
        old = _value(m.group(2).strip())
        if j < k:
            new = old
        elif j == k:
            new = new_k
        else:
            pre = _sub_numbers(pre, changed)
            try:
                new = exact_value(_sub_numbers(m.group(1).strip(), changed).replace(",", ""))
            except ValueError:
                return None
            if not is_decimal(new):
                return None
        if new != old:
            changed[old] = new
        out.append(pre)
        shown = _NUMBER_TEXT.match(solution, m.end())
        pos = m.end()
        if shown and _value(shown.group(0)) == old:
            out.append(fmt(new, separators="," in shown.group(0)))
            pos = shown.end()
    out.append(_sub_numbers(solution[pos:], changed))
    return "".join(out), changed


def corrupt(problem: GoldProblem, rng: random.Random) -> tuple[str, Fraction, str]:
    """A wrong solution to ``problem``: ``(text without annotations and final line, wrong final number, error)``.

    The text keeps everything but the ``#### N`` line (the caller writes the ending).
    """
    body = _FINAL.sub("", problem.solution).rstrip()
    calcs = list(_ANNOTATION.finditer(body))

    def valid(m: re.Match) -> bool:
        try:
            return exact_value(m.group(1).strip()) == _value(m.group(2).strip())
        except (ValueError, ZeroDivisionError):
            return False

    eligible = [k for k, m in enumerate(calcs) if valid(m) and abs(_value(m.group(2).strip())) >= 10]
    rng.shuffle(eligible)
    for k in eligible[:4]:
        new_k, kind = slip(_value(calcs[k].group(2).strip()), rng, _KINDS)
        if new_k < 0:
            continue
        got = _propagate(body, k, new_k)
        if got is not None and problem.gold in got[1] and got[1][problem.gold] != problem.gold:
            return got[0], got[1][problem.gold], f"slip:{kind}@{k}"
    wrong, kind = slip(problem.gold, rng, _KINDS)
    text = strip_calculator_annotations(body)
    return text, wrong, "final"


def gsm8k_word_pairs(path: str | Path, split: str, seed: int = 0, limit: int | None = None,
                     exclude_from: str | Path | None = None) -> list[PreferencePair]:
    """One pair per GSM8K question of ``path`` (see the module docstring).

    Args:
        path: ``gsm8k/train.jsonl`` (for ``split="train"``) or ``test.jsonl`` (``"held-out"``).
        split: Chooses the response phrasings (:func:`~judgerl.data.builders.splits.grouped_families_of`).
        seed: Chooses the style and the slip per question (``derive_seed(seed, "gsm8k", question)``:
            the same question gets the same pair at any ``limit`` or file order).
        limit: Stop after this many pairs.
        exclude_from: A GSM8K file whose questions are dropped (the training file for held-out pairs).

    Returns:
        Pairs with ids ``gsm8k-word-<file stem>-<line>``, source ``gsm8k/word``.

    Raises:
        FileNotFoundError, DataFormatError: as :func:`read_gold` (for either file). ValueError: bad split.
    """
    check_split(split)
    seen = {problem_key(p.question) for p in read_gold(exclude_from)} if exclude_from is not None else set()
    solution_styles = grouped_families_of(split, SOLUTION_GROUPS)
    # The split of a RESPONSES family is that of the whole list, so a family is in one split everywhere.
    short_styles = [f for f in grouped_families_of(split, R.RESPONSE_GROUPS) if f in SHORT_STYLES]
    if not solution_styles or not short_styles:
        raise ValueError(f"split {split!r} has no solution or short phrasing (check SHORT_STYLES)")
    pairs: list[PreferencePair] = []
    for pb in read_gold(path):
        key = problem_key(pb.question)
        if key in seen:
            continue
        seen.add(key)
        rng = random.Random(derive_seed(seed, "gsm8k", key))
        gold_body = strip_calculator_annotations(_FINAL.sub("", pb.solution).rstrip())
        right = fmt(pb.gold, separators=rng.random() < 0.5)
        if rng.random() < 0.6:
            fam = rng.choice(solution_styles)
            body, wrong, error = corrupt(pb, rng)
            end = SOLUTION_STYLES[fam]
            wrong_text = fmt(wrong, separators="," in right)
            chosen, rejected = f"{gold_body}\n{end.format(v=right)}", f"{body}\n{end.format(v=wrong_text)}"
            if fam in SOLUTION_GROUPS["mixed"]:  # one short answer, one solution; which one is right: a coin
                short = R.RESPONSES[rng.choice(short_styles)]
                if rng.random() < 0.5:
                    chosen = short(None, None, pb.gold, "," in right, "")
                else:
                    rejected = short(None, None, wrong, "," in right, "")
        else:
            fam = rng.choice(short_styles)
            wrong, kind = slip(pb.gold, rng, _KINDS)
            error = f"short:{kind}"
            sep = "," in right
            chosen = R.RESPONSES[fam](None, None, pb.gold, sep, "")
            rejected = R.RESPONSES[fam](None, None, wrong, sep, "")
        line = pb.location.split()[-1]
        pairs.append(PreferencePair(
            id=f"gsm8k-word-{Path(path).stem}-{line}", prompt=pb.question, chosen=chosen, rejected=rejected,
            source="gsm8k/word",
            meta={"domain": "arith/word", "form": "word", "split": split, "value": as_json_number(pb.gold),
                  "answer": fmt(pb.gold), "wrong": as_json_number(wrong), "wrong_answer": fmt(wrong), "error": error,
                  "problem_key": f"q:{key}", "response_family": fam, "gsm8k_location": f"{path} {pb.location}",
                  "calculations": [c.strip() for c, _ in _ANNOTATION.findall(pb.solution)]},
        ))
        if limit is not None and len(pairs) >= limit:
            break
    return pairs
