"""OpenAI-compatible backend: any ``/v1/chat/completions`` endpoint (vLLM, SGLang, llama.cpp server,
``transformers serve``, hosted APIs).

One :class:`openai.AsyncOpenAI` client per backend lives on the backend's own event-loop thread and
is reused by every call (connection pooling); requests run concurrently with at most
``max_concurrency`` in flight; ``generate`` is synchronous and returns completions in input order.

Retries are openai-python's own (``max_retries``): HTTP 408/409/429, 5xx, timeouts and connection
errors are retried with exponential backoff and jitter, honouring the server's ``Retry-After`` /
``retry-after-ms`` and ``x-should-retry`` headers. What still fails afterwards is classified per
prompt:

* the prompt does not fit the model's context (HTTP 400 mentioning the context length) -> that
  prompt's Completion has ``finish_reason="prompt_too_long"``;
* a transient failure that outlived its retries (5xx, 429, timeouts, connection errors), a null
  ``content`` or ``finish_reason="content_filter"`` -> ``finish_reason`` ``"error"`` or
  ``"content_filter"`` with ``error`` set: recorded, counted, and generated again by the next run
  of the same command (never cached as a final judgment);
* other client errors (400/401/403/404/422: a bad option, a wrong key or model name) fail the whole
  call with :class:`OpenAIBackendError` naming the status and the server's message.

Prefill (a trailing assistant message, see :data:`judgerl.types.Messages`) depends on the server:

* ``prefill="continue"`` (default): the messages are sent as they are with
  ``extra_body={"continue_final_message": True, "add_generation_prompt": False}``, the vLLM / SGLang
  extension that continues the last assistant message. Servers without it either reject the
  unknown field (``transformers serve`` answers 422) or silently open a new turn.
* ``prefill="completions"``: the chat is rendered locally with ``tokenizer`` (a local tokenizer
  directory or a loaded tokenizer, using :func:`judgerl.backends.chat.render_chat`) and sent to the
  legacy ``/v1/completions`` endpoint as raw text. Works on any server that exposes it.
* ``prefill="error"``: prompts ending in an assistant message raise ``ValueError``.

Prompts without a trailing assistant message always go to ``/v1/chat/completions`` unchanged.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import threading
import weakref
from dataclasses import asdict, dataclass
from typing import Any, Literal, Mapping, Sequence

import openai

from judgerl.backends.base import Backend, OnResult, SamplingParams, cut_at_stop, resolve_seeds
from judgerl.backends.scores import TopLogprobReader
from judgerl.types import Completion, Messages

logger = logging.getLogger(__name__)

PrefillMode = Literal["continue", "completions", "error"]
#: The OpenAI API accepts at most this many stop sequences; longer lists are cut client-side.
MAX_API_STOP = 4
#: Statuses that fail the whole call: the request itself is wrong (options, key, model name).
FATAL_STATUS = frozenset({400, 401, 403, 404, 422})
_ATTEMPTS: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("judgerl_openai_attempts", default=None)
_CONTEXT_HINTS = ("context length", "context_length", "maximum context", "too many tokens", "too long",
                  "maximum model length", "max_model_len", "context size")  # the last: llama-server


class OpenAIBackendError(RuntimeError):
    """A request failed in a way that fails the whole call (a client error: options, key, model).

    Attributes:
        status: HTTP status code, or None for timeouts / connection errors.
        attempts: How many attempts were made.
    """

    def __init__(self, message: str, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


@dataclass
class UsageTotals:
    """Token usage and request counters summed over the backend's lifetime.

    ``prompt_tokens`` / ``completion_tokens`` are the server's ``usage`` figures (0 where a server
    sends none); ``requests`` counts successful requests, ``retries`` the extra HTTP attempts
    openai-python made, ``failures`` requests that failed after their retries.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    retries: int = 0
    failures: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def is_context_error(exc: BaseException) -> bool:
    """True for an HTTP 400 whose message says the prompt does not fit the model's context."""
    if not isinstance(exc, openai.BadRequestError):
        return False
    msg = (getattr(exc, "message", None) or str(exc)).lower()
    return any(h in msg for h in _CONTEXT_HINTS)


