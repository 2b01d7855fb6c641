"""Instruction-constraint preference pairs and pointwise records from IFEval prompts, built by rules.

For each IFEval prompt (Zhou et al., 2023) on the requested side of the split (by its ``key``:
:func:`judgerl.data.builders.splits.split_of` of ``"if:<key>"``):

1. the prompt's *checkable* instructions (those the checker does not skip) are planned and a
   response following all of them is composed (:mod:`.if_compose`); it must pass every check;
2. for instructions in a seeded order, one small edit of that response (:mod:`.if_breaks`) that
   makes exactly that instruction fail -- and no other -- gives a rejected response;
3. each (chosen, rejected) is a :class:`~judgerl.types.PreferencePair` with the checker's 0-9
   scores as ``chosen_score`` / ``rejected_score``; ``meta``: ``domain="if"``, ``key``,
   ``problem_key``, ``instruction_ids``, ``kwargs``, ``broken`` (the label of the broken
   instruction) and ``broken_instruction_id``;
4. *pointwise records* (for a pointwise instruction-following judge): the chosen response, each
   single-break response and responses with 2, 3, ... instructions broken (edits applied one after
   another), each with the checker's score -- the gold rule (:func:`judgerl.gold.ifeval.score_from_counts`,
   read from the checker's result, not recomputed) -- in the record layout of ``judgerl label``
   (``id, prompt, response, score, valid, reasoning, ...``), so the gold-judge training reads them.

The checker is passed in (an :class:`judgerl.gold.IFEvalGoldJudge` or anything with its ``score``);
the data layer does not import the gold layer. Skips are counted by reason: ``no_checkable``,
``unsupported`` (an instruction with no generator), ``unsatisfiable`` (no composed text passed),
``no_single_break`` (no edit broke exactly one instruction).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Protocol, Sequence

from judgerl.data.builders.if_breaks import break_candidates
from judgerl.data.builders.if_compose import UnsupportedInstruction, compose, plan_for
from judgerl.data.builders.splits import HELD_OUT_FRACTION, check_split, split_of
from judgerl.types import PreferencePair

SOURCE = "if/ifeval"
DOMAIN = "if"


class Checker(Protocol):
    """The IFEval checker's interface used here (:class:`judgerl.gold.IFEvalGoldJudge`):
    ``score(record, response)`` returns an object with ``score`` (0-9 or None), ``reasoning``,
    ``followed`` ({label: bool}) and ``checks`` (each with ``label``, ``index`` and
    ``skipped_reason``)."""

    def score(self, prompt: Any, response: str) -> Any: ...


@dataclass(frozen=True)
class IFPairSettings:
    """How the IFEval pairs are built.

    Attributes:
        split: ``"train"`` or ``"held-out"``.
        seed: Seeds the bank rotation and the order in which instructions are broken.
        pairs_per_prompt: Most pairs per prompt, each breaking another instruction (default 2
            for train, 1 for held-out).
        held_out_fraction: Share of prompts held out.
    """

    split: str = "train"
    seed: int = 0
    pairs_per_prompt: int | None = None
    held_out_fraction: float = HELD_OUT_FRACTION

    def __post_init__(self) -> None:
        check_split(self.split)
        if self.pairs_per_prompt is not None and self.pairs_per_prompt < 1:
            raise ValueError(f"pairs_per_prompt must be >= 1, got {self.pairs_per_prompt}")

    @property
    def n_pairs(self) -> int:
        """Pairs wanted per prompt."""
        if self.pairs_per_prompt is not None:
            return self.pairs_per_prompt
        return 2 if self.split == "train" else 1

    def config(self) -> dict[str, Any]:
        """JSON-able settings (the :class:`~judgerl.data.builders._sink.PairSink` configuration)."""
        return {"kind": "if-pairs", "split": self.split, "seed": self.seed, "pairs_per_prompt": self.n_pairs,
                "held_out_fraction": self.held_out_fraction}


def prompt_split(key: int, held_out_fraction: float = HELD_OUT_FRACTION) -> str:
    """The split of IFEval prompt ``key`` (hash of ``"if:<key>"``)."""
    return split_of(f"{DOMAIN}:{key}", held_out_fraction)


@dataclass
class PromptResult:
    """What :func:`build_if_prompt` made of one prompt.

    Attributes:
        status: ``ok``, ``other_split`` or a skip reason (module docstring).
        pairs: The preference pairs.
        pointwise: Pointwise records (``judgerl label`` layout).
        detail: Why it was skipped (e.g. the unsupported instruction), else "".
    """

    status: str
    pairs: list[PreferencePair]
    pointwise: list[dict[str, Any]]
    detail: str = ""


def _failed(checker: Checker, record: Any, text: str) -> tuple[set[str], Any]:
    gold = checker.score(record, text)
    return {c.label for c in gold.checks if c.skipped_reason is None and not c.followed}, gold


def _point(record: Any, split: str, rid: str, text: str, gold: Any, broken: Sequence[str]) -> dict[str, Any]:
    return {"id": rid, "prompt": record.prompt, "response": text, "score": gold.score, "valid": True,
            "invalid_reason": None, "reasoning": gold.reasoning, "mode": "gold", "judge": "ifeval", "final": True,
            "domain": DOMAIN, "split": split, "key": record.key, "broken": list(broken),
            "followed": dict(gold.followed)}


def build_if_prompt(record: Any, checker: Checker, settings: IFPairSettings) -> PromptResult:
    """Pairs and pointwise records of one IFEval record (``key``, ``prompt``,
    ``instruction_id_list``, ``kwargs``); see the module docstring."""
    if prompt_split(record.key, settings.held_out_fraction) != settings.split:
        return PromptResult("other_split", [], [])
    checks = [c for c in checker.score(record, "").checks if c.skipped_reason is None]
    if not checks:
        return PromptResult("no_checkable", [], [])
    try:
        plan = plan_for([c.instruction_id for c in checks], [record.kwargs[c.index] for c in checks])
    except UnsupportedInstruction as err:
        return PromptResult("unsupported", [], [], str(err))
    seed = random.Random(f"{settings.seed}:{record.key}").randrange(1 << 30)
    made = compose(plan, lambda t: _failed(checker, record, t)[0], seed=seed)
    if made is None:
        return PromptResult("unsatisfiable", [], [], ",".join(sorted({c.instruction_id for c in checks})))
    chosen, n = made
    _, chosen_gold = _failed(checker, record, chosen)
    order = list(checks)
    random.Random(f"break:{seed}").shuffle(order)
    breaks: list[tuple[Any, str, Any]] = []
    for c in order:
        for cand in break_candidates(c.instruction_id, record.kwargs[c.index], chosen, plan, n, seed):
            failed, gold = _failed(checker, record, cand)
            if failed == {c.label}:
                breaks.append((c, cand, gold))
                break
    if not breaks:
        return PromptResult("no_single_break", [], [], ",".join(c.instruction_id for c in checks))
    pairs = []
    for j, (c, rejected, gold) in enumerate(breaks[: settings.n_pairs]):
        pairs.append(PreferencePair(
            id=f"if-{record.key}-{j}", prompt=record.prompt, chosen=chosen, rejected=rejected, source=SOURCE,
            chosen_score=float(chosen_gold.score), rejected_score=float(gold.score),
            meta={"domain": DOMAIN, "split": settings.split, "key": record.key, "problem_key": f"{DOMAIN}:{record.key}",
                  "instruction_ids": list(record.instruction_id_list), "kwargs": [dict(k) for k in record.kwargs],
                  "broken": c.label, "broken_instruction_id": c.instruction_id,
                  "skipped": [x.label for x in chosen_gold.checks if x.skipped_reason is not None]},
        ))
    points = [_point(record, settings.split, f"if-{record.key}-r0", chosen, chosen_gold, [])]
    points += [_point(record, settings.split, f"if-{record.key}-r1-{i}", text, gold, [c.label])
               for i, (c, text, gold) in enumerate(breaks)]
    text, broken = breaks[0][1], [breaks[0][0].label]
    for c, _, _ in breaks[1:]:  # break more and more instructions: the lower scores
        for cand in break_candidates(c.instruction_id, record.kwargs[c.index], text, plan, n, seed):
            failed, gold = _failed(checker, record, cand)
            if failed == {*broken, c.label}:
                text, broken = cand, [*broken, c.label]
                points.append(_point(record, settings.split, f"if-{record.key}-r{len(broken)}", text, gold, broken))
                break
    return PromptResult("ok", pairs, points)


def _existing_ids(path: Path) -> set[str]:
    """Ids already in a pointwise file (a torn last line is ignored; a bad line elsewhere raises)."""
    if not path.is_file():
        return set()
    lines = path.read_text(encoding="utf-8").split("\n")
    ids = set()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            ids.add(str(json.loads(line)["id"]))
        except (ValueError, KeyError, TypeError):
            if lineno == len(lines):  # no newline after it: cut short by a crash
                continue
            raise ValueError(f"{path}:{lineno}: not a pointwise record line") from None
    return ids


def write_if_pairs(records: Iterable[Any], checker: Checker, out: str | Path, settings: IFPairSettings,
                   pointwise_out: str | Path | None = None) -> dict[str, Any]:
    """Build every record's pairs into ``out`` through a resumable
    :class:`~judgerl.data.builders._sink.PairSink` (one ledger item per prompt key), and their
    pointwise records into ``pointwise_out`` (JSONL, appended; ids already there are not written
    again).

    Returns:
        The sink's summary plus ``split``, ``prompts_in_split`` and ``pointwise_written``.

    Raises:
        ValueError: a malformed line in an existing output (names file and line); see
            :class:`~judgerl.data.builders._sink.PairSink`.
    """
    from judgerl.data.builders._sink import PairSink, repair_tail

    sink = PairSink(out, settings.config())
    points_path = Path(pointwise_out) if pointwise_out is not None else None
    have: set[str] = set()
    if points_path is not None:
        repair_tail(points_path)
        have = _existing_ids(points_path)
        points_path.parent.mkdir(parents=True, exist_ok=True)
    mine = [r for r in records if prompt_split(r.key, settings.held_out_fraction) == settings.split]
    written_points = 0
    for rec in mine:
        if sink.done(str(rec.key)):
            continue
        res = build_if_prompt(rec, checker, settings)
        new = [p for p in res.pointwise if p["id"] not in have]
        if points_path is not None and new:
            with points_path.open("a", encoding="utf-8") as fh:
                for p in new:
                    fh.write(json.dumps(p, ensure_ascii=False) + "\n")
            have.update(p["id"] for p in new)
            written_points += len(new)
        extra: dict[str, Any] = {"pointwise": len(res.pointwise)}
        if res.detail:
            extra["detail"] = res.detail
        sink.finish(str(rec.key), res.pairs, res.status, **extra)
    return {**sink.summary(), "split": settings.split, "prompts_in_split": len(mine),
            "pointwise_written": written_points}

