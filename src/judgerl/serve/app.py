"""The reward server's HTTP layer: a :class:`~judgerl.serve.service.JudgeService` behind FastAPI.

Endpoints (JSON in, JSON out; bodies in :mod:`judgerl.serve.schemas`):

* ``GET  /health`` -- status, judge configuration, batching statistics, request / invalid / guard
  counters;
* ``POST /v1/judge/pairwise`` -- verdict (``"A"``/``"B"``/``"tie"``), scores, validity, raw output;
* ``POST /v1/judge/listwise`` -- ranking (0-based, best first) and best response (listwise protocols);
* ``POST /v1/score`` -- pointwise score (pointwise protocols only);
* ``POST /v1/rewards`` -- one reward per item (see :meth:`JudgeService.rewards`);
* ``POST /get_reward`` -- OpenRLHF ``--remote_rm_url`` format: ``{"query", "prompts", "labels"}``
  in, ``{"rewards", "scores", "extra_logs"}`` out.

A client may send an ``X-Request-ID`` header: a retry with the same id is answered from the first
attempt instead of being judged again; the items an attempt finished before its client left are kept,
so a retry judges only the missing ones (:mod:`judgerl.serve.dedup`). Concurrent requests are gathered into generation batches by
:class:`~judgerl.serve.batcher.MicroBatcher`; items of a client that disconnected are dropped
before generation.

Errors all have the shape ``{"error": "<one line>"}``: a body that is not valid UTF-8, nested
deeper than ``max_json_depth`` or malformed JSON -> 400; schema errors -> 422 (each bad field's
location); bodies over ``max_body_bytes``, too many items or too-long texts -> 413; an endpoint
the protocol cannot serve -> 400; queue full -> 503 with ``Retry-After``. A failure of one item
(generation error, prompt too long, unparseable output) is *not* an HTTP error: it is reported
on that item (``valid: false``, ``invalid_reason``, ``error``) and counted.
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Sequence

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from judgerl.backends.base import Backend, SamplingParams
from judgerl.judge import Judge
from judgerl.serve.dedup import request_key
from judgerl.serve.guards import check_body
from judgerl.serve.schemas import (
    ListwiseRequest,
    OpenRLHFRequest,
    PairwiseRequest,
    RewardsRequest,
    ScoreRequest,
)
from judgerl.serve.service import ApiError, JudgeService, ServeConfig

__all__ = ["ApiError", "JudgeService", "ServeConfig", "create_app"]


class BodyGuardMiddleware:
    """ASGI middleware checking request bodies before the app parses them.

    A ``Content-Length`` over ``max_bytes`` is refused (413) before reading; other bodies are read
    up to the limit (413 as soon as they pass it), checked by :func:`judgerl.serve.guards.check_body`
    (400 for invalid UTF-8 or JSON nested deeper than ``max_depth``), then replayed to the app.
    Every refusal is counted in ``counts`` (``http_<status>``).
    """

    def __init__(self, app: Any, max_bytes: int, max_depth: int, counts: Counter[str] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth
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
        body = b"".join(chunks)
        problem = check_body(body, self.max_depth) if body else None
        if problem is not None:
            self.counts["http_400"] += 1
            await _send_json(send, 400, {"error": problem})
            return
        replay = {"type": "http.request", "body": body, "more_body": False}
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
    judge: Judge | Backend,
    protocol: Any = None,
    params: SamplingParams | None = None,
    config: ServeConfig | None = None,
    protocol_kwargs: dict[str, Any] | None = None,
) -> FastAPI:
    """Build the FastAPI reward-server app.

    Args:
        judge: A :class:`~judgerl.judge.Judge` (any protocol; tools, forcing, seed included), or a
            backend, in which case ``protocol`` (and ``params``) make a plain greedy judge.
        protocol: With a backend: a protocol object or a name for
            :func:`judgerl.protocols.get_protocol` (``protocol_kwargs`` are its options).
        params: With a backend: sampling parameters (default: greedy, 512 new tokens).
        config: Limits and reward policy (:class:`ServeConfig`).
        protocol_kwargs: Passed to ``get_protocol`` when ``protocol`` is a name.

    Returns:
        The app; ``app.state.service`` is its :class:`JudgeService`. The micro-batcher starts
        and stops with the app's lifespan (uvicorn, or ``with TestClient(app)``).

    Raises:
        ValueError: unknown protocol name, a backend without a protocol, bad config.
    """
    if not isinstance(judge, Judge):
        if protocol is None:
            raise ValueError("create_app(backend, protocol): a protocol is needed when no Judge is given")
        if isinstance(protocol, str):
            from judgerl.protocols import get_protocol

            protocol = get_protocol(protocol, **(protocol_kwargs or {}))
        judge = Judge(protocol, judge, params or SamplingParams(max_new_tokens=512, temperature=0.0))
    config = config or ServeConfig()
    service = JudgeService(judge, config)

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
    app.add_middleware(BodyGuardMiddleware, max_bytes=config.max_body_bytes, max_depth=config.max_json_depth,
                       counts=service.counts)

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

    async def answer(request: Request, req: Any, judge_items: Any, endpoint: str) -> dict[str, Any]:
        # One item in -> its result; a batch in -> {"results": [...], "elapsed_s": ...}.
        t0 = time.perf_counter()
        items, single = req.batch()

        async def compute() -> Any:
            return await judge_items(items, request.is_disconnected)

        results = await service.once(await _request_id(request, endpoint), compute, request.is_disconnected)
        service.counts[endpoint] += 1
        if single:
            return results[0]
        return {"results": results, "elapsed_s": round(time.perf_counter() - t0, 4)}

    @app.post("/v1/judge/pairwise")
    async def judge_pairwise(request: Request, req: PairwiseRequest) -> dict[str, Any]:
        return await answer(request, req, service.judge_pairs, "judge_pairwise")

    @app.post("/v1/judge/listwise")
    async def judge_listwise(request: Request, req: ListwiseRequest) -> dict[str, Any]:
        return await answer(request, req, service.judge_listwise, "judge_listwise")

    @app.post("/v1/score")
    async def score(request: Request, req: ScoreRequest) -> dict[str, Any]:
        return await answer(request, req, lambda items, gone: service.score(items, gone, req.score_mode), "score")

    @app.post("/v1/rewards")
    async def rewards(request: Request, req: RewardsRequest) -> dict[str, Any]:
        out = await service.once(await _request_id(request, "rewards"),
                                 lambda: service.rewards(req.items, request.is_disconnected, req.score_mode),
                                 request.is_disconnected)
        service.counts["rewards"] += 1
        return out

    @app.post("/get_reward")
    async def get_reward(request: Request, req: OpenRLHFRequest) -> dict[str, Any]:
        out = await service.once(await _request_id(request, "get_reward"),
                                 lambda: service.openrlhf(req, request.is_disconnected), request.is_disconnected)
        service.counts["get_reward"] += 1
        return out

    return app


async def _request_id(request: Request, endpoint: str) -> str | None:
    """The dedup key: endpoint, X-Request-ID and the body's hash (:func:`judgerl.serve.dedup.request_key`).

    Raises:
        ApiError: 400 for an over-long id.
    """
    try:
        return request_key(endpoint, request.headers.get("x-request-id"), await request.body())
    except ValueError as e:
        raise ApiError(400, str(e)) from e