class _LoopThread:
    """A daemon thread running one asyncio event loop for the backend's lifetime."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="judgerl-openai", daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


class OpenAIBackend(Backend):
    """Generate through an OpenAI-compatible HTTP endpoint.

    Args:
        model: Model name sent in each request (``load_backend("openai/<model>")`` passes ``<model>``).
        base_url: Endpoint root including ``/v1``, e.g. ``http://127.0.0.1:8000/v1``. Default: the
            ``OPENAI_BASE_URL`` environment variable, else the OpenAI API.
        api_key_env: Environment variable holding the API key. Local servers usually need none;
            when the variable is unset the key ``"EMPTY"`` is sent.
        max_concurrency: Requests in flight at once (>= 1).
        max_retries: openai-python's retries per request after the first attempt (>= 0).
        timeout_s: Per-attempt timeout in seconds (> 0).
        prefill: How a trailing assistant message is handled: ``"continue"``, ``"completions"`` or
            ``"error"`` (module docstring). Default: ``$JUDGERL_OPENAI_PREFILL``, else ``"continue"``.
        tokenizer: Tokenizer (directory path or loaded object with ``apply_chat_template``) used to
            render prompts when ``prefill="completions"``. Default: ``$JUDGERL_OPENAI_TOKENIZER``.
        extra_body: Extra JSON fields added to every request (server-specific options).
        transport: An httpx transport for the client (tests pass a mock transport here).
        context_length: The model's context window in tokens when known (informational; the
            server decides, and its refusal becomes ``prompt_too_long``).

    Raises:
        ValueError: a bad numeric argument, an unknown ``prefill`` mode, or ``prefill="completions"``
            without a tokenizer.

    Attributes:
        usage: :class:`UsageTotals` summed over all calls (thread-safe); ``retries`` counts the
            extra HTTP attempts openai-python made.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 8,
        max_retries: int = 5,
        timeout_s: float = 60.0,
        prefill: PrefillMode | None = None,
        tokenizer: Any = None,
        extra_body: Mapping[str, Any] | None = None,
        transport: Any = None,
        context_length: int | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if prefill is None:
            prefill = os.environ.get("JUDGERL_OPENAI_PREFILL") or "continue"  # type: ignore[assignment]
        if tokenizer is None:
            tokenizer = os.environ.get("JUDGERL_OPENAI_TOKENIZER") or None
        if prefill not in ("continue", "completions", "error"):
            raise ValueError(f"prefill must be 'continue', 'completions' or 'error', got {prefill!r}")
        if prefill == "completions" and tokenizer is None:
            raise ValueError("prefill='completions' renders prompts locally and needs tokenizer=")
        self.model = model
        self.name = f"openai/{model}"
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self.api_key_env = api_key_env
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout_s = float(timeout_s)
        self.prefill: PrefillMode = prefill
        self.extra_body = dict(extra_body or {})
        self.context_length = context_length
        self._transport = transport
        self._tokenizer = tokenizer
        self._lock = threading.Lock()
        self._loop: _LoopThread | None = None
        self._client: openai.AsyncOpenAI | None = None
        self._sem: asyncio.Semaphore | None = None
        self.usage = UsageTotals()
        self._finalizer = weakref.finalize(self, _close_loop, self.__dict__)

    # -- public API ------------------------------------------------------------------------------

    def generate(
        self,
        prompts: Sequence[Messages],
        params: SamplingParams,
        *,
        seeds: Sequence[int] | None = None,
        on_result: OnResult | None = None,
    ) -> list[Completion]:
        """Complete each prompt; returns one :class:`Completion` per prompt, in input order.

        Each prompt's seed (``seeds``, else derived from ``params.seed`` and the prompt, see
        :func:`~judgerl.backends.base.resolve_seeds`) is sent as the request's ``seed`` (mod 2^31).
        Stop strings are sent to the server (the first 4) and also cut client-side. ``on_result``
        is called from the backend's loop thread as each request finishes.

        Raises:
            OpenAIBackendError: a request failed with a client error (module docstring); the
                other prompts' results are discarded.
            ValueError: a prompt without messages, a prefill prompt with ``prefill="error"``, bad
                ``seeds``.
        """
        if not prompts:
            return []
        for i, p in enumerate(prompts):
            if not p:
                raise ValueError(f"prompt {i} has no messages")
            if self.prefill == "error" and p[-1].get("role") == "assistant":
                raise ValueError(
                    f"prompt {i} ends with an assistant message (prefill) but prefill='error'; "
                    "use prefill='continue' (vLLM/SGLang) or prefill='completions' with a tokenizer"
                )
        keys = [json.dumps([dict(m) for m in p], sort_keys=True, ensure_ascii=False) for p in prompts]
        row_seeds = resolve_seeds(keys, params, seeds)
        return self._loop_thread().run(self._agenerate(prompts, params, row_seeds, on_result))

    def close(self) -> None:
        """Close the HTTP client and stop the loop thread (also done at garbage collection)."""
        self._finalizer()

    def score_reader(self) -> TopLogprobReader:
        """Score probabilities from the top log-probabilities of one generated token
        (:class:`~judgerl.backends.scores.TopLogprobReader`: single-character scores)."""
        return TopLogprobReader(self.top_logprobs, name=self.name)

    def top_logprobs(self, prompts: Sequence[Messages], k: int = 20) -> list[list[tuple[str, float]] | str]:
        """The top-``k`` alternatives of the first token the model would generate after each prompt.

        One greedy request per prompt with ``max_tokens=1`` and ``logprobs``: ``logprobs=True,
        top_logprobs=k`` on ``/v1/chat/completions`` (a trailing assistant message is continued as in
        :meth:`generate`), or ``logprobs=k`` on ``/v1/completions`` with ``prefill="completions"``.
        Used for the expected score (:class:`judgerl.judge.expected.TopLogprobReader`).

        Returns:
            Per prompt: ``[(token text, natural-log probability), ...]``, or an error message (str)
            when the request failed after retries or the server sent no logprobs.

        Raises:
            OpenAIBackendError: a client error (bad option, key, model), as in :meth:`generate`.
            ValueError: ``k`` < 1.
        """
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not prompts:
            return []
        return self._loop_thread().run(self._atop_logprobs(list(prompts), k))

    async def _atop_logprobs(self, prompts: list[Messages], k: int) -> list[list[tuple[str, float]] | str]:
        client, sem = await self._ensure_client()

        async def one(i: int, msgs: Messages) -> list[tuple[str, float]] | str:
            async with sem:
                try:
                    return await self._logprob_request(client, msgs, k)
                except openai.OpenAIError as exc:
                    status = getattr(exc, "status_code", None)
                    msg = getattr(exc, "message", None) or str(exc) or type(exc).__name__
                    self._count(failures=1)
                    if status in FATAL_STATUS and not is_context_error(exc):
                        raise OpenAIBackendError(f"{self.name} at {client.base_url}: logprobs of prompt {i} "
                                                 f"failed: HTTP {status}: {msg}", status=status) from exc
                    return f"{'HTTP ' + str(status) if status is not None else type(exc).__name__}: {msg}"

        return list(await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts))))

    async def _logprob_request(self, client: openai.AsyncOpenAI, msgs: Messages, k: int) -> list[tuple[str, float]] | str:
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": 1, "temperature": 0.0}
        extra = dict(self.extra_body)
        prefill = msgs[-1].get("role") == "assistant"
        if prefill and self.prefill == "completions":
            if extra:
                kwargs["extra_body"] = extra
            resp = await client.completions.create(prompt=self._render(msgs), logprobs=k, **kwargs)
            lp = resp.choices[0].logprobs if resp.choices else None
            tops = getattr(lp, "top_logprobs", None) if lp is not None else None
            self._count(requests=1)
            if not tops or tops[0] is None:
                return "the server returned no logprobs (/v1/completions with logprobs=k)"
            return [(str(t), float(v)) for t, v in dict(tops[0]).items()]
        if prefill:
            extra.update({"continue_final_message": True, "add_generation_prompt": False})
        if extra:
            kwargs["extra_body"] = extra
        resp = await client.chat.completions.create(
            messages=self._chat_messages(msgs), logprobs=True,
            top_logprobs=min(k, 20), **kwargs)
        self._count(requests=1)
        lp = resp.choices[0].logprobs if resp.choices else None
        content = getattr(lp, "content", None) if lp is not None else None
        if not content:
            return "the server returned no logprobs (chat completions with logprobs=true)"
        return [(str(t.token), float(t.logprob)) for t in (content[0].top_logprobs or [])]

    # -- internals -------------------------------------------------------------------------------

    def _loop_thread(self) -> _LoopThread:
        with self._lock:
            if self._loop is None:
                self._loop = _LoopThread()
            return self._loop

    async def _ensure_client(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        if self._client is None:
            def count_attempt(request: Any) -> None:
                counter = _ATTEMPTS.get()
                if counter is not None:
                    counter[0] += 1

            http_kwargs: dict[str, Any] = {"event_hooks": {"request": [_async(count_attempt)]}}
            if self._transport is not None:
                http_kwargs["transport"] = self._transport
            self._client = openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=os.environ.get(self.api_key_env) or "EMPTY",
                timeout=self.timeout_s,
                max_retries=self.max_retries,
                http_client=openai.DefaultAsyncHttpxClient(**http_kwargs),
            )
            self._sem = asyncio.Semaphore(self.max_concurrency)
        assert self._sem is not None
        return self._client, self._sem

    async def _agenerate(self, prompts: Sequence[Messages], params: SamplingParams, seeds: list[int] | None,
                         on_result: OnResult | None) -> list[Completion]:
        client, sem = await self._ensure_client()

        async def one(i: int, msgs: Messages) -> Completion:
            async with sem:
                c = await self._request_classified(client, msgs, params, None if seeds is None else seeds[i], i)
            if on_result is not None:
                on_result(i, c)
            return c

        return list(await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts))))

    async def _request_classified(self, client: openai.AsyncOpenAI, msgs: Messages, params: SamplingParams,
                                  seed: int | None, index: int) -> Completion:
        attempts = [0]
        _ATTEMPTS.set(attempts)  # this task's context: the httpx hook counts this request's attempts
        try:
            result = await self._request(client, msgs, params, seed)
        except openai.OpenAIError as exc:
            status = getattr(exc, "status_code", None)
            msg = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            what = f"HTTP {status}" if status is not None else type(exc).__name__
            self._count(failures=1)
            if is_context_error(exc):
                return Completion("", 0, 0, "prompt_too_long", error=f"{self.name}: {msg}")
            if status in FATAL_STATUS:
                raise OpenAIBackendError(
                    f"{self.name} at {client.base_url}: prompt {index} failed: {what}: {msg}", status=status
                ) from exc
            logger.warning("%s: prompt %d failed after retries: %s: %s", self.name, index, what, msg)
            return Completion("", 0, 0, "error", error=f"{what}: {msg}")
        finally:
            self._count(retries=max(0, attempts[0] - 1))
        self._count(requests=1, prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens)
        return result

    async def _request(self, client: openai.AsyncOpenAI, msgs: Messages, params: SamplingParams,
                       seed: int | None) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
        }
        if params.temperature > 0 and params.top_p < 1.0:
            kwargs["top_p"] = params.top_p
        if seed is not None:
            kwargs["seed"] = seed % (2**31)
        if params.stop:
            kwargs["stop"] = list(params.stop[:MAX_API_STOP])
        extra = dict(self.extra_body)
        prefill = msgs[-1].get("role") == "assistant"
        if prefill and self.prefill == "completions":
            if extra:
                kwargs["extra_body"] = extra
            resp = await client.completions.create(prompt=self._render(msgs), **kwargs)
            choice = resp.choices[0]
            text = choice.text
        else:
            if prefill:  # prefill == "continue"
                extra.update({"continue_final_message": True, "add_generation_prompt": False})
            if extra:
                kwargs["extra_body"] = extra
            resp = await client.chat.completions.create(messages=self._chat_messages(msgs), **kwargs)
            choice = resp.choices[0]
            text = choice.message.content if choice.message is not None else None
        usage = resp.usage
        prompt_tokens = int(usage.prompt_tokens) if usage is not None else 0
        completion_tokens = int(usage.completion_tokens) if usage is not None else 0
        if choice.finish_reason == "content_filter":
            return Completion(text or "", prompt_tokens, completion_tokens, "content_filter",
                              error="the server filtered the answer (finish_reason content_filter)")
        if text is None:
            return Completion("", prompt_tokens, completion_tokens, "error",
                              error=f"the server returned null content (finish_reason {choice.finish_reason!r})")
        text, stopped = cut_at_stop(text, params.stop)
        finish = "length" if (choice.finish_reason == "length" and not stopped) else "stop"
        return Completion(text, prompt_tokens, completion_tokens, finish)

    def _render(self, msgs: Messages) -> str:
        from judgerl.backends.chat import render_chat

        return render_chat(self._tok(), msgs)

    def _tok(self) -> Any:
        """The tokenizer given (loaded on first use when given as a path), or None."""
        with self._lock:
            if isinstance(self._tokenizer, (str, os.PathLike)):
                from transformers import AutoTokenizer

                self._tokenizer = AutoTokenizer.from_pretrained(str(self._tokenizer))
            return self._tokenizer

    def _chat_messages(self, msgs: Messages) -> list[dict[str, Any]]:
        """The messages as sent to a server that applies its own chat template: role and content only, with
        the tokenizer's special tokens (when one was given) and the common role markers defused
        (:func:`judgerl.backends.chat.defuse_special_tokens`): the server tokenises them as specials too."""
        from judgerl.backends.chat import defuse_special_tokens

        return defuse_special_tokens(self._tok(), [{"role": m["role"], "content": m["content"]} for m in msgs])

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for k, v in deltas.items():
                setattr(self.usage, k, getattr(self.usage, k) + v)


def _async(fn: Any) -> Any:
    async def hook(*args: Any) -> None:
        fn(*args)

    return hook


def _close_loop(state: dict) -> None:
    """Close the client on its loop and stop the loop thread (weakref finaliser)."""
    loop, client = state.get("_loop"), state.get("_client")
    if loop is None:
        return
    if client is not None:
        try:
            loop.run(client.close())
        except Exception:  # pragma: no cover - best effort at shutdown
            pass
    loop.stop()
    state["_loop"] = None
    state["_client"] = None


__all__ = ["OpenAIBackend", "OpenAIBackendError", "UsageTotals", "is_context_error"]
