"""Templated arithmetic word problems ("12 crates with 15 apples each...") with exact answers.

Each :class:`WordTemplate` is a story with number slots and the expression the story means, so the
answer is computed from the *question's* numbers (never from a response). A problem is accepted
only when every step of the expression is a non-negative whole number (no negative apples, no
fractional people) and the answer is positive. Templates are split into training and held-out
families by :func:`judgerl.data.builders.splits.partition` over their ids: a held-out word problem
is a story no training pair tells.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping

from judgerl.data.builders.arith_exact import exact_value, steps

NAMES = ("Ana", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jamal", "Kira", "Liam",
         "Maya", "Noah", "Olga", "Pedro", "Quinn", "Rosa", "Sam", "Tara", "Umar", "Vera", "Wei", "Yusuf", "Zoe")


@dataclass(frozen=True)
class WordTemplate:
    """One story: ``text`` with ``{name}`` and number slots, the ``expression`` over the same slots
    (Python syntax, e.g. ``"a * b - c"``), each slot's inclusive ``ranges`` and the answer's ``unit``."""

    id: str
    text: str
    expression: str
    ranges: Mapping[str, tuple[int, int]]
    unit: str


def _t(id: str, text: str, expression: str, unit: str, **ranges: tuple[int, int]) -> WordTemplate:
    return WordTemplate(id, text, expression, ranges, unit)


S, M, L = (2, 12), (5, 60), (20, 400)
TEMPLATES: tuple[WordTemplate, ...] = (
    _t("crates", "{name} has {a} crates with {b} apples in each crate. How many apples are there in all?",
       "a * b", "apples", a=S, b=M),
    _t("crates-eaten", "There are {a} crates with {b} apples each. {name} eats {c} of the apples. How many apples "
       "are left?", "a * b - c", "apples", a=S, b=M, c=M),
    _t("stickers", "{name} had {a} stickers and gave {b} of them to a friend. How many stickers does {name} have "
       "now?", "a - b", "stickers", a=L, b=M),
    _t("pens-two-days", "A shop sold {a} pens on Monday and {b} pens on Tuesday. How many pens did it sell on the "
       "two days together?", "a + b", "pens", a=L, b=L),
    _t("cards-packs", "{name} buys {a} packs of {b} cards and then gives away {c} cards. How many cards does "
       "{name} have left?", "a * b - c", "cards", a=S, b=M, c=M),
    _t("chairs-rows", "A hall has {a} rows of {b} chairs. The staff add {c} more chairs. How many chairs are in "
       "the hall now?", "a * b + c", "chairs", a=S, b=M, c=M),
    _t("share-candies", "{name} shares {t} candies equally among {a} friends. How many candies does each friend "
       "get?", "t / a", "candies", t=L, a=S),
    _t("train-distance", "A train travels {a} km every hour for {b} hours and then {c} km more. How far does it "
       "travel in total?", "a * b + c", "km", a=M, b=S, c=L),
    _t("wage-days", "{name} earns ${a} an hour, works {b} hours a day, and works {c} days. How many dollars does "
       "{name} earn?", "a * b * c", "dollars", a=S, b=S, c=S),
    _t("muffins-sold", "A baker makes {a} trays of {b} muffins and sells {c} muffins. How many muffins are "
       "unsold?", "a * b - c", "muffins", a=S, b=S, c=M),
    _t("books-shelves", "A library has {a} shelves. Each shelf holds {b} books, and {c} books are on a cart. How "
       "many books are there altogether?", "a * b + c", "books", a=S, b=M, c=M),
    _t("savings-weeks", "{name} saves ${a} each week for {b} weeks and then spends ${c}. How many dollars are "
       "left?", "a * b - c", "dollars", a=M, b=S, c=M),
    _t("marbles-bags", "{name} has {a} bags with {b} marbles each and finds {c} more marbles. How many marbles "
       "does {name} have?", "a * b + c", "marbles", a=S, b=M, c=M),
    _t("bus-stops", "A bus starts with {a} passengers. At the first stop {b} get off and {c} get on. How many "
       "passengers are on the bus now?", "a - b + c", "passengers", a=L, b=M, c=M),
    _t("garden-rows", "A garden has {a} rows with {b} tulips and {c} roses in each row. How many flowers are in "
       "the garden?", "a * (b + c)", "flowers", a=S, b=S, c=S),
    _t("tickets", "Adult tickets cost ${a} and child tickets cost ${b}. {name} buys {c} adult and {d} child "
       "tickets. What is the total cost in dollars?", "a * c + b * d", "dollars", a=M, b=S, c=S, d=S),
    _t("eggs-dozens", "A farm collects {a} dozen eggs and {b} eggs break. How many whole eggs are left?",
       "a * 12 - b", "eggs", a=S, b=S),
    _t("pizza-slices", "{name} orders {a} pizzas cut into {b} slices each. The family eats {c} slices. How many "
       "slices are left?", "a * b - c", "slices", a=S, b=S, c=S),
    _t("laps", "{name} runs {a} laps of {b} meters each day for {c} days. How many meters is that in total?",
       "a * b * c", "meters", a=S, b=L, c=S),
    _t("boxes-split", "{t} toys are packed equally into {a} boxes, and then {b} toys are taken out of one box. How "
       "many toys are left in that box?", "t / a - b", "toys", t=L, a=S, b=S),
    _t("classroom", "A school has {a} classes of {b} students. {c} students are absent today. How many students "
       "are present?", "a * b - c", "students", a=S, b=M, c=M),
    _t("water-bottles", "Each bottle holds {a} liters. {name} fills {b} bottles and pours out {c} liters. How "
       "many liters remain?", "a * b - c", "liters", a=S, b=S, c=S),
    _t("phone-plan", "A phone plan costs ${a} a month plus ${b} for setup. What does it cost for {c} months?",
       "a * c + b", "dollars", a=M, b=M, c=S),
    _t("fence-posts", "A fence has {a} sections, and each section needs {b} boards. {name} already has {c} "
       "boards. How many more boards are needed?", "a * b - c", "boards", a=S, b=S, c=S),
    _t("cookies-plates", "{name} bakes {a} cookies, keeps {b} and puts the rest equally on {c} plates. How many "
       "cookies go on each plate?", "(a - b) / c", "cookies", a=L, b=M, c=S),
    _t("stamps-album", "An album has {a} pages with {b} stamps on each page. {name} adds {c} pages of {d} stamps. "
       "How many stamps are in the album?", "a * b + c * d", "stamps", a=S, b=M, c=S, d=M),
    _t("rent-split", "{a} roommates split a rent of ${t} equally, and each also pays ${b} for internet. How much "
       "does each roommate pay in dollars?", "t / a + b", "dollars", a=S, t=L, b=M),
    _t("paint-cans", "One can of paint covers {a} square meters. {name} buys {b} cans and paints a wall of {c} "
       "square meters. How many square meters can the leftover paint still cover?", "a * b - c",
       "square meters", a=M, b=S, c=L),
    _t("fish-tank", "A tank has {a} fish. {name} adds {b} more each week for {c} weeks. How many fish are in the "
       "tank then?", "a + b * c", "fish", a=M, b=S, c=S),
    _t("orchard", "An orchard has {a} rows of {b} trees. Each tree gives {c} kilograms of fruit. How many "
       "kilograms does the orchard give?", "a * b * c", "kilograms", a=S, b=S, c=M),
    _t("concert", "A concert hall has {a} seats. {b} tickets were sold online and {c} at the door. How many seats "
       "are still empty?", "a - b - c", "seats", a=L, b=M, c=M),
    _t("recipe", "A recipe needs {a} grams of flour per cake. {name} bakes {b} cakes and has {c} grams of flour "
       "to spare afterwards. How many grams of flour did {name} start with?", "a * b + c", "grams",
       a=M, b=S, c=M),
    _t("parking", "A parking garage has {a} floors with {b} spaces each. {c} cars are parked. How many spaces are "
       "free?", "a * b - c", "spaces", a=S, b=M, c=M),
    _t("reading", "{name} reads {a} pages a day for {b} days, then {c} pages on the weekend. How many pages did "
       "{name} read?", "a * b + c", "pages", a=M, b=S, c=M),
    _t("team-jerseys", "A club buys {a} jerseys at ${b} each and {c} balls at ${d} each. How many dollars does "
       "it spend?", "a * b + c * d", "dollars", a=S, b=M, c=S, d=M),
    _t("candles", "{name} makes {a} boxes of {b} candles, sells {c} boxes and keeps the rest. How many candles "
       "does {name} keep?", "(a - c) * b", "candles", a=S, b=M, c=S),
    _t("shells", "{name} collects {a} shells on Saturday and twice as many on Sunday. How many shells is that "
       "altogether?", "a + 2 * a", "shells", a=M),
    _t("trip-fuel", "A car uses {a} liters of fuel per 100 km. How many liters does it use on a trip of {b} "
       "hundred km and back?", "a * b * 2", "liters", a=S, b=S),
)


def _check(templates: tuple[WordTemplate, ...]) -> None:
    """Every slot is in the story and the expression; ids are unique (a wrong edit fails on import)."""
    ids = [t.id for t in templates]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate word template ids in {ids}")
    for t in templates:
        missing = [k for k in t.ranges if f"{{{k}}}" not in t.text or not re.search(rf"\b{k}\b", t.expression)]
        if missing:
            raise ValueError(f"word template {t.id!r}: slots {missing} missing from its text or expression")


def render(t: WordTemplate, values: Mapping[str, int], name: str) -> tuple[str, str]:
    """``(question, expression)`` of template ``t`` with the slot ``values`` filled in.

    Raises:
        KeyError: a slot without a value (names it).
    """
    def sub(m: re.Match) -> str:
        return str(values[m.group(0)])

    expression = re.sub(r"\b[a-z]\b", sub, t.expression)
    return t.text.format(name=name, **{k: values[k] for k in t.ranges}), expression


def draw(t: WordTemplate, rng: random.Random, tries: int = 200) -> tuple[str, str, Fraction] | None:
    """One problem from ``t``: ``(question, expression, value)`` with every step a non-negative whole
    number and a positive answer, or None if ``tries`` draws found none. For a ``t / a`` slot the
    dividend ``t`` is drawn as a multiple of its divisor so the story divides evenly."""
    for _ in range(tries):
        values = {k: rng.randint(lo, hi) for k, (lo, hi) in t.ranges.items()}
        if "t" in values:
            divisor = next((k for k in values if f"/ {k}" in t.expression), None)
            if divisor is not None:
                values["t"] = max(1, values["t"] // values[divisor]) * values[divisor]
        question, expression = render(t, values, rng.choice(NAMES))
        st = steps(expression)
        if all(s.value >= 0 and s.value.denominator == 1 for s in st) and exact_value(expression) > 0:
            return question, expression, exact_value(expression)
    return None


_check(TEMPLATES)
