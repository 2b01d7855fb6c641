"""The reward server: a judge behind HTTP, for RL trainers (verl, OpenRLHF, TRL) and evaluation.

Endpoints (JSON in, JSON out; bodies in :mod:`judgerl.serve.schemas`):

* ``GET  /health`` -- status, model, protocol, batching statistics;
* ``POST /v1/judge/pairwise`` -- verdict (``"A"``/``"B"``/``"tie"``), scores, validity, raw output;
* ``POST /v1/score`` -- pointwise score (pointwise protocols only);
* ``POST /v1/rewards`` -- one reward in [0, 1] per item (see :class:`JudgeService.rewards`);
* ``POST /get_reward`` -- OpenRLHF ``--remote_rm_url`` format: ``{"query", "prompts", "labels"}``
  in, ``{"rewards", "scores", "extra_logs"}`` out.

Concurrent requests are gathered into generation batches by :class:`~judgerl.serve.batcher.MicroBatcher`.
Errors: malformed JSON -> 400; schema errors -> 422 (message lists each bad field's location);
bodies over ``max_body_bytes``, too many items or too-long texts -> 413; an endpoint the protocol
cannot serve -> 400; queue full -> 503 with ``Retry-After``; generation failure -> 500. An
unparseable judge output is *not* an HTTP error: it is reported per item (``valid: false``) and,
for rewards, replaced by ``invalid_reward`` and counted.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, AsyncIterator, Sequence

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from judgerl.backends.base import Backend, SamplingParams
from judgerl.serve.batcher import MicroBatcher, ServerBusy
from judgerl.serve.compat import DEFAULT_STRIP_TOKENS, split_query
from judgerl.serve.schemas import (
    OpenRLHFRequest,
    PairItem,
    PairwiseRequest,
    PointItem,
    RewardItem,
    RewardsRequest,
    ScoreRequest,
)
from judgerl.types import Completion, Decision, Messages


class ApiError(Exception):
    """An error with an HTTP status and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class ServeConfig:
    """Server limits and reward policy.

    Attributes:
        max_batch_size: Most prompts per ``backend.generate`` call.
        max_wait_ms: How long (ms) the first prompt of a batch waits for more prompts.
        max_pending: Most prompts queued; beyond it requests get 503.
        max_body_bytes: Largest request body in bytes; larger -> 413.
        max_items: Most items per request; more -> 413.
        max_text_chars: Longest prompt / response / reference in characters; longer -> 413.
        samples: Judgments sampled per item (test-time scaling; needs temperature > 0 to differ):
            pairwise verdicts are majority-voted, scores averaged (J1).
        invalid_reward: Reward given when the judge's output cannot be parsed (reported, counted).
        score_range: (min, max) of the pointwise score scale used to normalise rewards to [0, 1];
            None = the protocol's ``min_score`` / ``max_score``.
        pairwise_both_orders: For pairwise rewards, judge (response, reference) in both orders
            and average, cancelling position bias (J1 position-agnostic judging).
        return_raw: Include the judge's raw output text in judge / score responses.
        strip_tokens: End-of-turn markers removed from OpenRLHF responses.
    """

    max_batch_size: int = 32
    max_wait_ms: float = 10.0
    max_pending: int = 4096
    max_body_bytes: int = 4_000_000
    max_items: int = 512
    max_text_chars: int = 100_000
    samples: int = 1
    invalid_reward: float = 0.0
    score_range: tuple[float, float] | None = None
    pairwise_both_orders: bool = False
    return_raw: bool = True
    strip_tokens: tuple[str, ...] = field(default_factory=lambda: DEFAULT_STRIP_TOKENS)

    def __post_init__(self) -> None:
        for name in ("max_batch_size", "max_pending", "max_body_bytes", "max_items", "max_text_chars", "samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"ServeConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.max_wait_ms < 0:
            raise ValueError(f"ServeConfig.max_wait_ms must be >= 0, got {self.max_wait_ms}")
        if not math.isfinite(self.invalid_reward):
            raise ValueError("ServeConfig.invalid_reward must be finite")
        if self.score_range is not None and not self.score_range[0] < self.score_range[1]:
            raise ValueError(f"ServeConfig.score_range must be (min, max) with min < max, got {self.score_range}")


def majority_verdict(decisions: Sequence[Decision]) -> Decision:
    """Combine sampled pairwise decisions: majority vote of valid verdicts (J1 test-time scaling).

    Equal votes for A and B give ``"tie"``; scores (if any) are averaged per position. Invalid when
    no sample is valid (the first sample's reason is kept).
    """
    valid = [d for d in decisions if d.valid and d.verdict is not None]
    if not valid:
        return decisions[0]
    if len(decisions) == 1:
        return decisions[0]
    votes = Counter(d.verdict for d in valid)
    top = votes.most_common()
    verdict = "tie" if len(top) > 1 and top[0][1] == top[1][1] else top[0][0]
    scored = [d.scores for d in valid if d.scores]
    scores = tuple(sum(s[i] for s in scored) / len(scored) for i in range(len(scored[0]))) if scored else None
    return Decision(valid=True, verdict=verdict, scores=scores)


def mean_score(decisions: Sequence[Decision]) -> Decision:
    """Combine sampled pointwise decisions: mean of the valid scores (J1 test-time scaling)."""
    valid = [d for d in decisions if d.valid and d.scores]
    if not valid:
        return decisions[0]
    if len(decisions) == 1:
        return decisions[0]
    return Decision(valid=True, scores=(sum(d.scores[0] for d in valid) / len(valid),))


class JudgeService:
    """Protocol logic of the server, independent of HTTP: build prompts, generate (micro-batched),
    parse, aggregate, turn decisions into rewards.

    Args:
        backend: Any :class:`~judgerl.backends.Backend`.
        protocol: A judge protocol object (``.kind``, ``.build``, ``.parse``); pairwise or pointwise.
        params: Sampling parameters for every judgment.
        config: Limits and reward policy.

    Raises:
        ValueError: a listwise protocol, or a pointwise protocol with no known score range.
    """

    def __init__(self, backend: Backend, protocol: Any, params: SamplingParams, config: ServeConfig) -> None:
        if protocol.kind not in ("pairwise", "pointwise"):
            raise ValueError(f"the reward server serves pairwise or pointwise protocols, not {protocol.kind!r}")
        self.backend = backend
        self.protocol = protocol
        self.params = params
        self.config = config
        self.score_range: tuple[float, float] | None = config.score_range
        if self.score_range is None:
            lo, hi = getattr(protocol, "min_score", None), getattr(protocol, "max_score", None)
            if lo is not None and hi is not None:
                self.score_range = (float(lo), float(hi))
        if protocol.kind == "pointwise" and self.score_range is None:
            raise ValueError(f"protocol {protocol.name!r} has no min_score/max_score; pass ServeConfig.score_range")
        self.batcher = MicroBatcher(
            lambda prompts: backend.generate(prompts, params),
            max_batch_size=config.max_batch_size,
            max_wait_ms=config.max_wait_ms,
            max_pending=config.max_pending,
        )
        self.counts: Counter[str] = Counter()

    # -- generation -------------------------------------------------------------------------------

    def _build(self, where: str, prompt: str, responses: list[str]) -> Messages:
        try:
            return self.protocol.build(prompt, responses)
        except ValueError as e:
            raise ApiError(422, f"{where}: {e}") from e

    async def _judge(self, prompts: list[Messages]) -> list[tuple[list[Decision], list[str]]]:
        """Generate ``samples`` judgments per prompt; returns (decisions, raw texts) per prompt."""
        k = self.config.samples
        flat = [p for p in prompts for _ in range(k)]
        try:
            completions: list[Completion] = await self.batcher.submit(flat)
        except ServerBusy as e:
            raise ApiError(503, f"server busy: {e}") from e
        except Exception as e:  # backend failure: reported, server keeps serving
            raise ApiError(500, f"generation failed: {type(e).__name__}: {e}") from e
        out = []
        for i in range(len(prompts)):
            texts = [c.text for c in completions[i * k : (i + 1) * k]]
            out.append(([self.protocol.parse(t) for t in texts], texts))
        return out

    def _raw(self, texts: list[str]) -> dict[str, Any]:
        if not self.config.return_raw:
            return {}
        return {"raw": texts[0] if len(texts) == 1 else texts}

    def _normalise(self, score: float) -> float:
        if self.score_range is None:  # only pointwise protocols normalise, and they have a range
            raise RuntimeError("no score range configured")
        lo, hi = self.score_range
        return min(1.0, max(0.0, (score - lo) / (hi - lo)))

    # -- endpoints --------------------------------------------------------------------------------

    async def judge_pairs(self, items: list[PairItem]) -> list[dict[str, Any]]:
        """Judge each pair: ``{"verdict", "scores", "valid", "invalid_reason", "raw"}`` per item.

        Pointwise protocols score both responses and compare (verdict ``"tie"`` on equal scores).
        """
        self._check_items(items, ("prompt", "response_a", "response_b"))
        if self.protocol.kind == "pairwise":
            prompts = [self._build(f"items[{i}]", it.prompt, [it.response_a, it.response_b]) for i, it in enumerate(items)]
            results = []
            for decisions, texts in await self._judge(prompts):
                d = majority_verdict(decisions)
                results.append(_decision_json(d) | self._raw(texts))
            return results
        prompts = []
        for i, it in enumerate(items):
            prompts.append(self._build(f"items[{i}]", it.prompt, [it.response_a]))
            prompts.append(self._build(f"items[{i}]", it.prompt, [it.response_b]))
        judged = await self._judge(prompts)
        results = []
        for i in range(len(items)):
            (da, ta), (db, tb) = judged[2 * i], judged[2 * i + 1]
            a, b = mean_score(da), mean_score(db)
            if a.valid and b.valid:
                sa, sb = a.scores[0], b.scores[0]
                verdict = "A" if sa > sb else "B" if sb > sa else "tie"
                d = Decision(valid=True, verdict=verdict, scores=(sa, sb))
            else:
                bad = a if not a.valid else b
                d = Decision.invalid(f"{'A' if bad is a else 'B'}: {bad.invalid_reason}")
            raw = {"raw": [ta if len(ta) > 1 else ta[0], tb if len(tb) > 1 else tb[0]]} if self.config.return_raw else {}
            results.append(_decision_json(d) | raw)
        return results

    async def score(self, items: list[PointItem]) -> list[dict[str, Any]]:
        """Score each response: ``{"score", "normalized", "valid", "invalid_reason", "raw"}``.

        Raises:
            ApiError: 400 when the server's protocol is pairwise.
        """
        if self.protocol.kind != "pointwise":
            raise ApiError(
                400,
                f"/v1/score needs a pointwise protocol; this server runs {self.protocol.name!r} "
                "(pairwise): use /v1/judge/pairwise, or /v1/rewards with a reference",
            )
        self._check_items(items, ("prompt", "response"))
        prompts = [self._build(f"items[{i}]", it.prompt, [it.response]) for i, it in enumerate(items)]
        results = []
        for decisions, texts in await self._judge(prompts):
            d = mean_score(decisions)
            s = d.scores[0] if d.valid and d.scores else None
            results.append(
                {
                    "score": s,
                    "normalized": self._normalise(s) if s is not None else None,
                    "valid": d.valid,
                    "invalid_reason": d.invalid_reason,
                }
                | self._raw(texts)
            )
        return results

    async def rewards(self, items: list[RewardItem]) -> dict[str, Any]:
        """One reward in [0, 1] per item.

        Pointwise protocol: the judge's score ``s`` on scale [lo, hi] becomes ``(s - lo) / (hi - lo)``
        (mean over ``samples``). Pairwise protocol: the response is judged against ``reference``
        (response shown as A): A wins -> 1, B wins -> 0, tie -> 0.5; with ``pairwise_both_orders``
        also as B, and the rewards of the valid orders are averaged. An item with no valid judgment
        gets ``invalid_reward``.

        Returns:
            ``{"rewards": [float], "valid": [bool], "scores": [float|None], "n_invalid": int,
            "invalid_reward": float}``; ``scores`` are raw judge scores (pointwise) or None.

        Raises:
            ApiError: 422 when a pairwise server gets an item without ``reference``.
        """
        self._check_items(items, ("prompt", "response", "reference"))
        cfg = self.config
        rewards: list[float] = []
        valid: list[bool] = []
        scores: list[float | None] = []
        if self.protocol.kind == "pointwise":
            prompts = [self._build(f"items[{i}]", it.prompt, [it.response]) for i, it in enumerate(items)]
            for decisions, _ in await self._judge(prompts):
                d = mean_score(decisions)
                ok = d.valid and bool(d.scores)
                valid.append(ok)
                scores.append(d.scores[0] if ok else None)
                rewards.append(self._normalise(d.scores[0]) if ok else cfg.invalid_reward)
        else:
            missing = [i for i, it in enumerate(items) if it.reference is None]
            if missing:
                raise ApiError(
                    422,
                    f"items{missing[:10]}.reference is required: this server's protocol "
                    f"{self.protocol.name!r} is pairwise and judges each response against a reference",
                )
            orders = 2 if cfg.pairwise_both_orders else 1
            prompts = []
            for i, it in enumerate(items):
                prompts.append(self._build(f"items[{i}]", it.prompt, [it.response, it.reference]))
                if orders == 2:
                    prompts.append(self._build(f"items[{i}]", it.prompt, [it.reference, it.response]))
            judged = await self._judge(prompts)
            for i in range(len(items)):
                parts = []
                for o in range(orders):
                    d = majority_verdict(judged[i * orders + o][0])
                    if d.valid and d.verdict is not None:
                        win = {"A": 1.0, "B": 0.0, "tie": 0.5}[d.verdict]
                        parts.append(win if o == 0 else 1.0 - win)
                valid.append(bool(parts))
                scores.append(None)
                rewards.append(sum(parts) / len(parts) if parts else cfg.invalid_reward)
        n_invalid = valid.count(False)
        self.counts["invalid_judgments"] += n_invalid
        return {
            "rewards": rewards,
            "valid": valid,
            "scores": scores,
            "n_invalid": n_invalid,
            "invalid_reward": cfg.invalid_reward,
        }

    async def openrlhf(self, req: OpenRLHFRequest) -> dict[str, Any]:
        """OpenRLHF remote reward: split each query into prompt + response, then :meth:`rewards`.

        ``labels`` (when strings) are used as references for pairwise protocols.
        """
        items = []
        for i, (q, p) in enumerate(zip(req.query, req.prompts or [])):
            try:
                prompt, response = split_query(q, p, self.config.strip_tokens)
            except ValueError as e:
                raise ApiError(422, f"query[{i}]: {e}") from e
            label = req.labels[i] if req.labels is not None else None
            items.append(RewardItem(prompt=prompt, response=response, reference=label if isinstance(label, str) else None))
        out = await self.rewards(items)
        return {
            "rewards": out["rewards"],
            "scores": out["rewards"],
            "extra_logs": {"judge_valid": [float(v) for v in out["valid"]]},
        }

    def _check_items(self, items: Sequence[Any], fields: tuple[str, ...]) -> None:
        cfg = self.config
        if len(items) > cfg.max_items:
            raise ApiError(413, f"{len(items)} items in one request; the limit is {cfg.max_items}")
        for i, it in enumerate(items):
            for f in fields:
                v = getattr(it, f, None)
                if v is not None and len(v) > cfg.max_text_chars:
                    raise ApiError(
                        413, f"items[{i}].{f} has {len(v)} characters; the limit is {cfg.max_text_chars}"
                    )

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "model": self.backend.name,
            "protocol": self.protocol.name,
            "kind": self.protocol.kind,
            "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self.params).items()},
            "samples": self.config.samples,
            "pending": self.batcher.pending,
            "batching": self.batcher.stats.to_dict(),
            "requests": dict(self.counts),
        }


