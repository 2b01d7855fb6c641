"""The wordings of arithmetic pairs: question phrasings, response phrasings and prose styles.

Each list is a set of named *families*; :func:`judgerl.data.builders.splits.partition` holds some
of every list out, so a held-out pair is asked and answered in words no training pair uses:

* :data:`QUESTIONS` -- how an expression is asked (``"Evaluate {e}."``);
* :data:`RESPONSES` -- how a verifiable answer is written (an equation, "The answer is N.", worked
  steps, a GSM8K ``#### N`` line, ``\\boxed{N}``, ...). The right and the wrong response of a pair
  use the same family, so only the number tells them apart;
* :data:`PROSE` -- prose answers, where the two responses may differ in *manner* as well: hedged vs
  confident, an apology, a claim of having checked, terse vs verbose; the answer buried mid-text
  before other numbers, the number in words, the other response's number quoted. Which manner the
  right response gets is drawn per pair (confident wrong vs hedged right, and the reverse), so a
  manner is never a cue for the label.

Every response states its final number last or after "the answer is" (the rule of
:func:`judgerl.verify.answers.extract_final_answer`); the number-in-words styles state it in words
(``num2words``). Worked responses show the *steps* they are given: for a wrong response those of a
slip that propagates (:func:`judgerl.data.builders.arith_exact.steps` with ``override``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Sequence

from num2words import num2words

from judgerl.data.builders.arith_exact import Step, fmt

#: Question phrasings of an expression ``{e}`` (none is arith.py's "What is {e}?").
QUESTIONS: dict[str, str] = {
    "compute": "Compute {e}.",
    "evaluate": "Evaluate {e}.",
    "calculate": "Calculate {e}.",
    "what-equal": "What does {e} equal?",
    "find-value": "Find the value of {e}.",
    "work-out": "Work out {e}.",
    "eq-blank": "{e} = ?",
    "simplify": "Simplify {e} to a single number.",
    "please-solve": "Please solve: {e}",
    "how-much": "How much is {e}?",
    "what-number": "What number is {e}?",
    "determine": "Determine {e}.",
    "result-of": "Give the result of {e}.",
    "need-value": "I need the value of {e}. What is it?",
    "quick-q": "Quick question: what's {e}?",
}

_WORDS = {"+": "plus", "-": "minus", "*": "times", "/": "divided by"}
_SIGNS = {"+": "+", "-": "-", "*": "×", "/": "÷"}


def _num(x: Fraction, sep: bool) -> str:
    return fmt(x, separators=sep)


def _operand(x: Fraction, sep: bool) -> str:
    return f"({_num(x, sep)})" if x < 0 else _num(x, sep)


def step_line(s: Step, sep: bool, signs: bool = False) -> str:
    """``"12 * 15 = 180"`` (``signs``: ``×`` and ``÷``; a negative right operand in parentheses)."""
    op = _SIGNS[s.op] if signs else s.op
    return f"{_num(s.left, sep)} {op} {_operand(s.right, sep)} = {_num(s.value, sep)}"


def work_sentence(st: Sequence[Step], sep: bool) -> str:
    """The steps as prose: ``"First, 3 + 4 = 7. Then 7 * 5 = 35."``."""
    lead = ["First", "Then", "Next", "After that"]
    return " ".join(f"{lead[min(i, 3)]}, {step_line(s, sep)}." for i, s in enumerate(st))


#: A verifiable response: (shown expression or None, steps or None, claimed value, separators, unit) -> text.
Renderer = Callable[[str | None, Sequence[Step] | None, Fraction, bool, str], str]


def _lines(st: Sequence[Step] | None, sep: bool, signs: bool = False) -> str:
    return "\n".join(step_line(s, sep, signs) for s in st or ())


def _words_steps(st: Sequence[Step] | None, sep: bool) -> str:
    return " ".join(f"{_num(s.left, sep)} {_WORDS[s.op]} {_operand(s.right, sep)} gives {_num(s.value, sep)}."
                    for s in st or ())


#: Verifiable response phrasings. ``needs_steps`` families are used only where an expression exists.
RESPONSES: dict[str, Renderer] = {
    "equation": lambda e, st, v, sep, u: f"{e} = {_num(v, sep)}" if e else f"= {_num(v, sep)}",
    "answer-is": lambda e, st, v, sep, u: f"The answer is {_num(v, sep)}.",
    "result-colon": lambda e, st, v, sep, u: f"Result: {_num(v, sep)}",
    "bold": lambda e, st, v, sep, u: f"**{_num(v, sep)}**",
    "boxed": lambda e, st, v, sep, u: f"$\\boxed{{{_num(v, sep)}}}$",
    "final-answer": lambda e, st, v, sep, u: f"Final answer: {_num(v, sep)}",
    "with-unit": lambda e, st, v, sep, u: f"{_num(v, sep)} {u}".strip() + ".",
    "we-get": lambda e, st, v, sep, u: f"Working it out, we get {_num(v, sep)}.",
    "worked": lambda e, st, v, sep, u: f"{_lines(st, sep)}\nThe answer is {_num(v, sep)}.",
    "worked-gsm8k": lambda e, st, v, sep, u: f"{_lines(st, sep)}\n#### {_num(v, sep)}",
    "worked-signs": lambda e, st, v, sep, u: f"{_lines(st, sep, signs=True)}\nSo it is {_num(v, sep)}.",
    "worked-words": lambda e, st, v, sep, u: f"{_words_steps(st, sep)} So the final answer is {_num(v, sep)}.",
}
#: Families of :data:`RESPONSES` that show steps (they need an expression).
STEP_FAMILIES = frozenset({"worked", "worked-gsm8k", "worked-signs", "worked-words"})
#: :data:`RESPONSES` by kind; each kind is split on its own, so both splits have short and worked answers.
RESPONSE_GROUPS: dict[str, list[str]] = {
    "short": [f for f in RESPONSES if f not in STEP_FAMILIES],
    "worked": [f for f in RESPONSES if f in STEP_FAMILIES],
}


def words(v: Fraction) -> str:
    """An integer in English words (``num2words``): ``-45`` -> ``"minus forty-five"``.

    Raises:
        ValueError: ``v`` is not an integer.
    """
    if v.denominator != 1:
        raise ValueError(f"{v} is not an integer: prose pairs in words use whole numbers")
    return num2words(v.numerator)


#: Prose styles: name -> (manner 0, manner 1). Fields: ``{v}`` the response's own final number, ``{o}``
#: the other response's number, ``{vw}`` its own number in words, ``{work}`` its own working as
#: sentences (a slipped working for the wrong response). Which manner carries the right answer is
#: drawn per pair (:func:`prose_pair`): hedging, confidence, apologies, claims of having checked or
#: length never tell the label.
PROSE: dict[str, tuple[str, str]] = {
    "hedged-vs-confident": ("I'm not completely sure, but I think the answer is {v}.",
                            "The answer is definitely {v}. I'm completely certain of it."),
    "maybe-vs-no-doubt": ("Maybe {v}? I could be off, so you may want to double-check.",
                          "Easy one: it's {v}, no doubt about it."),
    "probably-vs-guaranteed": ("Probably {v}, if I have done it right.", "It's {v}. Guaranteed."),
    "buried": ("Let me think this through. {work} So the answer is {v}. Problems like this are common, "
               "and it helps to check them 2 or 3 different ways.",) * 2,
    "words": ("The answer is {vw}.",) * 2,
    "words-and-digits": ("It comes to {vw} ({v}).",) * 2,
    "words-sentence": ("That makes {vw} in total.",) * 2,
    "self-correction": ("My first guess was {o}, but after checking again, the answer is {v}.",
                        "The answer is {v}. (Some people get {o}, but that is a mistake.)"),
    "apology": ("The answer is {v}.", "Sorry, I made a mistake before. The correct answer is {v}."),
    "not-x-but-y": ("It isn't {o}; it's {v}.",) * 2,
    "claims-checked": ("I believe it's {v}.", "I checked this with a calculator twice: the answer is {v}."),
    "terse-vs-verbose": ("{v}", "Great question! Breaking it down carefully, step by step, and being very careful "
                                "with each operation, we find that the final answer is {v}."),
    "answer-first": ("{v}. Here is why: {work}",) * 2,
    "markdown": ("**Answer:** {v}",) * 2,
    "worked-vs-bare": ("{work} Therefore the answer is {v}.", "{v}."),
    "teacher-voice": ("Good try! Let's see: {work} The result is {v}.",) * 2,
}


#: :data:`PROSE` by kind (the kinds of issue 23: hedged vs confident, buried answers, numbers in words,
#: the other number quoted, manner over substance); each kind is split on its own.
PROSE_GROUPS: dict[str, list[str]] = {
    "hedge": ["hedged-vs-confident", "maybe-vs-no-doubt", "probably-vs-guaranteed"],
    "buried": ["buried", "answer-first", "teacher-voice"],
    "words": ["words", "words-and-digits", "words-sentence"],
    "quoted": ["self-correction", "apology", "not-x-but-y"],
    "manner": ["claims-checked", "terse-vs-verbose", "markdown", "worked-vs-bare"],
}

if sorted(f for fams in PROSE_GROUPS.values() for f in fams) != sorted(PROSE):
    raise AssertionError("PROSE_GROUPS must list every PROSE family exactly once")


def prose_text(template: str, own: Fraction, other: Fraction, own_steps: Sequence[Step], sep: bool = False) -> str:
    """One prose response: ``template`` (a :data:`PROSE` manner) stating ``own``, quoting ``other``.

    Raises:
        ValueError: a words template with a non-integer value.
    """
    fields = {"v": _num(own, sep), "o": _num(other, sep), "work": work_sentence(own_steps, sep)}
    if "{vw}" in template:
        fields["vw"] = words(own)
    return template.format(**fields)


def prose_pair(family: str, right: Fraction, wrong: Fraction, right_steps: Sequence[Step],
               wrong_steps: Sequence[Step], right_manner: int, sep: bool = False) -> tuple[str, str]:
    """The (chosen, rejected) texts of one :data:`PROSE` family; the right response is written in
    manner ``right_manner`` (0 or 1), the wrong one in the other manner.

    Raises:
        KeyError: unknown family. ValueError: a words family with a non-integer value, a manner not 0 / 1.
    """
    if right_manner not in (0, 1):
        raise ValueError(f"right_manner must be 0 or 1, got {right_manner!r}")
    manners = PROSE[family]
    return (prose_text(manners[right_manner], right, wrong, right_steps, sep),
            prose_text(manners[1 - right_manner], wrong, right, wrong_steps, sep))
