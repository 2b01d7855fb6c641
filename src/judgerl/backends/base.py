"""The one small interface every text-generation backend implements."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol, Sequence, runtime_checkable

from judgerl.backends.scores import ExpectedScoreUnavailable, ScoreReader
from judgerl.types import Completion, Messages


@dataclass(frozen=True)
class SamplingParams:
    """How to generate.

    Attributes:
        max_new_tokens: Upper bound on generated tokens per completion.
        temperature: 0 means greedy decoding; > 0 samples.
        top_p: Nucleus sampling mass (only when sampling).
        seed: Base seed for sampling when a call passes no per-prompt ``seeds`` (backends then derive
            one seed per prompt from it and the prompt text, see :func:`resolve_seeds`). None: fresh
            random seeds. Callers that need reproducible results pass ``seeds`` instead.
        stop: Stop strings; generation ends at the first one and it is cut from the text.
    """

    max_new_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


#: Called by a backend as soon as the completion of prompt ``index`` is final (progress bars,
#: streaming writers). May be called from a worker thread; must be cheap and must not raise.
OnResult = Callable[[int, Completion], None]


class ProgressListener(Protocol):
    """Receives a generation's progress while it runs (progress bars, throughput logs).

    A backend reports to the listener of :func:`reporting_progress` (see :func:`progress_listener`)
    as cheaply as it can: once per admitted prompt and once per decode step, never per token per
    row. Calls may come from a worker thread; they must be cheap and must not raise. A backend
    that cannot see tokens (a remote API) reports nothing and progress falls back to finished
    completions (``on_result``).
    """

    def on_started(self, n_prompts: int, prompt_tokens: int) -> None:
        """``n_prompts`` prompts started generating; ``prompt_tokens`` of their tokens were
        prefilled now (tokens reused from a prefix cache are not counted)."""

    def on_tokens(self, n_new: int) -> None:
        """``n_new`` new tokens were generated, summed over the rows of one decode step."""


_PROGRESS: ContextVar[ProgressListener | None] = ContextVar("judgerl_progress", default=None)


@contextmanager
def reporting_progress(listener: ProgressListener | None) -> Iterator[None]:
    """Within the block, backends called from this context report to ``listener``.

    A context variable rather than a ``generate`` argument, so every backend (and every test fake)
    keeps the same ``generate`` signature and one that never reports still works; it follows the
    caller into ``asyncio.to_thread`` workers (the reward server's batches).
    """
    token = _PROGRESS.set(listener)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def progress_listener() -> ProgressListener | None:
    """The listener of the enclosing :func:`reporting_progress` block, or None (backends call it
    once per ``generate`` call and skip reporting when None)."""
    return _PROGRESS.get()


@runtime_checkable
class Backend(Protocol):
    """Prompts in, completions out.

    ``generate`` takes a batch of chat prompts (see :data:`judgerl.types.Messages`; a trailing
    assistant message is continued, not closed) and returns one :class:`Completion` per prompt,
    in order. Implementations batch internally as they see fit, but a prompt's completion depends
    only on the prompt, ``params`` and its seed, never on the other prompts of the call.

    Keyword arguments every judgerl backend accepts:

    * ``seeds``: one sampling seed per prompt (ints; see :func:`derive_seed`). When given they
      replace ``params.seed``. This is how results stay identical whatever the batch size or the
      point where a resumed run restarted.
    * ``on_result``: a callback ``f(index, completion)`` called once per prompt as soon as its
      completion is final (see :data:`OnResult`).

    Progress while generating (prompts started, tokens per decode step) goes to the
    :class:`ProgressListener` of :func:`reporting_progress`, when the backend can see it.

    Failures of one prompt (an API error after retries, a filtered answer, a prompt that does not
    fit the context) are returned as that prompt's Completion with ``finish_reason`` ``error`` /
    ``content_filter`` / ``prompt_too_long`` and ``error`` set; ``generate`` raises only for
    failures of the whole call (bad arguments, a model that cannot run, authentication).

    Attributes:
        name: The model name as given to :func:`judgerl.backends.load_backend` (``hf/...``).
        context_length: The model's context window in tokens, or None when unknown (remote APIs).
        tokenizer: The transformers tokenizer the backend generates with (an hf / vllm backend's), which
            counts the token offsets of a trajectory's segments; None (the default) for backends without
            one (OpenAI, scripted: offsets then count whitespace tokens).
    """

    name: str
    tokenizer: Any = None

    def generate(
        self,
        prompts: Sequence[Messages],
        params: SamplingParams,
        *,
        seeds: Sequence[int] | None = None,
        on_result: OnResult | None = None,
    ) -> list[Completion]: ...

    def score_reader(self) -> ScoreReader:
        """The reader of token probabilities at a prefilled position, for the expected score
        (:mod:`judgerl.judge.expected`). Optional: backends that subclass :class:`Backend` inherit
        this default, which raises.

        Raises:
            ExpectedScoreUnavailable: this backend cannot give token probabilities (the message names it).
        """
        raise ExpectedScoreUnavailable(
            f"backend {self.name!r} ({type(self).__name__}) cannot give token probabilities; the expected "
            "score needs an hf, openai or vllm backend")


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` at the earliest stop string. Returns (text, whether a stop string was found)."""
    best = -1
    for s in stop:
        if not s:
            continue
        i = text.find(s)
        if i != -1 and (best == -1 or i < best):
            best = i
    if best == -1:
        return text, False
    return text[:best], True


def derive_seed(*parts: object) -> int:
    """A 63-bit seed that is a pure function of ``parts`` (SHA-256 of their ``str``, NUL-separated).

    The one seed rule of judgerl: a sample's seed comes from what the sample *is* (run seed, pair
    id, order, sample index, tool round), never from the batch it happens to be generated in, so
    results are identical at any batch size, thread count or resume point. Identical across
    processes and machines (no salted ``hash``).
    """
    h = hashlib.sha256("\x00".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)


def resolve_seeds(texts: Sequence[str], params: SamplingParams, seeds: Sequence[int] | None) -> list[int] | None:
    """Per-prompt sampling seeds for one ``generate`` call.

    Args:
        texts: The rendered prompts (or any per-prompt identity string), one per prompt.
        params: ``params.seed`` is used when ``seeds`` is None.
        seeds: Explicit per-prompt seeds, or None.

    Returns:
        None for greedy decoding (``temperature == 0``); else one seed per prompt: ``seeds``; or
        ``derive_seed(params.seed, text, k)`` for the k-th copy of a text in the call (repeated
        copies get different streams); or, when neither is set, fresh random seeds.

    Raises:
        ValueError: ``len(seeds) != len(texts)`` or a seed that is not a non-negative int.
    """
    if seeds is not None:
        seeds = list(seeds)
        if len(seeds) != len(texts):
            raise ValueError(f"got {len(seeds)} seeds for {len(texts)} prompts")
        for i, s in enumerate(seeds):
            if isinstance(s, bool) or not isinstance(s, int) or s < 0:
                raise ValueError(f"seeds[{i}] must be a non-negative int, got {s!r}")
    if params.temperature == 0:
        return None
    if seeds is not None:
        return seeds
    base = params.seed if params.seed is not None else random.SystemRandom().getrandbits(62)
    seen: Counter[str] = Counter()
    out = []
    for t in texts:
        out.append(derive_seed(base, seen[t], t))
        seen[t] += 1
    return out


def too_long_message(name: str, prompt_tokens: int, max_new_tokens: int, context: int) -> str:
    """The error of a prompt that does not fit: names both numbers and the context window."""
    return (
        f"prompt has {prompt_tokens} tokens + max_new_tokens {max_new_tokens} = {prompt_tokens + max_new_tokens} "
        f"> context {context} of {name}; shorten the texts or lower --max-new-tokens"
    )
