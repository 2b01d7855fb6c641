"""Client of the reward server, and a TRL reward function that calls it.

>>> reward = remote_reward("http://127.0.0.1:8000")          # doctest: +SKIP
>>> GRPOTrainer(model=..., reward_funcs=[reward], ...)        # doctest: +SKIP
"""

from __future__ import annotations

import random
import time
import uuid
from typing import Any, Callable, Mapping, Sequence

import httpx

from judgerl.rewards._columns import completion_text, prompt_text

#: Statuses worth retrying: the server is overloaded or restarting.
RETRY_STATUS = frozenset({502, 503, 504})


class JudgeClientError(RuntimeError):
    """The server refused the request (4xx / 5xx after retries) or could not be reached.

    Attributes:
        status: HTTP status, or None when no response came back.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class JudgeClient:
    """Synchronous client of :func:`judgerl.serve.app.create_app` servers.

    Args:
        url: Server root, e.g. ``http://127.0.0.1:8000``.
        timeout_s: Per-request timeout in seconds (judging can be slow: default 300).
        max_retries: Retries on connection errors and 502/503/504 (capped exponential backoff with
            full jitter, starting at ``backoff_base_s``; a ``Retry-After`` header wins).
        transport: Optional httpx transport (tests).

    Every call carries an ``X-Request-ID`` that its retries reuse, so a retry after a read timeout
    is never judged twice.

    Raises (from every method):
        JudgeClientError: a 4xx answer (message = the server's ``error``), or 5xx / connection
            errors after retries.
    """

    def __init__(
        self,
        url: str,
        timeout_s: float = 300.0,
        max_retries: int = 3,
        backoff_base_s: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self._http = httpx.Client(base_url=self.url, timeout=timeout_s, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "JudgeClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        # One id per logical call, sent with every retry: the server answers a retry from the
        # first attempt (in flight or finished) instead of judging the same items again.
        headers = {"X-Request-ID": uuid.uuid4().hex}
        attempt = 0
        while True:
            try:
                r = self._http.request(method, path, json=payload, headers=headers)
            except httpx.TransportError as e:  # incl. read timeouts: the server may still be judging
                if attempt >= self.max_retries:
                    raise JudgeClientError(f"{self.url}{path}: {type(e).__name__}: {e}") from e
                delay = None
            else:
                if r.status_code < 400:
                    return r.json()
                if r.status_code not in RETRY_STATUS or attempt >= self.max_retries:
                    try:
                        msg = r.json().get("error", r.text)
                    except ValueError:
                        msg = r.text
                    raise JudgeClientError(f"{self.url}{path}: HTTP {r.status_code}: {msg}", r.status_code)
                hint = r.headers.get("retry-after")
                delay = float(hint) if hint and hint.replace(".", "", 1).isdigit() else None
            if delay is None:
                delay = random.uniform(0, min(30.0, self.backoff_base_s * 2**attempt))
            attempt += 1
            time.sleep(delay)

    def health(self) -> dict[str, Any]:
        """``GET /health``."""
        return self._call("GET", "/health")

    def judge_pairs(self, items: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
        """Judge ``[{prompt, response_a, response_b}, ...]``; one result dict per item (verdict, scores, valid, raw)."""
        return self._call("POST", "/v1/judge/pairwise", {"items": [dict(i) for i in items]})["results"]

    def judge_listwise(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Rank ``[{prompt, responses: [...]}, ...]`` (listwise servers); one result per item."""
        return self._call("POST", "/v1/judge/listwise", {"items": [dict(i) for i in items]})["results"]

    def score(self, items: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
        """Score ``[{prompt, response}, ...]`` (pointwise servers); one result dict per item."""
        return self._call("POST", "/v1/score", {"items": [dict(i) for i in items]})["results"]

    def rewards(
        self,
        prompts: Sequence[str],
        responses: Sequence[str],
        references: Sequence[str | None] | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/rewards``; returns the server's answer (``rewards``, ``valid``, ``scores``, ``n_invalid``).

        Raises:
            ValueError: the sequences differ in length.
        """
        if len(prompts) != len(responses) or (references is not None and len(references) != len(prompts)):
            raise ValueError(
                f"prompts ({len(prompts)}), responses ({len(responses)}) and references "
                f"({len(references) if references is not None else '-'}) must have the same length"
            )
        items = []
        for i, (p, r) in enumerate(zip(prompts, responses)):
            item = {"prompt": p, "response": r}
            if references is not None and references[i] is not None:
                item["reference"] = references[i]
            items.append(item)
        return self._call("POST", "/v1/rewards", {"items": items})


def remote_reward(
    url: str,
    *,
    reference_column: str | None = None,
    invalid_as_none: bool = False,
    timeout_s: float = 300.0,
    max_retries: int = 3,
    name: str = "judge_reward",
) -> Callable[..., list[float | None]]:
    """A TRL reward function (``fn(completions, prompts=None, **columns) -> list[float | None]``)
    that asks a judgerl reward server for one reward per completion.

    Args:
        url: Server root.
        reference_column: Dataset column holding a reference response (needed by pairwise servers).
        invalid_as_none: Return None where the judge's output could not be parsed (TRL then
            ignores that reward function for the sample) instead of the server's ``invalid_reward``.
        timeout_s, max_retries: See :class:`JudgeClient`.
        name: ``__name__`` of the function (TRL logs rewards under it).

    Returns:
        The reward function. It raises :class:`JudgeClientError` when the server fails, ``KeyError``
        when ``reference_column`` is missing from the batch, and ``ValueError`` without ``prompts``.
    """
    client = JudgeClient(url, timeout_s=timeout_s, max_retries=max_retries)

    def reward(completions: Sequence[Any], prompts: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
        if prompts is None:
            raise ValueError("remote_reward needs the prompts (TRL passes them as prompts=...)")
        refs = None
        if reference_column is not None:
            if reference_column not in kwargs:
                raise KeyError(f"reference column {reference_column!r} not in the batch; columns: {sorted(kwargs)}")
            refs = [completion_text(r) if r is not None else None for r in kwargs[reference_column]]
        out = client.rewards([prompt_text(p) for p in prompts], [completion_text(c) for c in completions], refs)
        if invalid_as_none:
            return [r if ok else None for r, ok in zip(out["rewards"], out["valid"])]
        return [float(r) for r in out["rewards"]]

    reward.__name__ = name
    reward.__qualname__ = name
    reward.client = client  # type: ignore[attr-defined]
    return reward
