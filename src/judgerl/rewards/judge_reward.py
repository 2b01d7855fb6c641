"""A judge as a TRL reward function: in process (any pointwise scorer) or through a reward server.

The judge-as-reward setting ("Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM Post-Training", 2025): the policy's reward is a pointwise
judge's score normalised to [0, 1], ``(s - lo) / (hi - lo)`` on the judge's scale [lo, hi] -- by
default the *expected* score Σ s·p(s) / Σ p(s) (:mod:`judgerl.judge.expected`). Two sources, one reward:

* :func:`get_judge_reward` -- in process, on a :class:`~judgerl.judge.scorer.PointwiseScorer` (e.g.
  ``load_scorer("smollm2-135m", mode="expected")``); empty responses and master keys
  (:mod:`judgerl.rewards.guards`) get the invalid reward without a judge call, as on the server;
* :func:`judgerl.serve.client.remote_reward` -- through ``judgerl serve`` (the judge on its own
  server, as the paper runs it), with retries long enough for a server restart.

Integrity: an item the judge *failed to judge* (a generation error; a server that went away) is
judged again, up to ``retry_failed`` rounds, and then fails the call with an error: no training step
silently gets zero rewards. Items the judge judged but could not score (unparseable output) get
``invalid_reward`` (or None with ``invalid_as_none``) and are counted.

Every call leaves its facts in :attr:`JudgeReward.last` (:class:`RewardBatch`: scores on the judge's
scale, validity, the score mode actually used), which the policy trainer's monitor reads, and logs
``judge/valid_rate`` and ``judge/score_mean`` through TRL's ``log_metric`` hook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from judgerl.rewards._columns import completion_text, log, prompt_text
from judgerl.rewards.guards import DEFAULT_MASTER_KEYS, guard_reason, invalid_item_reward, policy_fault


class RewardFailure(RuntimeError):
    """The judge could not judge some items after the allowed retries (no reward is made up)."""


@dataclass
class RewardBatch:
    """What one reward call learned from the judge.

    Attributes:
        rewards: Per item, in [0, 1] (``invalid_reward`` where invalid).
        valid: Per item.
        scores: Per item, on the judge's scale (None where invalid).
        reasons: Per item invalid reason or None (``guard:empty``, a parse failure, ...).
        mode: Score mode used (``parsed``, ``mean``, ``expected``, ``programmatic``).
        note: Why ``mode`` differs from the one asked for (the backend has no logprobs), else None.
        verdicts: Per item, the judge's decision in words (``"score 7"``, ``"win"``, ``"invalid: ..."``) or None.
        reasoning: Per item, the judge's output text or None.
    """

    rewards: list[float]
    valid: list[bool]
    scores: list[float | None]
    reasons: list[str | None] = field(default_factory=list)
    mode: str = "parsed"
    note: str | None = None
    verdicts: list[str | None] = field(default_factory=list)
    reasoning: list[str | None] = field(default_factory=list)


Fetch = Callable[[list[str], list[str], dict[str, Any]], RewardBatch]


class JudgeReward:
    """TRL reward function ``fn(completions, prompts=None, **columns) -> list[float | None]``.

    Args:
        fetch: ``f(prompts, responses, columns) -> RewardBatch`` (see the factories).
        invalid_as_none: Return None for invalid items (TRL then ignores this reward for them) instead of
            the batch's invalid reward.
        name: ``__name__`` (TRL logs rewards under it).

    Attributes:
        last: The :class:`RewardBatch` of the latest call (None before the first).

    Raises (when called):
        ValueError: no ``prompts``; RewardFailure / JudgeClientError: items the judge failed to judge.
    """

    def __init__(self, fetch: Fetch, *, invalid_as_none: bool = False, name: str = "judge_reward") -> None:
        self._fetch = fetch
        self.invalid_as_none = invalid_as_none
        self.__name__ = name
        self.__qualname__ = name
        self.last: RewardBatch | None = None

    def score_texts(self, prompts: Sequence[str], responses: Sequence[str]) -> RewardBatch:
        """Judge plain-text (prompt, response) pairs outside training (e.g. held-out evaluation); does not
        touch :attr:`last`."""
        return self._fetch(list(prompts), list(responses), {})

    def __call__(self, completions: Sequence[Any], prompts: Sequence[Any] | None = None,
                 **kwargs: Any) -> list[float | None]:
        if prompts is None:
            raise ValueError(f"{self.__name__} needs the prompts (TRL passes them as prompts=...)")
        if len(prompts) != len(completions):
            raise ValueError(f"{self.__name__}: {len(prompts)} prompts for {len(completions)} completions")
        batch = self._fetch([prompt_text(p) for p in prompts], [completion_text(c) for c in completions], kwargs)
        self.last = batch
        log(kwargs, "judge/valid_rate", [float(v) for v in batch.valid])
        log(kwargs, "judge/score_mean", [s for s in batch.scores if s is not None])
        n = len(completions)
        reasons = batch.reasons or [None] * n
        log_extra = kwargs.get("log_extra")  # TRL's completions table (GRPOTrainer passes it to reward functions)
        if callable(log_extra):
            verdicts = batch.verdicts or [None] * n
            log_extra("judge_verdict", [v or ("valid" if ok else f"invalid: {r}")
                                        for v, ok, r in zip(verdicts, batch.valid, reasons)])
            log_extra("judge_reasoning", list(batch.reasoning) if batch.reasoning else [None] * n)
        if self.invalid_as_none:  # a fault the policy caused on purpose is never neutral
            return [r if ok or policy_fault(why) else None for r, ok, why in zip(batch.rewards, batch.valid, reasons)]
        return [float(r) for r in batch.rewards]


def get_judge_reward(scorer: Any, *, invalid_reward: float = 0.0, invalid_as_none: bool = False,
                     guard_empty: bool = True, master_keys: tuple[str, ...] = DEFAULT_MASTER_KEYS,
                     retry_failed: int = 2, name: str = "judge_reward",
                     rubrics: Mapping[str, str] | None = None) -> JudgeReward:
    """An in-process judge reward on a :class:`~judgerl.judge.scorer.PointwiseScorer`.

    Reward = ``(score - lo) / (hi - lo)`` clipped to [0, 1] on the scorer's scale; invalid ->
    ``invalid_reward``. Seeds come from the texts (a scorer's ``ScoreItem`` key is left empty), so a
    repeated (prompt, response) gets the same judgment.

    Args:
        scorer: E.g. ``load_scorer("smollm2-135m", scale=(0, 9), mode="expected")``.
        invalid_reward: Reward of an invalid item.
        invalid_as_none, name: See :class:`JudgeReward`.
        guard_empty, master_keys: Responses that get ``invalid_reward`` without a judge call.
        retry_failed: Rounds of re-scoring items whose generation failed (retryable); then RewardFailure.
        rubrics: Prompt text -> its rubric, shown to the judge with every response to that prompt
            (rubric-conditioned judging; prompts not in it are judged without one).
    """
    from judgerl.judge.scorer import ScoreItem

    lo, hi = float(scorer.scale[0]), float(scorer.scale[1])

    def fetch(prompts: list[str], responses: list[str], columns: dict[str, Any]) -> RewardBatch:
        n = len(responses)
        reasons: list[str | None] = [guard_reason(r, guard_empty, master_keys, p)
                                           for p, r in zip(prompts, responses)]
        scores: list[float | None] = [None] * n
        todo = [i for i in range(n) if reasons[i] is None]
        for round_ in range(retry_failed + 1):
            if not todo:
                break
            out = scorer.score_batch([ScoreItem(prompts[i], responses[i], rubric=rubric_of(rubrics, prompts[i]))
                                      for i in todo])
            again = []
            for i, s in zip(todo, out):
                if s.retryable and not s.valid:
                    again.append(i)
                scores[i], reasons[i] = s.score, (None if s.valid else str(s.invalid_reason))
            if again and round_ == retry_failed:
                raise RewardFailure(f"{name}: {len(again)} of {n} items could not be judged after {retry_failed} "
                                    "retries (generation failed); refusing to give them a reward")
            todo = again
        valid = [s is not None for s in scores]
        rewards = [min(1.0, max(0.0, (s - lo) / (hi - lo))) if s is not None else invalid_item_reward(r, invalid_reward)
                   for s, r in zip(scores, reasons)]
        return RewardBatch(rewards, valid, scores, reasons, scorer.mode, scorer.fallback_reason)

    return JudgeReward(fetch, invalid_as_none=invalid_as_none, name=name)


def rubric_of(rubrics: Mapping[str, str] | None, prompt: str) -> str | None:
    """The rubric of ``prompt`` in ``rubrics`` (exact text, then whitespace-normalised), or None."""
    if not rubrics:
        return None
    found = rubrics.get(prompt)
    if found is None:
        found = rubrics.get(" ".join(prompt.split()))
    return found


def server_fetch(client: Any, *, reference_column: str | None = None, score_mode: str | None = None,
                 retry_failed: int = 2, rubrics: Mapping[str, str] | None = None) -> Fetch:
    """The :data:`Fetch` of a reward server (``JudgeClient.rewards`` with item retries; ``rubrics``: prompt
    text -> rubric, sent with each item)."""

    def fetch(prompts: list[str], responses: list[str], columns: dict[str, Any]) -> RewardBatch:
        refs = None
        if reference_column is not None:
            if reference_column not in columns:
                raise KeyError(f"reference column {reference_column!r} not in the batch; columns: {sorted(columns)}")
            refs = [completion_text(r) if r is not None else None for r in columns[reference_column]]
        item_rubrics = [rubric_of(rubrics, p) for p in prompts] if rubrics else None
        out = client.rewards(prompts, responses, refs, score_mode=score_mode, retry_failed=retry_failed,
                             **({"rubrics": item_rubrics} if item_rubrics else {}))
        return RewardBatch([float(r) for r in out["rewards"]], list(out["valid"]), list(out["scores"]),
                           list(out.get("reasons") or [None] * len(responses)),
                           str(out.get("score_mode", "verdict")), out.get("score_mode_note"),
                           list(out.get("verdicts") or []), list(out.get("reasoning") or []))

    return fetch


__all__ = ["JudgeReward", "RewardBatch", "RewardFailure", "get_judge_reward", "rubric_of", "server_fetch"]
