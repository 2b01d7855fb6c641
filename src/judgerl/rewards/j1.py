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
* ``pair_id`` and ``role`` (``"chosen"``/``"rejected"``): pointwise judging from pairwise labels.

TRL's extra kwargs ``log_metric`` (used to log accuracy and valid-format rate per step) and
``trainer_state`` etc. are accepted and ignored otherwise.

Helpers shared with :mod:`judgerl.rewards.regression` (``completion_text``, ``parse_all``, …) live
here too.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Hashable, Sequence

from judgerl.types import Decision


def completion_text(completion: Any) -> str:
    """The judge's text of one TRL completion.

    Args:
        completion: A string, or a list of chat messages; the contents of all assistant messages
            are concatenated (a tool-integrated rollout may hold several).

    Raises:
        TypeError: for anything else.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (list, tuple)):
        parts = []
        for m in completion:
            if not isinstance(m, dict) or "content" not in m:
                raise TypeError(f"completion message must be a dict with 'content', got {m!r}")
            if m.get("role", "assistant") == "assistant":
                parts.append(str(m["content"]))
        return "".join(parts)
    raise TypeError(f"completion must be a str or a list of messages, got {type(completion).__name__}")


@lru_cache(maxsize=64)
def cached_protocol(name: str, items: tuple[tuple[str, Any], ...] = ()) -> Any:
    """``judgerl.protocols.get_protocol(name, **dict(items))``, built once per argument set."""
    from judgerl.protocols import get_protocol

    return get_protocol(name, **dict(items))


def parse_all(
    completions: Sequence[Any],
    protocols: Sequence[str | None],
    protocol_kwargs: dict[str, Any] | None = None,
) -> list[Decision | None]:
    """Parse each completion with its row's protocol (None where the row's protocol is None)."""
    items = tuple(sorted((protocol_kwargs or {}).items()))
    out: list[Decision | None] = []
    for c, name in zip(completions, protocols):
        out.append(None if name is None else cached_protocol(name, items).parse(completion_text(c)))
    return out


def column(kwargs: dict[str, Any], name: str, n: int, reward: str) -> list[Any]:
    """The dataset column ``name`` from a reward call's kwargs, checked to have ``n`` entries.

    Raises:
        KeyError: the column is missing (names the reward and the column to add to the dataset).
        ValueError: wrong length.
    """
    if name not in kwargs or kwargs[name] is None:
        raise KeyError(f"{reward} needs the dataset column {name!r} (one value per completion)")
    values = list(kwargs[name])
    if len(values) != n:
        raise ValueError(f"{reward}: column {name!r} has {len(values)} values for {n} completions")
    return values


def protocol_column(kwargs: dict[str, Any], n: int, default: str | None) -> list[str | None]:
    """Per-row protocol names: the ``protocol`` column when present, else ``default`` for all rows."""
    if kwargs.get("protocol") is not None:
        return list(kwargs["protocol"])
    if default is None:
        raise KeyError("no protocol given: pass protocol= to the reward factory or add a 'protocol' column")
    return [default] * n


def partner_index(keys: Sequence[Hashable], partner_key: Callable[[Hashable], Hashable]) -> list[int | None]:
    """For each row, the index of its partner row in the same batch.

    The k-th occurrence of key ``x`` is partnered with the k-th occurrence of ``partner_key(x)``
    (with ``num_generations`` samples per prompt, sample k of order AB is paired with sample k of
    order BA). Rows whose key is None, or whose partner is absent, get None.
    """
    seen: dict[Hashable, int] = {}
    occurrence: list[int] = []
    positions: dict[tuple[Hashable, int], int] = {}
    for i, k in enumerate(keys):
        j = seen.get(k, 0)
        seen[k] = j + 1
        occurrence.append(j)
        positions[(k, j)] = i
    out: list[int | None] = []
    for i, k in enumerate(keys):
        if k is None:
            out.append(None)
            continue
        out.append(positions.get((partner_key(k), occurrence[i])))
    return out


def log(kwargs: dict[str, Any], name: str, values: Sequence[float]) -> None:
    """Log the mean of ``values`` as metric ``name`` through TRL's ``log_metric`` hook, if given."""
    fn = kwargs.get("log_metric")
    if fn is not None and len(values) > 0:
        fn(name, float(sum(values)) / len(values))


def _kind(name: str | None) -> str | None:
    return None if name is None else cached_protocol(name).kind


RewardFn = Callable[..., list[float | None]]


