"""Work units of an evaluation run: which (pair, order, sample) judgments to make, in what order.

A *judgment sample* is one (pair, order, sample index):

* pairwise / listwise protocols judge every pair in **both orders**: ``"AB"`` shows the chosen
  response first (position A / 1), ``"BA"`` shows the rejected one first. Which order is judged
  first (``order_index`` 0) is drawn per pair from a hash of (seed, pair id), so the position of
  the chosen response in the data cannot leak into single-order numbers and the same seed always
  gives the same plan;
* pointwise protocols score each response on its own (``order`` = ``"chosen"`` / ``"rejected"``);
* with ``samples=N`` every unit is sampled N times (J1 test-time scaling).

The sampling seed of a unit is :func:`unit_key`-based (see :meth:`judgerl.judge.Judge.sample_seed`):
a pure function of (run seed, pair id, order, sample index), never of the batch it runs in.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Sequence

from judgerl.eval.metrics import KINDS
from judgerl.types import Messages, PreferencePair


@dataclass(frozen=True)
class WorkUnit:
    """One judgment sample to produce.

    Attributes:
        pair: The pair being judged.
        order: ``"AB"``/``"BA"`` (pairwise, listwise) or ``"chosen"``/``"rejected"`` (pointwise).
        order_index: 0 for the order judged first (seeded per pair), 1 for the other.
        sample: 0-based sample index (< samples).
    """

    pair: PreferencePair
    order: str
    order_index: int
    sample: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.pair.id, self.order, self.sample)

    @property
    def seed_key(self) -> str:
        """Identity of the (pair, order) for sampling seeds; the sample index is added by the judge."""
        return unit_key(self.pair.id, self.order)

    @property
    def chosen_index(self) -> int | None:
        """Position (0-based) of the chosen response in the prompt; None for pointwise."""
        return {"AB": 0, "BA": 1}.get(self.order)

    def responses(self) -> list[str]:
        """The responses in the order shown to the judge."""
        p = self.pair
        return {
            "AB": [p.chosen, p.rejected],
            "BA": [p.rejected, p.chosen],
            "chosen": [p.chosen],
            "rejected": [p.rejected],
        }[self.order]


def unit_key(pair_id: str, order: str) -> str:
    """The seed key of one (pair, order): ``"<pair id>\\x00<order>"``."""
    return f"{pair_id}\x00{order}"


def digest(text: str) -> str:
    """SHA-256 hex digest of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pair_hash(pair: PreferencePair) -> str:
    """Content hash of a pair (16 hex chars); detects a resumed run meeting changed data."""
    return digest(json.dumps(pair.to_dict(), sort_keys=True, ensure_ascii=False, default=str))[:16]


def prompt_hash(messages: Messages) -> str:
    """Hash (16 hex chars) of the exact chat messages sent to the judge."""
    return digest(json.dumps([dict(m) for m in messages], sort_keys=True, ensure_ascii=False))[:16]


def first_order(seed: int, pair_id: str, kind: str) -> str:
    """The order judged first for a pair: a pure function of (seed, pair id).

    Uses SHA-256 (not Python's salted ``hash``), so it is identical across processes and machines.
    Returns ``"AB"``/``"BA"`` for pairwise and listwise kinds, ``"chosen"``/``"rejected"`` for pointwise.
    """
    bit = int(digest(f"{seed}\x00{pair_id}")[:8], 16) & 1
    orders = ("chosen", "rejected") if kind == "pointwise" else ("AB", "BA")
    return orders[bit]


def plan_units(pairs: Sequence[PreferencePair], kind: str, samples: int, seed: int) -> list[WorkUnit]:
    """All judgment samples of a run, in execution order (pair by pair, first order first).

    Both orders of a pair (and all its samples) are adjacent, so with a batch size >= 2·samples
    they go to the backend in the same batch (J1 position-agnostic batching).

    Raises:
        ValueError: unknown ``kind``, ``samples < 1``, or duplicate pair ids (named).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown protocol kind {kind!r}; expected one of {KINDS}")
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    seen: set[str] = set()
    units: list[WorkUnit] = []
    for p in pairs:
        if p.id in seen:
            raise ValueError(f"duplicate pair id {p.id!r}: pair ids must be unique to resume a run")
        seen.add(p.id)
        first = first_order(seed, p.id, kind)
        orders = ("chosen", "rejected") if kind == "pointwise" else ("AB", "BA")
        second = orders[1] if first == orders[0] else orders[0]
        for oi, order in enumerate((first, second)):
            for k in range(samples):
                units.append(WorkUnit(p, order, oi, k))
    return units
