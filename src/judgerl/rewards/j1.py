"""J1 reward functions (Whitehouse et al., 2025, "J1: Incentivizing Thinking in LLM-as-a-Judge via RL").

All rewards follow TRL's reward-function signature ``fn(completions, **columns) -> list[float | None]``
(see ``trl/rewards/accuracy_rewards.py``) and are made by ``get_*`` factories so they can be passed
to ``GRPOTrainer(reward_funcs=[...])``. Every completion is parsed with the row's judge protocol
(``judgerl.protocols``); a row whose ``protocol`` column names a protocol of another kind (for
example a pointwise row in a multitask batch seen by the pairwise verdict reward) gets ``None``,
which TRL ignores for that reward.

Dataset columns used (one value per completion; TRL repeats each prompt's row ``num_generations``
times, consecutively):

* ``protocol``: protocol name of the row (optional; the factory's ``protocol`` is the default);
* ``label``: gold verdict ``"A"``/``"B"`` for the order shown in this row's prompt (pairwise);
* ``pair_id`` and ``order`` (0 = chosen shown first, 1 = swapped): position-agnostic batching;
* ``pair_id`` and ``role`` (``"chosen"``/``"rejected"``): pointwise judging from pairwise labels;
* ``responses``: the responses the row's prompt shows (every reward reads a completion the way the
  :class:`~judgerl.judge.Judge` does, :func:`judgerl.rewards._columns.read_decisions`: a final answer
  copied from a response is invalid, so a copied verdict or score earns the invalid reward).

TRL's extra kwargs ``log_metric`` (used to log accuracy and valid-format rate per step) and
``trainer_state`` etc. are accepted and ignored otherwise.

Factories take protocol **objects** (or names, for default options), e.g.
``get_pointwise_pair_reward(PoS(max_score=9))``, so a recipe's scale reaches its rewards; the
row's ``protocol`` column picks among them. Column reading lives in :mod:`judgerl.rewards._columns`.
"""

from __future__ import annotations

from typing import Any, Sequence

from judgerl.protocols.base import JudgeProtocol
from judgerl.rewards._columns import (
    RewardFn,
    column,
    log,
    partner_index,
    protocol_set,
    read_decisions,
    row_protocols,
    row_responses,
)
from judgerl.types import Decision

ProtocolArg = JudgeProtocol | str | Sequence[JudgeProtocol | str]


def _parse(completions: Sequence[Any], protos: Sequence[JudgeProtocol | None], kwargs: dict[str, Any],
           reward: str) -> list[Decision | None]:
    return read_decisions(completions, protos, row_responses(kwargs, len(completions), reward), reward=reward)


def get_verdict_reward(protocol: ProtocolArg = "pav") -> RewardFn:
    """J1 verdict reward: 1.0 if the judge's final verdict equals the gold verdict, else 0.0.

    Pairwise rows only (PaV, PaS, PaVS: for score protocols the verdict is the argmax the parser
    derives; a tie is wrong). An invalid (unparseable) judgment scores 0.0 and is counted in the
    logged ``judge/valid_format`` rate. Non-pairwise rows and rows with ``label=None`` get None.

    Columns: ``label`` ("A"/"B", gold for the shown order), optional ``protocol``.
    Logs: ``judge/pairwise_accuracy``, ``judge/pairwise_valid_format``.

    Raises (when called):
        KeyError: the ``label`` column is missing.
    """

    protos = protocol_set(protocol)

    def verdict_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        labels = column(kwargs, "label", n, "verdict_reward")
        rows = row_protocols(kwargs, n, protos, "verdict_reward", kind="pairwise")
        rows = [p if lab is not None else None for p, lab in zip(rows, labels)]
        decisions = _parse(completions, rows, kwargs, "verdict_reward")
        out: list[float | None] = []
        for d, lab in zip(decisions, labels):
            out.append(None if d is None else float(d.valid and d.verdict == lab))
        scored = [i for i, d in enumerate(decisions) if d is not None]
        log(kwargs, "judge/pairwise_accuracy", [out[i] for i in scored])  # type: ignore[misc]
        log(kwargs, "judge/pairwise_valid_format", [float(decisions[i].valid) for i in scored])  # type: ignore[union-attr]
        return out

    return verdict_reward


def get_consistency_reward(protocol: ProtocolArg = "pav") -> RewardFn:
    """J1 position-consistency reward: 1.0 only when the judge is correct on BOTH orders of a pair.

    With position-agnostic batching every pair appears twice in the batch, as (x, a, b) with
    ``order=0`` and as (x, b, a) with ``order=1``, each with ``num_generations`` samples. Sample k
    of one order is paired with sample k of the other order (both are i.i.d. draws), and both get
    ``1[correct_k(order 0) and correct_k(order 1)]``.

    Columns: ``label``, ``pair_id``, ``order``, optional ``protocol``.
    Logs: ``judge/position_consistent_accuracy``.

    Raises (when called):
        KeyError: a needed column is missing.
        ValueError: a pairwise row's partner order is not in the same reward call. TRL computes
            rewards over one generation batch, so the batch must hold whole pairs: the dataset
            must keep both orders adjacent (``build_grpo_dataset`` does) and the number of
            distinct prompts per generation batch must be even.
    """

    protos = protocol_set(protocol)

    def consistency_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        labels = column(kwargs, "label", n, "consistency_reward")
        pair_ids = column(kwargs, "pair_id", n, "consistency_reward")
        orders = column(kwargs, "order", n, "consistency_reward")
        rows = row_protocols(kwargs, n, protos, "consistency_reward", kind="pairwise")
        rows = [p if lab is not None else None for p, lab in zip(rows, labels)]
        decisions = _parse(completions, rows, kwargs, "consistency_reward")
        correct = [d is not None and d.valid and d.verdict == lab for d, lab in zip(decisions, labels)]
        keys = [None if rows[i] is None else (pair_ids[i], int(orders[i])) for i in range(n)]
        partners = partner_index(keys, lambda k: (k[0], 1 - k[1]))  # type: ignore[index]
        out: list[float | None] = []
        for i in range(n):
            if keys[i] is None:
                out.append(None)
                continue
            j = partners[i]
            if j is None:
                raise ValueError(
                    f"consistency_reward: pair {pair_ids[i]!r} order {1 - int(orders[i])} is not in this batch; "
                    "both orders of a pair must be generated in the same batch (keep them adjacent in the "
                    "dataset, shuffle by pair, and use an even number of prompts per generation batch)"
                )
            out.append(float(correct[i] and correct[j]))
        log(kwargs, "judge/position_consistent_accuracy", [v for v in out if v is not None])
        return out

    return consistency_reward