def _decision_json(d: Decision) -> dict[str, Any]:
    return {
        "verdict": d.verdict,
        "scores": list(d.scores) if d.scores is not None else None,
        "valid": d.valid,
        "invalid_reason": d.invalid_reason,
    }


class BodyLimitMiddleware:
    """ASGI middleware answering 413 when a request body exceeds ``max_bytes``.

    A ``Content-Length`` over the limit is refused before reading; bodies without one (chunked)
    are read up to the limit and refused as soon as they pass it, then replayed to the app.
    """

    def __init__(self, app: Any, max_bytes: int, counts: Counter[str] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.counts = counts if counts is not None else Counter()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            try:
                n = int(length)
            except ValueError:
                self.counts["http_400"] += 1
                await _send_json(send, 400, {"error": "invalid Content-Length header"})
                return
            if n > self.max_bytes:
                self.counts["http_413"] += 1
                await _send_json(send, 413, _too_large(n, self.max_bytes))
                return
            await self.app(scope, receive, send)
            return
        chunks, total, more = [], 0, True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            body = msg.get("body", b"")
            total += len(body)
            if total > self.max_bytes:
                self.counts["http_413"] += 1
                await _send_json(send, 413, _too_large(total, self.max_bytes, at_least=True))
                return
            chunks.append(body)
            more = msg.get("more_body", False)
        replay = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        sent = False

        async def replay_receive() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return replay
            return await receive()

        await self.app(scope, replay_receive, send)


def _too_large(n: int, limit: int, at_least: bool = False) -> dict[str, str]:
    size = f"more than {limit}" if at_least else str(n)
    return {"error": f"request body is {size} bytes; the limit is {limit} bytes"}


async def _send_json(send: Any, status: int, payload: dict) -> None:
    import json

    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _validation_message(errors: Sequence[dict]) -> tuple[int, str]:
    if any(e.get("type") == "json_invalid" for e in errors):
        e = next(e for e in errors if e.get("type") == "json_invalid")
        pos = e.get("loc", ("body", "?"))[-1]
        return 400, f"malformed JSON at character {pos}: {e.get('ctx', {}).get('error', 'decode error')}"
    parts = []
    for e in errors[:20]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
    more = f" (+{len(errors) - 20} more)" if len(errors) > 20 else ""
    return 422, "invalid request: " + "; ".join(parts) + more


def create_app(
    backend: Backend,
    protocol: Any,
    params: SamplingParams | None = None,
    config: ServeConfig | None = None,
    protocol_kwargs: dict[str, Any] | None = None,
) -> FastAPI:
    """Build the FastAPI reward-server app.

    Args:
        backend: Generates the judgments (shared by all requests; calls are serialised by the
            micro-batcher, one batch at a time).
        protocol: A protocol object or a name for :func:`judgerl.protocols.get_protocol`.
        params: Sampling parameters (default: greedy, 512 new tokens).
        config: Limits and reward policy (:class:`ServeConfig`).
        protocol_kwargs: Passed to ``get_protocol`` when ``protocol`` is a name.

    Returns:
        The app; ``app.state.service`` is its :class:`JudgeService`. The micro-batcher starts
        and stops with the app's lifespan (uvicorn, or ``with TestClient(app)``).

    Raises:
        ValueError: unknown protocol name, a listwise protocol, bad config.
    """
    if isinstance(protocol, str):
        from judgerl.protocols import get_protocol

        protocol = get_protocol(protocol, **(protocol_kwargs or {}))
    config = config or ServeConfig()
    params = params or SamplingParams(max_new_tokens=512, temperature=0.0)
    service = JudgeService(backend, protocol, params, config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await service.batcher.start()
        try:
            yield
        finally:
            await service.batcher.stop()

    app = FastAPI(
        title="judgerl reward server",
        description="A reasoning LLM judge as a reward model (J1 / TIR-Judge protocols).",
        lifespan=lifespan,
    )
    app.state.service = service
    app.add_middleware(BodyLimitMiddleware, max_bytes=config.max_body_bytes, counts=service.counts)

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        # The offending input is left out: it may be the huge or malformed payload itself.
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg"), "type": e.get("type")} for e in exc.errors()]
        status, message = _validation_message(exc.errors())
        service.counts[f"http_{status}"] += 1
        return JSONResponse({"error": message, "detail": errors}, status_code=status)

    @app.exception_handler(ApiError)
    async def on_api_error(request: Request, exc: ApiError) -> JSONResponse:
        service.counts[f"http_{exc.status}"] += 1
        headers = {"Retry-After": "1"} if exc.status == 503 else None
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return service.health()

    async def answer(req: PairwiseRequest | ScoreRequest, judge: Any, endpoint: str) -> dict[str, Any]:
        # One item in -> its result; a batch in -> {"results": [...], "elapsed_s": ...}.
        t0 = time.perf_counter()
        items, single = req.batch()
        results = await judge(items)
        service.counts[endpoint] += 1
        if single:
            return results[0]
        return {"results": results, "elapsed_s": round(time.perf_counter() - t0, 4)}

    @app.post("/v1/judge/pairwise")
    async def judge_pairwise(req: PairwiseRequest) -> dict[str, Any]:
        return await answer(req, service.judge_pairs, "judge_pairwise")

    @app.post("/v1/score")
    async def score(req: ScoreRequest) -> dict[str, Any]:
        return await answer(req, service.score, "score")

    @app.post("/v1/rewards")
    async def rewards(req: RewardsRequest) -> dict[str, Any]:
        out = await service.rewards(req.items)
        service.counts["rewards"] += 1
        return out

    @app.post("/get_reward")
    async def get_reward(req: OpenRLHFRequest) -> dict[str, Any]:
        out = await service.openrlhf(req)
        service.counts["get_reward"] += 1
        return out

    return app
