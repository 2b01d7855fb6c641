"""The reward server's logic on a :class:`~judgerl.judge.Judge`, independent of HTTP.

Every endpoint turns its items into judge inputs, expands them into ``samples`` judge requests,
runs them through the micro-batcher on ``judge.run`` (so tool use, answer forcing and every
protocol come for free, listwise included) and combines the samples with the same voting rules as
evaluation (:mod:`judgerl.judge.aggregate`).

Reward integrity:

* **guards**: an empty or whitespace-only response, or a *master key* (a one-token response such as
  ``":"`` or ``"Thought process:"`` that fools LLM judges; Zhao et al. 2025, "One Token to Fool
  LLM-as-a-Judge"), gets the invalid reward without a judge call; counted per reason;
* **both orders**: a pairwise reward judged in both orders is valid only when both orders are;
* **per-item failures**: a generation failure or a prompt that does not fit the context fails
  only its own item (reported per item, counted), never the request or the batch;
* **dropped clients**: items of a client that disconnected are not generated;
* **retries**: a request retried with the same request id is answered from the first attempt
  (in flight or finished within ``dedup_ttl_s``), never generated twice.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Awaitable, Callable, Sequence

from judgerl.judge.aggregate import aggregate_decisions
from judgerl.backends.base import reporting_progress
from judgerl.judge.expected import SCORE_MODES
from judgerl.judge.core import Judge, JudgeInput, JudgeRequest, Judgment
from judgerl.judge.progress import ThroughputLog
from judgerl.rewards.guards import DEFAULT_MASTER_KEYS, guard_reason, invalid_item_reward
from judgerl.serve.batcher import ClientGone, GoneCheck, MicroBatcher, ServerBusy
from judgerl.serve.dedup import RequestDedup, content_key
from judgerl.serve.errors import ApiError
from judgerl.serve.score_modes import ScoreMode, ScoreModes, normalise, raw_field
from judgerl.serve.chat_markup import DEFAULT_STRIP_TOKENS, KNOWN_MARKUPS, ChatMarkup
from judgerl.types import Decision


#: Seconds between the server's "generating: N tokens/s ..., queue Q" log lines.
PROGRESS_LOG_INTERVAL_S = 30.0


@dataclass(frozen=True)
class ServeConfig:
    """Server limits and reward policy.

    Attributes:
        max_batch_size: Most judge samples per ``judge.run`` call.
        max_wait_ms: How long (ms) the first sample of a batch waits for more.
        max_pending: Most samples queued; beyond it requests get 503.
        max_body_bytes: Largest request body in bytes; larger -> 413.
        max_json_depth: Deepest JSON nesting accepted; deeper -> 400.
        max_items: Most items per request; more -> 413.
        max_text_chars: Longest prompt / response / reference in characters; longer -> 413.
        samples: Judgments sampled per item (test-time scaling; needs temperature > 0 to differ):
            majority vote / mean score / Borda, as in evaluation.
        invalid_reward: Reward given when no valid judgment exists (reported, counted).
        score_range: (min, max) of the pointwise score scale used to normalise rewards to [0, 1];
            None = the protocol's ``min_score`` / ``max_score``.
        pairwise_both_orders: For pairwise rewards, judge (response, reference) in both orders
            and average, cancelling position bias (J1); both orders must be valid.
        return_raw: Include the judge's raw output text in judge / score responses.
        strip_tokens: End-of-turn markers removed from OpenRLHF responses.
        chat_markups: The policy's chat markup, tried in order to find the instruction in OpenRLHF prompts
            (:mod:`judgerl.serve.chat_markup`; ``--policy-tokenizer`` puts the derived one first).
        guard_empty: Empty / whitespace-only responses get ``invalid_reward`` without a judge call.
        master_keys: Responses (compared case- and whitespace-insensitively) that get
            ``invalid_reward`` without a judge call; ``()`` disables the check.
        dedup_ttl_s: How long (seconds) a finished request's answer is kept for retries that
            carry the same request id.
        dedup_max: Most finished answers kept for retries; ``dedup_max_bytes`` bounds their JSON size.
        audit_flags: Flag each ``/v1/rewards`` response with the reward-hacking audit
            (:func:`judgerl.audit.flag_response` with its prompt): per-item ``flags`` in the answer,
            counts per kind in ``/health`` (``flag:<kind>``, ``flagged_responses``). Rewards are unchanged.
        score_mode: Pointwise scores: ``parsed``, ``mean`` or ``expected`` (None: ``mean`` with several
            samples, else ``parsed``); requests may choose their own. See :mod:`judgerl.serve.score_modes`.
    """

    max_batch_size: int = 32
    max_wait_ms: float = 10.0
    max_pending: int = 4096
    max_body_bytes: int = 4_000_000
    max_json_depth: int = 64
    max_items: int = 512
    max_text_chars: int = 100_000
    samples: int = 1
    invalid_reward: float = 0.0
    score_range: tuple[float, float] | None = None
    pairwise_both_orders: bool = False
    return_raw: bool = True
    strip_tokens: tuple[str, ...] = field(default_factory=lambda: DEFAULT_STRIP_TOKENS)
    chat_markups: tuple[ChatMarkup, ...] = field(default_factory=lambda: KNOWN_MARKUPS)
    guard_empty: bool = True
    master_keys: tuple[str, ...] = field(default_factory=lambda: DEFAULT_MASTER_KEYS)
    dedup_ttl_s: float = 600.0
    dedup_max: int = 10_000
    dedup_max_bytes: int = 64 * 2**20
    audit_flags: bool = True
    score_mode: str | None = None

    def __post_init__(self) -> None:
        if self.score_mode is not None and self.score_mode not in SCORE_MODES:
            raise ValueError(f"ServeConfig.score_mode must be one of {', '.join(SCORE_MODES)}, got {self.score_mode!r}")
        for name in ("max_batch_size", "max_pending", "max_body_bytes", "max_json_depth", "max_items",
                     "max_text_chars", "samples", "dedup_max", "dedup_max_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"ServeConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.max_wait_ms < 0:
            raise ValueError(f"ServeConfig.max_wait_ms must be >= 0, got {self.max_wait_ms}")
        if self.dedup_ttl_s < 0:
            raise ValueError(f"ServeConfig.dedup_ttl_s must be >= 0, got {self.dedup_ttl_s}")
        if not math.isfinite(self.invalid_reward):
            raise ValueError("ServeConfig.invalid_reward must be finite")
        if self.score_range is not None and not (
                all(math.isfinite(float(x)) for x in self.score_range) and self.score_range[0] < self.score_range[1]):
            raise ValueError(f"ServeConfig.score_range must be finite (min, max) with min < max, got {self.score_range}")


def decision_json(d: Decision) -> dict[str, Any]:
    """The decision fields of a judge response."""
    return {
        "verdict": d.verdict,
        "scores": list(d.scores) if d.scores is not None else None,
        "ranking": list(d.ranking) if d.ranking is not None else None,
        "valid": d.valid,
        "invalid_reason": d.invalid_reason,
    }


class JudgeService:
    """Protocol logic of the server: judge inputs -> micro-batched ``judge.run`` -> results, rewards.

    Args:
        judge: The :class:`~judgerl.judge.Judge` (any protocol; tools and forcing included).
        config: Limits and reward policy.

    Raises:
        ValueError: a pointwise protocol with no known score range.
    """

    def __init__(self, judge: Judge, config: ServeConfig) -> None:
        self.judge = judge
        self.protocol = judge.protocol
        self.config = config
        self.score_range: tuple[float, float] | None = config.score_range
        if self.score_range is None:
            self.score_range = self.protocol.score_scale
        if self.protocol.kind == "pointwise" and self.score_range is None:
            raise ValueError(f"protocol {self.protocol.name!r} has no score scale; pass ServeConfig.score_range")
        self.counts: Counter[str] = Counter()
        self.modes = ScoreModes(judge, config.samples, config.score_mode, self.score_range, config.return_raw,
                                self.counts)
        self.expected_why = self.modes.expected_why
        # uvicorn's server logger: the line appears next to uvicorn's own, at `judgerl serve --log-level`
        self.throughput = ThroughputLog(logging.getLogger("uvicorn.error"), PROGRESS_LOG_INTERVAL_S,
                                        queue=lambda: self.batcher.pending)
        self.batcher: MicroBatcher[JudgeRequest, Judgment] = MicroBatcher(
            self._run_batch, max_batch_size=config.max_batch_size, max_wait_ms=config.max_wait_ms,
            max_pending=config.max_pending,
        )
        self.dedup = RequestDedup(config.dedup_ttl_s, config.dedup_max, config.dedup_max_bytes, self.counts,
                                  lambda e: isinstance(e, ApiError) and e.status == 499)

    # -- generation -------------------------------------------------------------------------------

    def _run_batch(self, requests: list[JudgeRequest]) -> list[Judgment]:
        """``judge.run`` on one micro-batch (in the batcher's worker thread), its generation progress
        going to :attr:`throughput` (a log line with tokens/s and the queue every
        :data:`PROGRESS_LOG_INTERVAL_S` seconds while generating)."""
        with reporting_progress(self.throughput):
            return self.judge.run(requests)

    def _input(self, where: str, prompt: str, responses: Sequence[str], rubric: str | None = None) -> JudgeInput:
        """The judge input of one item (its ``rubric``, if any, goes into the judge prompt).

        Raises:
            ApiError: 422 when the protocol refuses the item (wrong number of responses).
        """
        try:
            self.judge.build(prompt, responses, rubric)  # validates the shape for this protocol
        except (TypeError, ValueError) as e:
            raise ApiError(422, f"{where}: {e}") from e
        return JudgeInput(prompt, tuple(responses), rubric=rubric)

    async def _judge(self, inputs: list[JudgeInput], gone: GoneCheck | None, samples: int | None = None,
                     at_fault: Sequence[Sequence[int]] | None = None,
                     ) -> list[tuple[Decision, list[Judgment], str | None]]:
        """``samples`` (default: the config's) judgments per input: (combined decision, samples, error) per input.
        ``at_fault``: per input, the responses under training a spoiled sample is blamed on
        (:func:`judgerl.judge.aggregate.against_spoilers`; None: the spoilers it names)."""
        k = samples or self.config.samples
        flat = await self._generate(self.judge.requests(inputs, k), gone)
        out = []
        for i in range(len(inputs)):
            group = flat[i * k : (i + 1) * k]
            failures = [g for g in group if isinstance(g, BaseException)]
            if failures:
                exc = failures[0]
                if isinstance(exc, ClientGone):
                    raise ApiError(499, "client disconnected")
                self.counts["item_errors"] += 1
                msg = f"generation failed: {type(exc).__name__}: {exc}"
                out.append((Decision.invalid("generation_failed"), [], msg))
                continue
            judgments: list[Judgment] = list(group)  # type: ignore[arg-type]
            errors = [j.error for j in judgments if j.error]
            decision = aggregate_decisions([j.decision for j in judgments], self.judge.kind,
                                           at_fault[i] if at_fault is not None else None)
            for j in judgments:
                if not j.decision.valid:
                    self.counts[f"invalid:{j.decision.invalid_reason}"] += 1
            out.append((decision, judgments, errors[0] if errors and not decision.valid else None))
        return out

    async def _generate(self, requests: list[JudgeRequest], gone: GoneCheck | None) -> list[Any]:
        """Run ``requests`` through the batcher (:meth:`RequestDedup.run_items`: inside a keyed request, what an
        earlier attempt finished is reused); a judgment or the exception it failed with, per request.

        Raises:
            ApiError: 503 when the queue is full.
        """
        try:
            return await self.dedup.run_items(
                requests, lambda r: content_key(r.messages, r.n_responses, r.seed, list(r.responses)),
                self.batcher.submit, gone, lambda r: isinstance(r, Judgment) and not r.retryable)
        except ServerBusy as e:
            raise ApiError(503, f"server busy: {e}") from e

    def _raw(self, judgments: list[Judgment]) -> dict[str, Any]:
        return raw_field(judgments, self.config.return_raw)

    def _result(self, decision: Decision, judgments: list[Judgment], error: str | None) -> dict[str, Any]:
        body = decision_json(decision) | self._raw(judgments)
        if error is not None:
            body["error"] = error
        return body

    # -- endpoints --------------------------------------------------------------------------------

    async def judge_pairs(self, items: Sequence[Any], gone: GoneCheck | None = None) -> list[dict[str, Any]]:
        """Judge each pair: ``{"verdict", "scores", "valid", "invalid_reason", "raw"[, "error"]}``.

        Pointwise protocols score both responses and compare (verdict ``"tie"`` on equal scores).

        Raises:
            ApiError: 400 for a listwise protocol (use :meth:`judge_listwise`).
        """
        self._check_items(items, ("prompt", "response_a", "response_b", "rubric"))
        kind = self.protocol.kind
        if kind == "listwise":
            raise ApiError(400, f"this server runs listwise protocol {self.protocol.name!r}: use /v1/judge/listwise")
        if kind == "pairwise":
            inputs = [self._input(f"items[{i}]", it.prompt, [it.response_a, it.response_b], it.rubric)
                      for i, it in enumerate(items)]
            return [self._result(*r) for r in await self._judge(inputs, gone)]
        inputs = []
        for i, it in enumerate(items):
            inputs += [self._input(f"items[{i}]", it.prompt, [it.response_a], it.rubric),
                       self._input(f"items[{i}]", it.prompt, [it.response_b], it.rubric)]
        judged = await self._judge(inputs, gone)
        results = []
        for i in range(len(items)):
            (a, ja, ea), (b, jb, eb) = judged[2 * i], judged[2 * i + 1]
            if a.valid and b.valid:
                sa, sb = a.scores[0], b.scores[0]  # type: ignore[index]
                verdict = "A" if sa > sb else "B" if sb > sa else "tie"
                d = Decision(valid=True, verdict=verdict, scores=(sa, sb))  # type: ignore[arg-type]
            else:
                bad = a if not a.valid else b
                d = Decision.invalid(f"{'A' if bad is a else 'B'}: {bad.invalid_reason}")
            body = decision_json(d)
            if self.config.return_raw:
                body["raw"] = [self._raw(ja).get("raw"), self._raw(jb).get("raw")]
            if ea or eb:
                body["error"] = ea or eb
            results.append(body)
        return results

    async def judge_listwise(self, items: Sequence[Any], gone: GoneCheck | None = None) -> list[dict[str, Any]]:
        """Rank each item's responses: ``{"ranking" (0-based, best first), "best", "valid", ...}``.

        Raises:
            ApiError: 400 unless the protocol is listwise; 422 for fewer than 2 responses.
        """
        if self.protocol.kind != "listwise":
            raise ApiError(400, f"/v1/judge/listwise needs a listwise protocol; this server runs {self.protocol.name!r}")
        self._check_items(items, ("prompt", "rubric"))
        for i, it in enumerate(items):
            for j, r in enumerate(it.responses):
                if len(r) > self.config.max_text_chars:
                    raise ApiError(413, f"items[{i}].responses[{j}] has {len(r)} characters; the limit is "
                                        f"{self.config.max_text_chars}")
        inputs = [self._input(f"items[{i}]", it.prompt, list(it.responses), it.rubric) for i, it in enumerate(items)]
        results = []
        for d, js, err in await self._judge(inputs, gone):
            body = self._result(d, js, err)
            body["best"] = d.ranking[0] if d.valid and d.ranking else None
            results.append(body)
        return results

    async def score(self, items: Sequence[Any], gone: GoneCheck | None = None,
                    score_mode: str | None = None) -> list[dict[str, Any]]:
        """Score each response: ``{"score", "normalized", "valid", "invalid_reason", "score_mode", "raw"}``
        (more fields: :mod:`judgerl.serve.score_modes`); guarded responses (empty, master keys) are invalid
        without a judge call (``invalid_reason`` ``guard:<kind>``).

        Raises:
            ApiError: 400 when the server's protocol is not pointwise.
        """
        if self.protocol.kind != "pointwise":
            raise ApiError(
                400,
                f"/v1/score needs a pointwise protocol; this server runs {self.protocol.name!r} "
                f"({self.protocol.kind}): use /v1/judge/{self.protocol.kind}, or /v1/rewards",
            )
        self._check_items(items, ("prompt", "response", "rubric"))
        mode = self.modes.resolve(score_mode)
        guarded = [self._guard(it.response, it.prompt) for it in items]
        todo = [i for i, g in enumerate(guarded) if g is None]
        inputs = [self._input(f"items[{i}]", items[i].prompt, [items[i].response], items[i].rubric) for i in todo]
        scored = dict(zip(todo, await self._pointwise(inputs, gone, mode))) if todo else {}
        return [self.modes.answer(guarded[i], scored.get(i), mode) for i in range(len(items))]

    async def _pointwise(self, inputs: list[JudgeInput], gone: GoneCheck | None, mode: ScoreMode) -> list[Any]:
        return await self.modes.scores(await self._judge(inputs, gone, mode.samples), mode)

    async def rewards(self, items: Sequence[Any], gone: GoneCheck | None = None,
                      score_mode: str | None = None) -> dict[str, Any]:
        """One reward in [0, 1] per item (``invalid_reward`` where no valid judgment exists).

        Pointwise protocol: the judge's score ``s`` on scale [lo, hi] becomes ``(s - lo) / (hi - lo)``
        (mean over ``samples``). Pairwise protocol: the response is judged against ``reference``
        (response shown as A): A wins -> 1, B wins -> 0, tie -> 0.5; with ``pairwise_both_orders``
        also as B, averaged, and valid only when both orders are valid. Guarded responses (empty,
        master keys) get ``invalid_reward`` without a judge call.

        Returns:
            ``{"rewards", "valid", "scores", "errors", "reasons", "n_invalid", "n_guarded", "invalid_reasons",
            "invalid_reward"}`` (pointwise: + ``score_mode``, :mod:`judgerl.serve.score_modes`); ``scores``: judge
            scores in that mode or None; ``errors`` / ``reasons``: per-item generation error / invalid reason or
            None (``generation_failed``: the server failed, a retry may succeed); ``verdicts``: per item
            ``"score 7"`` / ``"win"`` / ``"loss"`` / ``"tie"`` (``"win/loss"`` in both orders) / ``"invalid: <reason>"``
            (None when guarded); ``reasoning``: the judge's raw output (first sample; None without ``return_raw``).
            With ``ServeConfig.audit_flags`` (default): ``flags``, the reward-hacking kinds found in each
            item's response (:func:`judgerl.audit.flag_response`; e.g. ``["fake_end_marker"]``).

        Raises:
            ApiError: 422 when a pairwise server gets an item without ``reference``; 400 for a
                listwise protocol.
        """
        self._check_items(items, ("prompt", "response", "reference", "rubric"))
        cfg = self.config
        kind = self.protocol.kind
        if kind == "listwise":
            raise ApiError(400, f"this server runs listwise protocol {self.protocol.name!r}: use /v1/judge/listwise")
        if kind == "pairwise":
            missing = [i for i, it in enumerate(items) if it.reference is None]
            if missing:
                raise ApiError(422, f"items{missing[:10]}.reference is required: this server's protocol "
                                    f"{self.protocol.name!r} is pairwise and judges each response against a reference")
        mode = self.modes.resolve(score_mode) if (kind == "pointwise" or score_mode is not None) else None
        n = len(items)
        rewards: list[float] = [cfg.invalid_reward] * n
        valid, scores = [False] * n, [None] * n  # type: ignore[var-annotated]
        errors: list[str | None] = [None] * n
        verdicts: list[str | None] = [None] * n
        reasoning: list[str | None] = [None] * n
        reasons: Counter[str] = Counter()
        guarded = [self._guard(it.response, it.prompt) for it in items]
        todo = [i for i in range(n) if guarded[i] is None]
        orders = 2 if (kind == "pairwise" and cfg.pairwise_both_orders) else 1
        inputs, policy_at = [], []  # where the policy's response is: a spoiled sample votes against it, never the reference
        for i in todo:
            it = items[i]
            if kind == "pointwise":
                inputs.append(self._input(f"items[{i}]", it.prompt, [it.response], it.rubric))
                policy_at.append((0,))
            else:
                inputs.append(self._input(f"items[{i}]", it.prompt, [it.response, it.reference], it.rubric))
                policy_at.append((0,))
                if orders == 2:
                    inputs.append(self._input(f"items[{i}]", it.prompt, [it.reference, it.response], it.rubric))
                    policy_at.append((1,))
        item_reasons: list[str | None] = list(guarded)
        judged = ([(Decision(valid=True, scores=(s,)) if s is not None else Decision.invalid(str(r)), js, e)
                   for s, r, js, e, _ in await self._pointwise(inputs, gone, mode)] if mode is not None
                  else await self._judge(inputs, gone, at_fault=policy_at)) if inputs else []
        for pos, i in enumerate(todo):
            parts = judged[pos * orders : (pos + 1) * orders]
            errors[i] = next((e for _, _, e in parts if e), None)
            if cfg.return_raw and parts[0][1]:
                reasoning[i] = parts[0][1][0].text
            bad = [d for d, _, _ in parts if not d.valid]
            if bad:
                reasons[str(bad[0].invalid_reason)] += 1
                item_reasons[i] = str(bad[0].invalid_reason)
                verdicts[i] = f"invalid: {bad[0].invalid_reason}"
                rewards[i] = invalid_item_reward(item_reasons[i], cfg.invalid_reward)
                continue
            valid[i] = True
            if kind == "pointwise":
                s = parts[0][0].scores[0]  # type: ignore[index]
                scores[i] = s
                rewards[i] = normalise(s, self.score_range)
                verdicts[i] = f"score {s:g}"
            else:
                wins = [{"A": 1.0, "B": 0.0, "tie": 0.5}[str(d.verdict)] for d, _, _ in parts]
                rewards[i] = wins[0] if orders == 1 else (wins[0] + 1.0 - wins[1]) / 2
                mine = [wins[0]] + [1.0 - w for w in wins[1:]]  # from the response's side in each order
                verdicts[i] = "/".join({1.0: "win", 0.0: "loss", 0.5: "tie"}[w] for w in mine)
        for i, g in enumerate(guarded):
            if g is not None:
                rewards[i] = invalid_item_reward(g, cfg.invalid_reward)
                reasons[g] += 1
                self.counts[g] += 1
        n_invalid = valid.count(False)
        self.counts["invalid_judgments"] += n_invalid - sum(g is not None for g in guarded)
        audit = await self._flags(items)
        return {
            "rewards": rewards,
            "valid": valid,
            "scores": scores,
            "errors": errors,
            "reasons": item_reasons,
            "verdicts": verdicts,
            "reasoning": reasoning,
            "n_invalid": n_invalid,
            "n_guarded": sum(g is not None for g in guarded),
            "invalid_reasons": dict(reasons),
            "invalid_reward": cfg.invalid_reward,
        } | (mode.fields() if mode is not None else {}) | audit

    async def openrlhf(self, req: Any, gone: GoneCheck | None = None) -> dict[str, Any]:
        """OpenRLHF remote reward, item by item (:func:`judgerl.serve.compat.openrlhf_rewards`)."""
        from judgerl.serve.compat import openrlhf_rewards

        return await openrlhf_rewards(self, req, gone)

    # -- retries, guards, limits ----------------------------------------------------------------

    async def once(self, key: str | None, compute: Callable[[], Awaitable[Any]],
                   gone: GoneCheck | None = None) -> Any:
        """Run ``compute`` once per request key (:func:`judgerl.serve.dedup.request_key`; see
        :class:`~judgerl.serve.dedup.RequestDedup`); ``gone``: this client's disconnect check."""
        return await self.dedup.once(key, compute, gone)

    async def _flags(self, items: Sequence[Any]) -> dict[str, Any]:
        """``{"flags": [kinds found in each item's response]}`` (the reward-hacking audit, off the event
        loop), counted per kind; ``{}`` when ``ServeConfig.audit_flags`` is off."""
        if not self.config.audit_flags:
            return {}
        from judgerl.audit import flag_response

        flags = await asyncio.to_thread(lambda: [flag_response(it.response, it.prompt) for it in items])
        for f in flags:
            if f:
                self.counts["flagged_responses"] += 1
            for kind in f:
                self.counts[f"flag:{kind}"] += 1
        return {"flags": flags}

    def _guard(self, response: str, prompt: str | None = None) -> str | None:
        """The guard reason of ``response`` to ``prompt`` (its exemptions: "reply with only the colon")."""
        return guard_reason(response, self.config.guard_empty, self.config.master_keys, prompt)

    def _check_items(self, items: Sequence[Any], fields: tuple[str, ...]) -> None:
        cfg = self.config
        if len(items) > cfg.max_items:
            raise ApiError(413, f"{len(items)} items in one request; the limit is {cfg.max_items}")
        for i, it in enumerate(items):
            for f in fields:
                v = getattr(it, f, None)
                if v is not None and len(v) > cfg.max_text_chars:
                    raise ApiError(413, f"items[{i}].{f} has {len(v)} characters; the limit is {cfg.max_text_chars}")

    def health(self) -> dict[str, Any]:
        """Status, judge configuration, batching statistics and request / invalid / guard counters."""
        return {
            "status": "ok",
            "model": self.judge.backend.name,
            "protocol": self.protocol.name,
            "kind": self.protocol.kind,
            "judge": self.judge.config(),
            "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self.judge.params).items()},
            "samples": self.config.samples,
            "pending": self.batcher.pending,
            "batching": self.batcher.stats.to_dict(),
            "requests": dict(self.counts),
        }
