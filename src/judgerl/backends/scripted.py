"""A backend that replays given outputs: for fast, deterministic tests and demos."""

from __future__ import annotations

import itertools
import threading
from typing import Callable, Iterable, Sequence

from judgerl.backends.base import SamplingParams, cut_at_stop
from judgerl.types import Completion, Messages


class ScriptedBackend:
    """Replays scripted outputs instead of running a model.

    Args:
        outputs: Either an iterable of strings returned in order (cycled when ``cycle=True``), or a
            callable ``f(messages, params) -> str`` computing the output from the prompt.
        cycle: Cycle through ``outputs`` forever instead of raising when they run out.

    Token counts are whitespace-split word counts (a stand-in for a tokenizer).

    Raises:
        IndexError: from ``generate`` when a finite script runs out of outputs.
    """

    def __init__(
        self,
        outputs: Iterable[str] | Callable[[Messages, SamplingParams], str],
        cycle: bool = False,
        name: str = "scripted",
    ) -> None:
        self.name = name
        self._fn: Callable[[Messages, SamplingParams], str] | None = None
        if callable(outputs):
            self._fn = outputs
            self._it = None
        else:
            outs = list(outputs)
            self._it = itertools.cycle(outs) if cycle else iter(outs)
        self._lock = threading.Lock()
        self.calls: list[list[Messages]] = []

    def generate(self, prompts: Sequence[Messages], params: SamplingParams) -> list[Completion]:
        self.calls.append(list(prompts))
        result = []
        for msgs in prompts:
            if self._fn is not None:
                raw = self._fn(msgs, params)
            else:
                with self._lock:
                    try:
                        raw = next(self._it)  # type: ignore[arg-type]
                    except StopIteration:
                        raise IndexError("ScriptedBackend ran out of scripted outputs") from None
            text, stopped = cut_at_stop(raw, params.stop)
            words = text.split()
            finish = "stop"
            if len(words) > params.max_new_tokens:
                text = " ".join(words[: params.max_new_tokens])
                finish = "length"
            prompt_words = sum(len(str(m.get("content", "")).split()) for m in msgs)
            result.append(Completion(text, prompt_words, min(len(words), params.max_new_tokens), finish))
        return result
