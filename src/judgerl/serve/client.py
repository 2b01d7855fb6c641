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


#: Statuses worth retrying: the server is overloaded or restarting.
RETRY_STATUS = frozenset({502, 503, 504})

#: Per-item lists of a ``/v1/rewards`` answer (each must have one entry per item).
REWARD_KEYS = ("rewards", "valid", "scores", "errors", "reasons", "verdicts", "reasoning")


class JudgeClientError(RuntimeError):
    """The server refused the request (4xx / 5xx after retries) or could not be reached.

    Attributes:
        status: HTTP status, or None when no response came back.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def check_count(where: str, answer: Any, n: int, keys: Sequence[str] = ("rewards",)) -> None:
    """Refuse a server answer that does not hold exactly one value per item under each of ``keys``.

    A reward server that answers 1 reward for 3 completions must never reach a trainer as ``[0.9]``
    (a trainer may broadcast it, or pair it with the wrong completion).

    Args:
        where: The URL (for the message).
        answer: The decoded JSON answer.
        n: Items sent.
        keys: Per-item lists that must be present with ``n`` entries (absent optional ones are skipped
            when not the first key).

    Raises:
        JudgeClientError: a missing or non-list first key, or any listed key with the wrong length.
    """
    if not isinstance(answer, dict) or not isinstance(answer.get(keys[0]), list):
        raise JudgeClientError(f"{where}: the answer has no {keys[0]!r} list: {str(answer)[:200]}")
    for key in keys:
        value = answer.get(key)
        if value is None and key != keys[0]:
            continue
        if not isinstance(value, list) or len(value) != n:
            got = len(value) if isinstance(value, list) else type(value).__name__
            raise JudgeClientError(f"{where}: the server answered {got} {key} for {n} items; refusing a reward "
                                   "count that does not match the request")


class JudgeClient:
    """Synchronous client of :func:`judgerl.serve.app.create_app` servers.

    Args:
        url: Server root, e.g. ``http://127.0.0.1:8000``.
        timeout_s: Per-request timeout in seconds (judging can be slow: default 300).
        max_retries: Retries on connection errors and 502/503/504 (capped exponential backoff with
            full jitter, starting at ``backoff_base_s``; a ``Retry-After`` header wins).
        transport: Optional httpx transport (tests).
        max_retry_s: Keep retrying those failures until this many seconds have passed since the first
            attempt, even beyond ``max_retries`` (long enough for a server restart); None = count only.
        max_backoff_s: Longest wait between two attempts, in seconds.

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
        max_retry_s: float | None = None,
        max_backoff_s: float = 30.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.max_retry_s = max_retry_s
        self.max_backoff_s = max_backoff_s
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
        started = time.monotonic()

        def give_up() -> bool:
            if attempt < self.max_retries:
                return False
            return self.max_retry_s is None or time.monotonic() - started >= self.max_retry_s

        while True:
            try:
                r = self._http.request(method, path, json=payload, headers=headers)
            except httpx.TransportError as e:  # incl. read timeouts: the server may still be judging
                if give_up():
                    raise JudgeClientError(f"{self.url}{path}: {type(e).__name__}: {e} (after {attempt + 1} "
                                           f"attempts in {time.monotonic() - started:.0f} s)") from e
                delay = None
            else:
                if r.status_code < 400:
                    return r.json()
                if r.status_code not in RETRY_STATUS or give_up():
                    try:
                        msg = r.json().get("error", r.text)
                    except ValueError:
                        msg = r.text
                    raise JudgeClientError(f"{self.url}{path}: HTTP {r.status_code}: {msg}", r.status_code)
                hint = r.headers.get("retry-after")
                plain = (hint or "").replace(".", "", 1)
                delay = float(hint) if plain.isascii() and plain.isdigit() else None  # "²" is a digit, not a number
            if delay is None:
                delay = random.uniform(0, min(self.max_backoff_s, self.backoff_base_s * 2 ** min(attempt, 30)))
            if self.max_retry_s is not None:  # never sleep past the retry budget
                delay = min(delay, max(0.0, self.max_retry_s - (time.monotonic() - started)) + 0.01)
            attempt += 1
            time.sleep(delay)

    def health(self) -> dict[str, Any]:
        """``GET /health``."""
        return self._call("GET", "/health")

    def _results(self, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        out = self._call("POST", path, body)
        check_count(f"{self.url}{path}", out, len(body["items"]), ("results",))
        return out["results"]

    def judge_pairs(self, items: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
        """Judge ``[{prompt, response_a, response_b}, ...]``; one result dict per item (verdict, scores, valid, raw)."""
        return self._results("/v1/judge/pairwise", {"items": [dict(i) for i in items]})

    def judge_listwise(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Rank ``[{prompt, responses: [...]}, ...]`` (listwise servers); one result per item."""
        return self._results("/v1/judge/listwise", {"items": [dict(i) for i in items]})

    def score(self, items: Sequence[Mapping[str, str]], score_mode: str | None = None) -> list[dict[str, Any]]:
        """Score ``[{prompt, response}, ...]`` (pointwise servers); one result dict per item.
        ``score_mode``: ``parsed`` / ``mean`` / ``expected`` (None: the server's default)."""
        body: dict[str, Any] = {"items": [dict(i) for i in items]}
        if score_mode is not None:
            body["score_mode"] = score_mode
        return self._results("/v1/score", body)

    def rewards(
        self,
        prompts: Sequence[str],
        responses: Sequence[str],
        references: Sequence[str | None] | None = None,
        score_mode: str | None = None,
        retry_failed: int = 0,
        rubrics: Sequence[str | None] | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/rewards``; returns the server's answer (``rewards``, ``valid``, ``scores``, ``n_invalid``,
        ``reasons``; pointwise: ``score_mode``). ``score_mode`` as in :meth:`score`.

        ``retry_failed`` > 0: items the server failed to judge (reason ``generation_failed``: a backend
        error, a server shutting down mid-batch) are requested again, as a new request, up to that many
        rounds; items still failing then raise :class:`JudgeClientError` -- they never come back as a
        silent invalid reward. ``rubrics``: a per-item rubric shown to the judge (None entries: none).

        Raises:
            ValueError: the sequences differ in length.
            JudgeClientError: the answer does not hold one reward (and validity, score, ...) per item.
        """
        if rubrics is not None and len(rubrics) != len(prompts):
            raise ValueError(f"rubrics ({len(rubrics)}) and prompts ({len(prompts)}) must have the same length")
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
            if rubrics is not None and rubrics[i] is not None:
                item["rubric"] = rubrics[i]
            items.append(item)
        body: dict[str, Any] = {"items": items}
        if score_mode is not None:
            body["score_mode"] = score_mode
        out = self._call("POST", "/v1/rewards", body)
        check_count(f"{self.url}/v1/rewards", out, len(items), REWARD_KEYS)
        for round_ in range(retry_failed + 1):
            failed = [i for i, r in enumerate(out.get("reasons") or []) if r == "generation_failed"]
            if not failed:
                return out
            if round_ == retry_failed:
                first = next((out["errors"][i] for i in failed if out.get("errors") and out["errors"][i]), "")
                raise JudgeClientError(f"{self.url}/v1/rewards: {len(failed)} of {len(items)} items could not be "
                                       f"judged after {retry_failed} retries ({first})")
            time.sleep(random.uniform(0, min(self.max_backoff_s, self.backoff_base_s * 2**round_)))
            again = self._call("POST", "/v1/rewards", body | {"items": [items[i] for i in failed]})
            check_count(f"{self.url}/v1/rewards", again, len(failed), REWARD_KEYS)
            for k, i in enumerate(failed):
                for key in ("rewards", "valid", "scores", "errors", "reasons"):
                    if key in out and key in again:
                        out[key][i] = again[key][k]
            out["n_invalid"] = out["valid"].count(False)
        return out


def remote_reward(
    url: str,
    *,
    reference_column: str | None = None,
    invalid_as_none: bool = False,
    timeout_s: float = 300.0,
    max_retries: int = 3,
    name: str = "judge_reward",
    score_mode: str | None = None,
    max_retry_s: float | None = None,
    retry_failed: int = 2,
    rubrics: Mapping[str, str] | None = None,
) -> Callable[..., list[float | None]]:
    """A TRL reward function (``fn(completions, prompts=None, **columns) -> list[float | None]``)
    that asks a judgerl reward server for one reward per completion.

    Args:
        url: Server root.
        reference_column: Dataset column holding a reference response (needed by pairwise servers).
        invalid_as_none: Return None where the judge's output could not be parsed (TRL then
            ignores that reward function for the sample) instead of the server's ``invalid_reward``.
        timeout_s, max_retries, max_retry_s: See :class:`JudgeClient` (``max_retry_s``: keep retrying a
            server that is down or restarting this long, in seconds).
        name: ``__name__`` of the function (TRL logs rewards under it).
        score_mode: ``parsed`` / ``mean`` / ``expected`` for pointwise servers (None: the server's).
        retry_failed: Rounds of re-requesting items the server failed to judge (:meth:`JudgeClient.rewards`).
        rubrics: Prompt text -> its rubric, sent with every item of that prompt (rubric-conditioned judging).

    Returns:
        A :class:`judgerl.rewards.judge_reward.JudgeReward` (its ``last`` holds the latest batch's scores and score
        mode; ``client`` the :class:`JudgeClient`). It raises :class:`JudgeClientError` when the server fails,
        ``KeyError`` when ``reference_column`` is missing from the batch, and ``ValueError`` without ``prompts``.
    """
    from judgerl.rewards.judge_reward import JudgeReward, server_fetch

    client = JudgeClient(url, timeout_s=timeout_s, max_retries=max_retries, max_retry_s=max_retry_s)
    reward = JudgeReward(server_fetch(client, reference_column=reference_column, score_mode=score_mode,
                                      retry_failed=retry_failed, rubrics=rubrics),
                         invalid_as_none=invalid_as_none, name=name)
    reward.client = client  # type: ignore[attr-defined]
    return reward