def get_verdict_reward(protocol: str | None = "pav") -> RewardFn:
    """J1 verdict reward: 1.0 if the judge's final verdict equals the gold verdict, else 0.0.

    Pairwise rows only (PaV, PaS, PaVS: for score protocols the verdict is the argmax the parser
    derives; a tie is wrong). An invalid (unparseable) judgment scores 0.0 and is counted in the
    logged ``judge/valid_format`` rate. Non-pairwise rows and rows with ``label=None`` get None.

    Columns: ``label`` ("A"/"B", gold for the shown order), optional ``protocol``.
    Logs: ``judge/pairwise_accuracy``, ``judge/pairwise_valid_format``.

    Raises (when called):
        KeyError: the ``label`` column is missing.
    """

    def verdict_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        labels = column(kwargs, "label", n, "verdict_reward")
        names = protocol_column(kwargs, n, protocol)
        names = [p if _kind(p) == "pairwise" and lab is not None else None for p, lab in zip(names, labels)]
        decisions = parse_all(completions, names)
        out: list[float | None] = []
        for d, lab in zip(decisions, labels):
            out.append(None if d is None else float(d.valid and d.verdict == lab))
        scored = [i for i, d in enumerate(decisions) if d is not None]
        log(kwargs, "judge/pairwise_accuracy", [out[i] for i in scored])  # type: ignore[misc]
        log(kwargs, "judge/pairwise_valid_format", [float(decisions[i].valid) for i in scored])  # type: ignore[union-attr]
        return out

    return verdict_reward


def get_consistency_reward(protocol: str | None = "pav") -> RewardFn:
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

    def consistency_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        labels = column(kwargs, "label", n, "consistency_reward")
        pair_ids = column(kwargs, "pair_id", n, "consistency_reward")
        orders = column(kwargs, "order", n, "consistency_reward")
        names = protocol_column(kwargs, n, protocol)
        names = [p if _kind(p) == "pairwise" and lab is not None else None for p, lab in zip(names, labels)]
        decisions = parse_all(completions, names)
        correct = [d is not None and d.valid and d.verdict == lab for d, lab in zip(decisions, labels)]
        keys = [None if names[i] is None else (pair_ids[i], int(orders[i])) for i in range(n)]
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


def get_pointwise_pair_reward(protocol: str | None = "pos", **protocol_kwargs: Any) -> RewardFn:
    """J1 pointwise-from-pairwise reward: 1.0 iff score(chosen) > score(rejected), else 0.0.

    Each pair is split into two pointwise rows (``role="chosen"`` / ``role="rejected"``, same
    ``pair_id``) scored in the same batch; sample k of the chosen row is paired with sample k of
    the rejected row and both get ``1[s_chosen > s_rejected]`` (0 when either is invalid; a tie is
    0). Non-pointwise rows get None.

    Args:
        protocol: Default protocol name (overridden per row by a ``protocol`` column).
        **protocol_kwargs: Passed to ``get_protocol`` (e.g. ``min_score=0, max_score=10``).

    Columns: ``pair_id``, ``role``, optional ``protocol``.
    Logs: ``judge/pointwise_pair_accuracy``, ``judge/pointwise_valid_format``, ``judge/pointwise_tie_rate``.

    Raises (when called):
        KeyError: a needed column is missing.
        ValueError: a row's partner (other role) is not in the same batch, or ``role`` is not
            "chosen"/"rejected".
    """

    def pointwise_pair_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        pair_ids = column(kwargs, "pair_id", n, "pointwise_pair_reward")
        roles = column(kwargs, "role", n, "pointwise_pair_reward")
        names = protocol_column(kwargs, n, protocol)
        names = [p if _kind(p) == "pointwise" else None for p in names]
        for i, (name, r) in enumerate(zip(names, roles)):
            if name is not None and r not in ("chosen", "rejected"):
                raise ValueError(f"pointwise_pair_reward: row {i} has role {r!r}; expected 'chosen' or 'rejected'")
        decisions = parse_all(completions, names, protocol_kwargs)
        keys = [None if names[i] is None else (pair_ids[i], roles[i]) for i in range(n)]
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


def get_format_reward(protocol: str | None = None, **protocol_kwargs: Any) -> RewardFn:
    """Format reward: 1.0 when the row's protocol parses the completion into a valid Decision, else 0.0.

    A shaping term for the first RL steps of small models (the answer tags must be emitted before
    the correctness rewards can separate outputs). Applies to every row.

    Columns: optional ``protocol`` (else the factory's ``protocol``, which is then required).
    Logs: ``judge/valid_format``.
    """

    def format_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        names = protocol_column(kwargs, len(completions), protocol)
        decisions = parse_all(completions, names, protocol_kwargs)
        out: list[float | None] = [None if d is None else float(d.valid) for d in decisions]
        log(kwargs, "judge/valid_format", [v for v in out if v is not None])
        return out

    return format_reward


__all__ = [
    "completion_text",
    "get_consistency_reward",
    "get_format_reward",
    "get_pointwise_pair_reward",
    "get_verdict_reward",
    "parse_all",
]
