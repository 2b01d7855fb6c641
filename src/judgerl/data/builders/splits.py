"""Deterministic train / held-out splits by problem and by template or phrasing family.

A held-out set only measures generalisation when nothing in it was seen in training: not the
problem (the expression, the word problem, the chat prompt), not the question's wording and not
the way the responses are written. Two rules give that, both pure functions of names (never of
the run's seed, the order of a file or how many pairs are built), so a training set built today
with one seed and a held-out set built tomorrow with another are still disjoint:

* :func:`split_of` -- a *problem* goes to ``held-out`` when the SHA-256 of ``(SPLIT_SALT, key)``
  (:func:`judgerl.backends.base.derive_seed`) falls in the held-out fraction. The key is the
  problem's identity: the canonical expression ``"(3 + 4) * 5"``, a GSM8K question's text, a chat
  prompt (whitespace collapsed, lower-cased).
* :func:`partition` -- a list of *families* (question templates, response phrasings, word-problem
  templates) is cut in two by ranking the names by the same hash: the last
  ``ceil(fraction * n)`` names (at least one, and at least one left for training when ``n >= 2``)
  are held out. Adding a family to a list can move at most that family and the one at the cut.

A builder accepts an item for split S only when its problem *and* every family it uses belong to
S, so the held-out set shares no expression, question, template or phrasing with training.
:func:`overlap` checks that on two built sets (the tests and ``judgerl data build`` use it).
"""

from __future__ import annotations

import math
import re
from typing import Iterable, Mapping, Sequence

from judgerl.backends.base import derive_seed
from judgerl.types import PreferencePair

TRAIN = "train"
HELD_OUT = "held-out"
SPLITS = (TRAIN, HELD_OUT)
#: Part of every split hash: changing it reshuffles every split (do not, once data is published).
SPLIT_SALT = "judgerl-split-v1"
#: Share of problems and of families held out.
HELD_OUT_FRACTION = 0.2
#: ``meta`` keys whose values must never be shared between a training and a held-out set.
DISJOINT_KEYS = ("problem_key", "question_family", "response_family", "template")


def check_split(split: str) -> str:
    """``split`` itself when it is ``"train"`` or ``"held-out"``.

    Raises:
        ValueError: any other value (lists the valid ones).
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    return split


def problem_key(text: str) -> str:
    """The identity of a problem text for splitting: whitespace collapsed, lower-cased."""
    return re.sub(r"\s+", " ", text).strip().lower()


def _unit(key: str) -> float:
    return derive_seed(SPLIT_SALT, key) / float(1 << 63)


def split_of(key: str, fraction: float = HELD_OUT_FRACTION) -> str:
    """The split of one problem, by the hash of its key (see the module docstring).

    Args:
        key: The problem's identity (use :func:`problem_key` for free text).
        fraction: Share of keys held out, in (0, 1).

    Raises:
        ValueError: ``fraction`` outside (0, 1).
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"held-out fraction must be in (0, 1), got {fraction}")
    return HELD_OUT if _unit(key) < fraction else TRAIN


def partition(names: Sequence[str], fraction: float = HELD_OUT_FRACTION) -> dict[str, str]:
    """``{name: split}`` for a list of family names (see the module docstring).

    Raises:
        ValueError: fewer than 2 names, duplicate names, or ``fraction`` outside (0, 1).
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"held-out fraction must be in (0, 1), got {fraction}")
    if len(names) < 2 or len(set(names)) != len(names):
        raise ValueError(f"need at least 2 distinct family names to split, got {list(names)!r:.200}")
    ranked = sorted(names, key=lambda n: (_unit(n), n))
    k = min(len(names) - 1, max(1, math.ceil(fraction * len(names))))
    held = set(ranked[-k:])
    return {n: HELD_OUT if n in held else TRAIN for n in names}


def families_of(split: str, names: Sequence[str], fraction: float = HELD_OUT_FRACTION) -> list[str]:
    """The names of ``names`` that :func:`partition` puts in ``split``, in their given order."""
    check_split(split)
    parts = partition(names, fraction)
    return [n for n in names if parts[n] == split]


def grouped_families_of(split: str, groups: Mapping[str, Sequence[str]],
                        fraction: float = HELD_OUT_FRACTION) -> list[str]:
    """:func:`families_of` applied to each group on its own (every group keeps at least one family in
    each split: a kind of wording is never absent from training), concatenated in group order."""
    return [n for names in groups.values() for n in families_of(split, list(names), fraction)]


def overlap(train: Iterable[PreferencePair], held_out: Iterable[PreferencePair],
            keys: Sequence[str] = DISJOINT_KEYS) -> dict[str, list[str]]:
    """What two pair sets share that a held-out set must not: ``{"prompt": [...], key: [...]}`` for
    the prompts (compared by :func:`problem_key`) and each ``meta`` key of ``keys``; empty lists
    when disjoint. A ``meta`` value that is a list (a pair's several families) counts element-wise."""
    def values(pairs: Iterable[PreferencePair]) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {"prompt": set(), **{k: set() for k in keys}}
        for p in pairs:
            out["prompt"].add(problem_key(p.prompt))
            meta: Mapping = p.meta if isinstance(p.meta, Mapping) else {}
            for k in keys:
                v = meta.get(k)
                for x in (v if isinstance(v, (list, tuple)) else [v]):
                    if x is not None:
                        out[k].add(str(x))
        return out

    a, b = values(train), values(held_out)
    return {k: sorted(a[k] & b[k]) for k in a}
