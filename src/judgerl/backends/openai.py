"""OpenAI-compatible backend: any ``/v1/chat/completions`` endpoint (vLLM, SGLang, llama.cpp server,
``transformers serve``, hosted APIs).

Requests run concurrently on :class:`openai.AsyncOpenAI` with at most ``max_concurrency`` in flight
(an :class:`asyncio.Semaphore`); ``generate`` is synchronous and returns completions in input order.

Retries are explicit (the openai client's own retries are switched off so the policy is visible
and testable): HTTP 408/409/429, 5xx, timeouts and connection errors are retried up to
``max_retries`` times with capped exponential backoff and full jitter,
``delay = uniform(0, min(backoff_max_s, backoff_base_s * 2**attempt))``, or the server's
``Retry-After`` seconds when it sends one (capped at ``backoff_max_s``). Other 4xx errors are not
retried and raise :class:`OpenAIBackendError` at once, naming the status and the server's message.

Prefill (a trailing assistant message, see :data:`judgerl.types.Messages`) depends on the server:

* ``prefill="continue"`` (default): the messages are sent as they are with
  ``extra_body={"continue_final_message": True, "add_generation_prompt": False}``, the vLLM / SGLang
  extension that continues the last assistant message. Servers without it either reject the
  unknown field (``transformers serve`` answers 422) or silently open a new turn.
* ``prefill="completions"``: the chat is rendered locally with ``tokenizer`` (a local tokenizer
  directory or a loaded tokenizer, using the same rendering as the ``hf`` backend) and sent to the
  legacy ``/v1/completions`` endpoint as raw text. Works on any server that exposes it.
* ``prefill="error"``: prompts ending in an assistant message raise ``ValueError``.

Prompts without a trailing assistant message always go to ``/v1/chat/completions`` unchanged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import random
import threading
from dataclasses import asdict, dataclass
from typing import Any, Literal, Mapping, Sequence

import openai

from judgerl.backends.base import SamplingParams, cut_at_stop
from judgerl.types import Completion, Messages

logger = logging.getLogger(__name__)

PrefillMode = Literal["continue", "completions", "error"]
#: Status codes worth retrying: request timeout, conflict, rate limit, server errors.
RETRY_STATUS = frozenset({408, 409, 429})
#: The OpenAI API accepts at most this many stop sequences; longer lists are cut client-side.
MAX_API_STOP = 4


class OpenAIBackendError(RuntimeError):
    """A request failed for good: a non-retryable 4xx, or retries exhausted.

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
    sends none); ``requests`` counts successful requests, ``retries`` re-sent attempts and
    ``failures`` requests that raised.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    retries: int = 0
    failures: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def is_retryable(exc: BaseException) -> bool:
    """True for errors worth retrying: 408/409/429/5xx statuses, timeouts and connection errors."""
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRY_STATUS or exc.status_code >= 500
    return False


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` header (numeric form only), or None."""
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def backoff_delay_s(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Full-jitter exponential backoff: ``uniform(0, min(max_s, base_s * 2**attempt))`` seconds.

    ``attempt`` counts from 0 for the first retry. (AWS Architecture Blog, "Exponential Backoff And
    Jitter", 2015: full jitter spreads synchronized clients best.)
    """
    return rng.uniform(0.0, min(max_s, base_s * (2.0**attempt)))


def _run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from synchronous code, also when a loop is already running
    in this thread (then in a helper thread with its own loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class OpenAIBackend:
    """Generate through an OpenAI-compatible HTTP endpoint.

    Args:
        model: Model name sent in each request (``load_backend("openai/<model>")`` passes ``<model>``).
        base_url: Endpoint root including ``/v1``, e.g. ``http://127.0.0.1:8000/v1``. Default: the
            ``OPENAI_BASE_URL`` environment variable, else the OpenAI API.
        api_key_env: Environment variable holding the API key. Local servers usually need none;
            when the variable is unset the key ``"EMPTY"`` is sent.
        max_concurrency: Requests in flight at once (>= 1).
        max_retries: Retries per request after the first attempt (>= 0); see the module docstring.
        timeout_s: Per-attempt timeout in seconds (> 0).
        backoff_base_s: Backoff scale in seconds; ``backoff_max_s`` caps one delay.
        prefill: How a trailing assistant message is handled: ``"continue"``, ``"completions"`` or
            ``"error"`` (module docstring). Default: ``$JUDGERL_OPENAI_PREFILL``, else ``"continue"``
            (the variables let CLI commands such as ``judgerl eval --model openai/...`` choose).
        tokenizer: Tokenizer (directory path or loaded object with ``apply_chat_template``) used to
            render prompts when ``prefill="completions"``. Default: ``$JUDGERL_OPENAI_TOKENIZER``.
        extra_body: Extra JSON fields added to every request (server-specific options).
        transport: An httpx transport for the client (tests pass a mock transport here).
        seed: RNG seed for backoff jitter (tests); None = nondeterministic.

    Raises:
        ValueError: a bad numeric argument, an unknown ``prefill`` mode, or ``prefill="completions"``
            without a tokenizer.

    Attributes:
        usage: :class:`UsageTotals` summed over all calls (thread-safe).
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 8,
        max_retries: int = 5,
        timeout_s: float = 60.0,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 20.0,
        prefill: PrefillMode | None = None,
        tokenizer: Any = None,
        extra_body: Mapping[str, Any] | None = None,
        transport: Any = None,
        seed: int | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if backoff_base_s < 0 or backoff_max_s < 0:
            raise ValueError("backoff_base_s and backoff_max_s must be >= 0")
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
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_max_s = float(backoff_max_s)
        self.prefill: PrefillMode = prefill
        self.extra_body = dict(extra_body or {})
        self._transport = transport
        self._rng = random.Random(seed)
        self._tokenizer = tokenizer
        self._lock = threading.Lock()
        self.usage = UsageTotals()

    # -- public API ------------------------------------------------------------------------------

    def generate(self, prompts: Sequence[Messages], params: SamplingParams) -> list[Completion]:
        """Complete each prompt; returns one :class:`Completion` per prompt, in input order.

        ``params.seed`` (when set) is sent as ``seed + i`` for prompt ``i``, so repeated prompts in
        one batch (test-time scaling samples) do not share a random stream. Stop strings are sent
        to the server (the first 4) and also cut client-side.

        Raises:
            OpenAIBackendError: a request failed after its retries (the whole call fails; no
                partial results are returned).
            ValueError: a prefill prompt with ``prefill="error"``.
        """
        if not prompts:
            return []
        return _run_sync(self.agenerate(prompts, params))

    async def agenerate(self, prompts: Sequence[Messages], params: SamplingParams) -> list[Completion]:
        """Async form of :meth:`generate` (same arguments, result and errors)."""
        for i, p in enumerate(prompts):
            if not p:
                raise ValueError(f"prompt {i} has no messages")
            if self.prefill == "error" and p[-1].get("role") == "assistant":
                raise ValueError(
                    f"prompt {i} ends with an assistant message (prefill) but prefill='error'; "
                    "use prefill='continue' (vLLM/SGLang) or prefill='completions' with a tokenizer"
                )
        sem = asyncio.Semaphore(self.max_concurrency)
        http_client = (
            openai.DefaultAsyncHttpxClient(transport=self._transport) if self._transport is not None else None
        )
        client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=os.environ.get(self.api_key_env) or "EMPTY",
            timeout=self.timeout_s,
            max_retries=0,
            http_client=http_client,
        )
        try:
            async def one(i: int, msgs: Messages) -> Completion:
                async with sem:
                    return await self._with_retries(client, msgs, params, i)

            return list(await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts))))
        finally:
            await client.close()

    # -- internals -------------------------------------------------------------------------------

    async def _with_retries(
        self, client: openai.AsyncOpenAI, msgs: Messages, params: SamplingParams, index: int
    ) -> Completion:
        attempt = 0
        while True:
            try:
                result = await self._request(client, msgs, params, index)
            except Exception as exc:  # classified below; anything unknown is re-raised as is
                if not isinstance(exc, openai.OpenAIError):
                    self._count(failures=1)
                    raise
                status = getattr(exc, "status_code", None)
                if not is_retryable(exc) or attempt >= self.max_retries:
                    self._count(failures=1)
                    what = f"HTTP {status}" if status is not None else type(exc).__name__
                    msg = getattr(exc, "message", None) or str(exc)
                    raise OpenAIBackendError(
                        f"{self.name} at {client.base_url}: prompt {index} failed after "
                        f"{attempt + 1} attempt(s): {what}: {msg}",
                        status=status,
                        attempts=attempt + 1,
                    ) from exc
                hinted = retry_after_s(exc)
                delay = (
                    min(hinted, self.backoff_max_s)
                    if hinted is not None
                    else backoff_delay_s(attempt, self.backoff_base_s, self.backoff_max_s, self._rng)
                )
                self._count(retries=1)
                logger.warning(
                    "%s: prompt %d attempt %d failed (%s: %s); retrying in %.2fs",
                    self.name, index, attempt + 1, type(exc).__name__, status, delay,
                )
                attempt += 1
                await asyncio.sleep(delay)
                continue
            self._count(
                requests=1, prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens
            )
            return result

    async def _request(
        self, client: openai.AsyncOpenAI, msgs: Messages, params: SamplingParams, index: int
    ) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
        }
        if params.temperature > 0 and params.top_p < 1.0:
            kwargs["top_p"] = params.top_p
        if params.seed is not None:
            kwargs["seed"] = params.seed + index
        if params.stop:
            kwargs["stop"] = list(params.stop[:MAX_API_STOP])
        extra = dict(self.extra_body)
        prefill = msgs[-1].get("role") == "assistant"
        if prefill and self.prefill == "completions":
            if extra:
                kwargs["extra_body"] = extra
            resp = await client.completions.create(prompt=self._render(msgs), **kwargs)
            choice = resp.choices[0]
            text = choice.text or ""
        else:
            if prefill:  # prefill == "continue"
                extra.update({"continue_final_message": True, "add_generation_prompt": False})
            if extra:
                kwargs["extra_body"] = extra
            resp = await client.chat.completions.create(
                messages=[{"role": m["role"], "content": m["content"]} for m in msgs], **kwargs
            )
            choice = resp.choices[0]
            text = (choice.message.content if choice.message is not None else None) or ""
        text, stopped = cut_at_stop(text, params.stop)
        usage = resp.usage
        prompt_tokens = int(usage.prompt_tokens) if usage is not None else 0
        completion_tokens = int(usage.completion_tokens) if usage is not None else 0
        finish = "length" if (choice.finish_reason == "length" and not stopped) else "stop"
        return Completion(text, prompt_tokens, completion_tokens, finish)

    def _render(self, msgs: Messages) -> str:
        from judgerl.backends.hf import render_chat

        with self._lock:
            if isinstance(self._tokenizer, (str, os.PathLike)):
                from transformers import AutoTokenizer

                self._tokenizer = AutoTokenizer.from_pretrained(str(self._tokenizer))
            tok = self._tokenizer
        return render_chat(tok, msgs)

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for k, v in deltas.items():
                setattr(self.usage, k, getattr(self.usage, k) + v)


__all__ = [
    "OpenAIBackend",
    "OpenAIBackendError",
    "UsageTotals",
    "backoff_delay_s",
    "is_retryable",
    "retry_after_s",
]
