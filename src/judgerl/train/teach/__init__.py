"""Programmatic teachers for each verifiable domain (TIR-Judge-Distill without an LLM teacher).

One :class:`~judgerl.train.teach.base.DomainTeacher` (a Backend) judges through the same
:class:`~judgerl.judge.Judge` as any model -- tool loop, sandbox and response namespace included --
with one plan per domain: arithmetic in every form (:mod:`.arith`), code (:mod:`.code`),
instruction constraints (:mod:`.ifcheck`) and chat / safety with no tool call (:mod:`.chat`). The
judgments are then rejection-sampled against the labels (:func:`judgerl.train.distill.select_examples`);
no plan reads a label. :func:`domain_teacher` registers the training rows.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Mapping, Sequence

from judgerl.train.teach.arith import ArithmeticPlan
from judgerl.train.teach.base import Case, DomainTeacher, Plan, Turn, read_counts
from judgerl.train.teach.chat import ChatPlan
from judgerl.train.teach.code import CodePlan
from judgerl.train.teach.ifcheck import CHECKS, InstructionPlan
from judgerl.types import PreferencePair

logger = logging.getLogger(__name__)


def default_plans() -> list[Plan]:
    """The shipped plans, in the order they are tried: code, instructions, chat, arithmetic."""
    return [CodePlan(), InstructionPlan(), ChatPlan(), ArithmeticPlan()]


def shown_responses(row: Mapping[str, Any], pair: PreferencePair) -> tuple[str, ...]:
    """The responses a GRPO row's prompt shows, in order (pointwise: the row's role; pairwise: its order)."""
    if row["role"] is not None:
        return (pair.chosen if row["role"] == "chosen" else pair.rejected,)
    return (pair.chosen, pair.rejected) if row["order"] == 0 else (pair.rejected, pair.chosen)


def domain_teacher(rows: Sequence[Mapping[str, Any]], pairs_by_id: Mapping[str, PreferencePair],
                   protocols: Mapping[str, Any], tools: bool,
                   plans: Sequence[Plan] | None = None) -> tuple[DomainTeacher, list[Mapping[str, Any]], Counter]:
    """A :class:`DomainTeacher` with every row registered that a plan can judge, those rows, and the
    count of registered rows per domain (``skipped:<domain>`` for rows a plan refused: the reason is
    logged once per domain).

    Args:
        rows: GRPO rows (:func:`judgerl.train.datasets.build_rows`).
        pairs_by_id: Their pairs by id.
        protocols: Protocol objects by the rows' ``protocol`` names.
        tools: The Judge runs code (``task: tir``).
        plans: The domain plans (default :func:`default_plans`).
    """
    teacher = DomainTeacher(plans if plans is not None else default_plans())
    usable, counts = [], Counter()
    for r in rows:
        pair = pairs_by_id[r["pair_id"]]
        plan = teacher.plan_for(pair)
        if plan is None:
            counts["skipped:none"] += 1
            continue
        try:
            teacher.register(r["prompt"], pair, protocols[r["protocol"]], shown_responses(r, pair), tools)
        except ValueError as e:
            if not counts[f"skipped:{plan.domain}"]:
                logger.warning("teacher: %s rows skipped, e.g. %s", plan.domain, e)
            counts[f"skipped:{plan.domain}"] += 1
            continue
        counts[plan.domain] += 1
        usable.append(r)
    return teacher, usable, counts


__all__ = ["ArithmeticPlan", "CHECKS", "Case", "ChatPlan", "CodePlan", "DomainTeacher", "InstructionPlan", "Plan",
           "Turn", "default_plans", "domain_teacher", "read_counts", "shown_responses"]
