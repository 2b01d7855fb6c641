"""The one small interface every text-generation backend implements."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from judgerl.types import Completion, Messages


@dataclass(frozen=True)
class SamplingParams:
    """How to generate.

    Attributes:
        max_new_tokens: Upper bound on generated tokens per completion.
        temperature: 0 means greedy decoding; > 0 samples.
        top_p: Nucleus sampling mass (only when sampling).
        seed: Seed for sampling. Backends derive one seed per prompt from it (see
            :func:`prompt_seed`), so the same seed and prompt give the same output whatever
            else is in the batch. None: a fresh random seed per call.
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


@runtime_checkable
class Backend(Protocol):
    """Prompts in, completions out.

    ``generate`` takes a batch of chat prompts (see :data:`judgerl.types.Messages`; a trailing
    assistant message is continued, not closed) and returns one :class:`Completion` per prompt,
    in order. Implementations batch internally as they see fit.
    """

    name: str

    def generate(self, prompts: Sequence[Messages], params: SamplingParams) -> list[Completion]: ...


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


def prompt_seed(seed: int, text: str, occurrence: int = 0) -> int:
    """A 63-bit sampling seed for one prompt, independent of the other prompts in the call.

    Derived by SHA-256 from the call's ``seed``, the rendered prompt ``text`` and
    ``occurrence`` (0 for the first copy of this text in the call, 1 for the second, ...), so
    repeated copies of one prompt (test-time scaling: N samples of a judgment) get different
    streams, and the same prompt gives the same completion whatever it is batched with.
    """
    h = hashlib.sha256(f"{seed}\x00{occurrence}\x00{text}".encode("utf-8")).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)