def get_pointwise_pair_reward(protocol: ProtocolArg = "pos") -> RewardFn:
    """J1 pointwise-from-pairwise reward: 1.0 iff score(chosen) > score(rejected), else 0.0.

    Each pair is split into two pointwise rows (``role="chosen"`` / ``role="rejected"``, same
    ``pair_id``) scored in the same batch; sample k of the chosen row is paired with sample k of
    the rejected row and both get ``1[s_chosen > s_rejected]`` (0 when either is invalid; a tie is
    0). Non-pointwise rows get None.

    Args:
        protocol: The pointwise protocol object(s) (e.g. ``PoS(max_score=9)``) or name(s); a
            ``protocol`` column picks among them per row.

    Columns: ``pair_id``, ``role``, optional ``protocol``.
    Logs: ``judge/pointwise_pair_accuracy``, ``judge/pointwise_valid_format``, ``judge/pointwise_tie_rate``.

    Raises (when called):
        KeyError: a needed column is missing.
        ValueError: a row's partner (other role) is not in the same batch, or ``role`` is not
            "chosen"/"rejected".
    """

    protos = protocol_set(protocol)

    def pointwise_pair_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        pair_ids = column(kwargs, "pair_id", n, "pointwise_pair_reward")
        roles = column(kwargs, "role", n, "pointwise_pair_reward")
        rows = row_protocols(kwargs, n, protos, "pointwise_pair_reward", kind="pointwise")
        for i, (p, r) in enumerate(zip(rows, roles)):
            if p is not None and r not in ("chosen", "rejected"):
                raise ValueError(f"pointwise_pair_reward: row {i} has role {r!r}; expected 'chosen' or 'rejected'")
        decisions = _parse(completions, rows, kwargs, "pointwise_pair_reward")
        keys = [None if rows[i] is None else (pair_ids[i], roles[i]) for i in range(n)]
        other = {"chosen": "rejected", "rejected": "chosen"}
        partners = partner_index(keys, lambda k: (k[0], other[k[1]]))  # type: ignore[index]
        out: list[float | None] = []
        ties: list[float] = []
        for i in range(n):
            if keys[i] is None:
                out.append(None)
                continue
            j = partners[i]
            if j is None:
                raise ValueError(
                    f"pointwise_pair_reward: pair {pair_ids[i]!r} has no {other[roles[i]]!r} row in this batch; "
                    "both halves of a pair must be scored in the same batch"
                )
            c, r = (i, j) if roles[i] == "chosen" else (j, i)
            dc, dr = decisions[c], decisions[r]
            ok = dc is not None and dr is not None and dc.valid and dr.valid
            if ok:
                ties.append(float(dc.scores[0] == dr.scores[0]))  # type: ignore[index,union-attr]
            out.append(float(ok and dc.scores[0] > dr.scores[0]))  # type: ignore[index,union-attr]
        scored = [i for i in range(n) if keys[i] is not None]
        log(kwargs, "judge/pointwise_pair_accuracy", [out[i] for i in scored])  # type: ignore[misc]
        log(kwargs, "judge/pointwise_valid_format", [float(decisions[i].valid) for i in scored])  # type: ignore[union-attr]
        log(kwargs, "judge/pointwise_tie_rate", ties)
        return out

    return pointwise_pair_reward


def get_format_reward(protocol: ProtocolArg) -> RewardFn:
    """Format reward: 1.0 when the row's protocol parses the completion into a valid Decision, else 0.0.

    A shaping term for the first RL steps of small models (the answer tags must be emitted before
    the correctness rewards can separate outputs). Applies to every row whose protocol is given.

    Args:
        protocol: The protocol object(s) of the rows, with their options (a 0-9 PoS recipe passes
            ``PoS(max_score=9)``, so a score of 10 is invalid); a ``protocol`` column picks per row.

    Columns: optional ``protocol``.
    Logs: ``judge/valid_format``.
    """
    protos = protocol_set(protocol)

    def format_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        rows = row_protocols(kwargs, len(completions), protos, "format_reward")
        decisions = _parse(completions, rows, kwargs, "format_reward")
        out: list[float | None] = [None if d is None else float(d.valid) for d in decisions]
        log(kwargs, "judge/valid_format", [v for v in out if v is not None])
        return out

    return format_reward


__all__ = [
    "get_consistency_reward",
    "get_format_reward",
    "get_pointwise_pair_reward",
    "get_verdict_reward",
]
