"""The TIR-Judge reward, with TRL's reward-function signature.

TIR-Judge (Xu et al., 2025, "Incentivizing Agentic Reasoning in LLM Judges via Tool-Integrated
Reinforcement Learning", Sec. 3, reward design) scores one judge trajectory with

    R = Rc × (0.1 + 0.9 · 1[Rt ∧ Rf])

* **Rc** (correctness) -- 1 when the parsed prediction matches the gold label, else 0:
  pairwise verdict == gold ``"A"``/``"B"``; pointwise ``|score - gold| <= score_tolerance``;
  listwise best index == gold (0-based int) or ranking == gold (a 0-based sequence).
* **Rf** (format) -- 1 when the output parses with the protocol (required tags present and well
  formed: :meth:`JudgeProtocol.parse` is valid); for safety / general-chat items (``category`` in
  ``no_tool_categories``) only when NO tool was used.
* **Rt** (tool use) -- 1 when every executed code block ran without error and there were at most
  ``max_tool_calls`` (3) calls. The number of calls is the larger of the executed calls of the
  trajectory and the closed ```` ```python ```` blocks in the text, so a block written after the
  budget was spent (not executed) still counts as an over-budget call.

The decision is read the way the :class:`~judgerl.judge.Judge` reads it
(:func:`judgerl.judge.decision.read_decision`) against the row's ``responses`` column: a verdict copied
from a response is invalid (Rc = Rf = 0).

Tool statistics come from the ``trajectories`` keyword (one :class:`~judgerl.types.Trajectory` or
its ``to_dict()`` per completion, e.g. returned by a TRL ``rollout_func``) when given; otherwise
they are read from the text: python blocks are calls, and an ```` ```output ```` block whose last
line looks like a Python error (``NameError: …``, the tool loop's error format) is an error.

TRL usage::

    reward = get_tir_reward("pav")
    trainer = GRPOTrainer(..., reward_funcs=[reward])   # dataset columns: label, category

Every reward function returns one float per completion, or None for a row without a gold label
(TRL then ignores it for that row).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from judgerl.protocols import JudgeProtocol, get_protocol
from judgerl.text.codeblocks import (
    MAX_TOOL_ROUNDS,
    blank_executed_blocks,
    count_python_blocks,
    looks_like_error,
    output_blocks,
)
from judgerl.judge.decision import observations_of, read_decision
from judgerl.rewards._columns import check_response_count, column, completion_text, row_responses
from judgerl.types import Decision, Trajectory

#: Categories whose items must be judged without tools (TIR-Judge: safety and general chat).
NO_TOOL_CATEGORIES: frozenset[str] = frozenset({"safety", "chat", "general_chat", "general-chat"})
#: Most tool calls allowed by Rt (TIR-Judge: 3).
MAX_TOOL_CALLS = MAX_TOOL_ROUNDS  #: kept under the TIR-Judge paper's name

RewardFn = Callable[..., list[float | None]]


def tir_reward_value(rc: float, rf: float, rt: float) -> float:
    """R = Rc × (0.1 + 0.9 · 1[Rt ∧ Rf]) (TIR-Judge, Sec. 3). Inputs are 0/1; result in {0, 0.1, 1}."""
    return float(rc) * (0.1 + 0.9 * float(bool(rt) and bool(rf)))


def rc_component(
    decision: Decision,
    gold: Any,
    kind: str,
    *,
    score_tolerance: float = 0.0,
) -> float:
    """Correctness Rc in {0, 1}: the parsed prediction matches ``gold``.

    Args:
        decision: The parsed judge output (invalid -> 0).
        gold: pairwise: ``"A"`` / ``"B"`` (case-insensitive); pointwise: the gold score (number);
            listwise: the 0-based index of the best response (int), or the full 0-based ranking
            (sequence of ints, best first).
        kind: ``"pairwise"``, ``"pointwise"`` or ``"listwise"`` (a protocol's ``.kind``).
        score_tolerance: pointwise only: largest ``|score - gold|`` counted as correct.

    Raises:
        ValueError: ``gold`` does not fit ``kind`` (the message shows the value), or unknown kind.
    """
    if kind == "pairwise":
        if not isinstance(gold, str) or gold.strip().upper() not in ("A", "B"):
            raise ValueError(f"pairwise gold label must be 'A' or 'B', got {gold!r}")
        return float(decision.valid and decision.verdict == gold.strip().upper())
    if kind == "pointwise":
        if isinstance(gold, bool) or not isinstance(gold, (int, float)):
            raise ValueError(f"pointwise gold must be a number (the gold score), got {gold!r}")
        if not decision.valid or not decision.scores:
            return 0.0
        return float(abs(decision.scores[0] - float(gold)) <= score_tolerance)
    if kind == "listwise":
        if not decision.valid or not decision.ranking:
            return 0.0
        if isinstance(gold, int) and not isinstance(gold, bool):
            return float(decision.ranking[0] == gold)
        if isinstance(gold, Sequence) and not isinstance(gold, str) and all(
            isinstance(g, int) and not isinstance(g, bool) for g in gold
        ):
            return float(tuple(decision.ranking) == tuple(gold))
        raise ValueError(f"listwise gold must be a 0-based int or a ranking of ints, got {gold!r}")
    raise ValueError(f"unknown protocol kind {kind!r}; expected pairwise, pointwise or listwise")


def rf_component(
    decision: Decision,
    tool_calls: int,
    category: str | None = None,
    *,
    no_tool_categories: Iterable[str] = NO_TOOL_CATEGORIES,
) -> float:
    """Format Rf in {0, 1}: the output parsed, and no tool was used on a no-tool category item."""
    if not decision.valid:
        return 0.0
    if category is not None and category.strip().lower() in {c.lower() for c in no_tool_categories}:
        return float(tool_calls == 0)
    return 1.0


def rt_component(tool_calls: int, tool_errors: int, *, max_tool_calls: int = MAX_TOOL_CALLS) -> float:
    """Tool quality Rt in {0, 1}: no failed execution and at most ``max_tool_calls`` calls."""
    return float(tool_errors == 0 and tool_calls <= max_tool_calls)


def tool_stats(text: str, trajectory: Trajectory | Mapping[str, Any] | None = None) -> tuple[int, int]:
    """(tool calls, tool errors) of a judgment; see the module docstring for the rules."""
    blocks = count_python_blocks(text)
    if trajectory is None:
        return blocks, sum(looks_like_error(o) for o in output_blocks(text))
    if isinstance(trajectory, Trajectory):
        calls, errors = trajectory.tool_calls, trajectory.tool_errors
    elif isinstance(trajectory, Mapping):
        calls, errors = int(trajectory.get("tool_calls", 0)), int(trajectory.get("tool_errors", 0))
    else:
        raise TypeError(f"trajectory must be a Trajectory or its dict, got {type(trajectory).__name__}")
    return max(calls, blocks), errors


@dataclass(frozen=True)
class TIRScore:
    """All parts of one TIR-Judge reward (for logging and analysis).

    Attributes:
        reward: R = Rc × (0.1 + 0.9 · 1[Rt ∧ Rf]).
        rc, rf, rt: The components, each 0.0 or 1.0.
        tool_calls, tool_errors: As counted for Rt.
        decision: The parsed judge output.
    """

    reward: float
    rc: float
    rf: float
    rt: float
    tool_calls: int
    tool_errors: int
    decision: Decision


def score_tir(
    text: str,
    gold: Any,
    protocol: JudgeProtocol,
    *,
    category: str | None = None,
    trajectory: Trajectory | Mapping[str, Any] | None = None,
    n_responses: int | None = None,
    responses: Sequence[str] = (),
    max_tool_calls: int = MAX_TOOL_CALLS,
    no_tool_categories: Iterable[str] = NO_TOOL_CATEGORIES,
    score_tolerance: float = 0.0,
) -> TIRScore:
    """Score one judge output with the TIR-Judge reward (see :func:`rc_component` for ``gold``).

    With a ``trajectory`` that records its segments (the rollout's record, the source of truth for
    ``text``) the decision is
    read from :meth:`~judgerl.types.Trajectory.parse_text` (executed code and interpreter output
    blanked by their recorded offsets) -- the same text the :class:`~judgerl.judge.Judge` parses --
    so nothing the code under judgment printed, and no fence inside executed code, can become the
    rewarded verdict. Without one, the raw ``text`` is read with its python and output blocks
    blanked as the tool loop finds them (:func:`judgerl.text.codeblocks.blank_executed_blocks`: line
    fences, so a fence inside a string literal of the code does not end the block). Either way the
    decision is :func:`judgerl.judge.decision.read_decision`'s against ``responses`` (the texts under
    judgment; empty: no quoted-answer check) and the tool output (an answer copied from what the
    code printed is void).

    Raises:
        ValueError: ``gold`` does not fit the protocol kind, or a malformed trajectory dict.
    """
    traj = Trajectory.from_dict(trajectory) if isinstance(trajectory, Mapping) else trajectory
    if traj is not None and traj.segments:
        parse_text, observations = traj.parse_text(), observations_of(traj)
    else:
        parse_text, observations = blank_executed_blocks(text), tuple(output_blocks(text))
    decision = read_decision(protocol, parse_text, tuple(responses), n_responses, observations=observations)
    calls, errors = tool_stats(text, trajectory)
    rc = rc_component(decision, gold, protocol.kind, score_tolerance=score_tolerance)
    rf = rf_component(decision, calls, category, no_tool_categories=no_tool_categories)
    rt = rt_component(calls, errors, max_tool_calls=max_tool_calls)
    return TIRScore(tir_reward_value(rc, rf, rt), rc, rf, rt, calls, errors, decision)


def _scores_for_batch(
    proto: JudgeProtocol, completions: Sequence[Any], kwargs: Mapping[str, Any], options: Mapping[str, Any]
) -> list[TIRScore | None]:
    n = len(completions)
    labels = column(kwargs, "label", n, "tir_reward", required=False)
    golds = column(kwargs, "gold", n, "tir_reward", required=False)
    gold_scores = column(kwargs, "gold_score", n, "tir_reward", required=False)  # pointwise TIR rows
    categories = column(kwargs, "category", n, "tir_reward", required=False)
    trajectories = column(kwargs, "trajectories", n, "tir_reward", required=False)
    n_resp = column(kwargs, "n_responses", n, "tir_reward", required=False)
    responses = row_responses(kwargs, n, "tir_reward")
    out: list[TIRScore | None] = []
    for i, completion in enumerate(completions):
        gold = labels[i] if labels[i] is not None else golds[i] if golds[i] is not None else gold_scores[i]
        if gold is None:
            out.append(None)
            continue
        check_response_count(proto, responses[i], i, "tir_reward", n_resp[i])
        try:
            out.append(score_tir(
                completion_text(completion), gold, proto,
                category=categories[i], trajectory=trajectories[i], n_responses=n_resp[i],
                responses=responses[i], **options,
            ))
        except ValueError as e:
            raise ValueError(f"TIR reward, row {i}: {e}") from e
    return out


def _resolve(protocol: JudgeProtocol | str) -> JudgeProtocol:
    return get_protocol(protocol) if isinstance(protocol, str) else protocol


def get_tir_reward(
    protocol: JudgeProtocol | str,
    *,
    max_tool_calls: int = MAX_TOOL_CALLS,
    no_tool_categories: Iterable[str] = NO_TOOL_CATEGORIES,
    score_tolerance: float = 0.0,
) -> RewardFn:
    """A TRL reward function computing R = Rc × (0.1 + 0.9 · 1[Rt ∧ Rf]) (TIR-Judge, Sec. 3).

    Args:
        protocol: The judge protocol (or its name for :func:`judgerl.protocols.get_protocol`)
            used to parse the completions.
        max_tool_calls: Most tool calls allowed by Rt.
        no_tool_categories: ``category`` values whose items must be judged without tools (Rf).
        score_tolerance: Pointwise Rc: largest ``|score - gold|`` counted as correct.

    Returns:
        ``tir_reward(completions, **kwargs) -> list[float | None]``. Reads the columns ``label``
        (or ``gold``, or -- pointwise rows of :func:`judgerl.train.datasets.build_rows` -- ``gold_score``), optional ``category``, ``trajectories``, ``n_responses`` and ``responses`` from kwargs,
        each a list aligned with ``completions``; other kwargs (``prompts``, ``trainer_state`` …)
        are ignored. A row whose label is None gets None.

    Raises:
        ValueError: (from the returned function) a column of the wrong length or a gold label that
            does not fit the protocol; the message names the row.
    """
    proto = _resolve(protocol)
    options = dict(max_tool_calls=max_tool_calls, no_tool_categories=frozenset(no_tool_categories),
                   score_tolerance=score_tolerance)

    def tir_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        return [None if s is None else s.reward for s in _scores_for_batch(proto, completions, kwargs, options)]

    tir_reward.__name__ = "tir_reward"
    return tir_reward


def get_tir_reward_components(
    protocol: JudgeProtocol | str,
    *,
    max_tool_calls: int = MAX_TOOL_CALLS,
    no_tool_categories: Iterable[str] = NO_TOOL_CATEGORIES,
    score_tolerance: float = 0.0,
) -> dict[str, RewardFn]:
    """TRL reward functions for the components, for logging (e.g. with weight 0 in GRPO).

    Returns:
        ``{"tir_correctness": Rc, "tir_format": Rf, "tir_tool": Rt}``, each with the same
        signature and columns as :func:`get_tir_reward`'s function (and ``__name__`` set to its
        key, which TRL uses as the logged metric name).
    """
    proto = _resolve(protocol)
    options = dict(max_tool_calls=max_tool_calls, no_tool_categories=frozenset(no_tool_categories),
                   score_tolerance=score_tolerance)

    def make(name: str, attr: str) -> RewardFn:
        def component(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
            scores = _scores_for_batch(proto, completions, kwargs, options)
            return [None if s is None else getattr(s, attr) for s in scores]

        component.__name__ = name
        return component

    return {
        "tir_correctness": make("tir_correctness", "rc"),
        "tir_format": make("tir_format", "rf"),
        "tir_tool": make("tir_tool", "rt"),
    }


__all__ = [
    "MAX_TOOL_CALLS",
    "NO_TOOL_CATEGORIES",
    "TIRScore",
    "completion_text",
    "get_tir_reward",
    "get_tir_reward_components",
    "rc_component",
    "rf_component",
    "rt_component",
    "score_tir",
    "tir_reward_value",
    "tool_stats",
]
