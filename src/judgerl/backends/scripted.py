"""A backend that replays given outputs: for fast, deterministic tests and demos."""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import replace
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from judgerl.backends.base import (Backend, OnResult, SamplingParams, cut_at_stop, derive_seed, progress_listener,
                                   too_long_message)
from judgerl.types import Completion, Messages

#: A scripted output: the text, or a mapping ``{"text": str | None, "finish_reason": ..., "error": ...}``
#: (``text: null`` simulates an API's null content; ``finish_reason`` e.g. ``"content_filter"`` or
#: ``"error"`` simulates a failed request).
ScriptItem = str | Mapping[str, Any]
ScriptFn = Callable[[Messages, SamplingParams], ScriptItem]


class ScriptedBackend(Backend):
    """Replays scripted outputs instead of running a model.

    Args:
        outputs: Either an iterable of :data:`ScriptItem` or a callable ``f(messages, params) ->
            ScriptItem`` computing the output from the prompt (``params.seed`` is then the
            prompt's own seed).
        cycle: Order replay only: cycle through ``outputs`` forever instead of raising when they
            run out.
        name: The backend's model name.
        replay: ``"order"`` (default for a list): the n-th prompt generated gets the n-th output,
            whatever it is. ``"content"``: a prompt gets ``outputs[derive_seed(prompt, seed) % n]``
            -- a pure function of the prompt's messages and seed, so a resumed run or another batch
            size replays exactly the same outputs (what ``scripted/<file>`` models use).
        context_length: Simulated context window in whitespace-separated words (None = unlimited);
            longer prompts plus ``max_new_tokens`` get ``finish_reason="prompt_too_long"``.
        stepwise: Simulate a continuous-batching engine's timing: every prompt of a call starts at
            once, then each decode step adds one word to every unfinished row (reported to the
            :func:`~judgerl.backends.base.progress_listener` as one ``on_tokens`` call per step)
            and a row's ``on_result`` comes after its last word, so results arrive shortest first
            and every row of similar length finishes near the end. The completions are the same
            as without it. ``on_step``: called with the step number after each step's report
            (tests look at a progress display there).

    Token counts are whitespace-split word counts (a stand-in for a tokenizer). Progress goes to
    the caller's listener: without ``stepwise``, one ``on_started`` and one ``on_tokens`` per prompt.

    Raises:
        ValueError: unknown ``replay``, or ``replay="content"`` with no outputs.
        IndexError: from ``generate`` when a finite order-replay script runs out of outputs.
    """

    def __init__(
        self,
        outputs: Iterable[ScriptItem] | ScriptFn,
        cycle: bool = False,
        name: str = "scripted",
        replay: Literal["order", "content"] = "order",
        context_length: int | None = None,
        stepwise: bool = False,
        on_step: Callable[[int], None] | None = None,
    ) -> None:
        if replay not in ("order", "content"):
            raise ValueError(f"replay must be 'order' or 'content', got {replay!r}")
        self.name = name
        self.replay = replay
        self.context_length = context_length
        self.stepwise = stepwise
        self.on_step = on_step
        self._fn: ScriptFn | None = None
        self._outs: list[ScriptItem] = []
        self._it: Any = None
        if callable(outputs):
            self._fn = outputs
        else:
            self._outs = list(outputs)
            if replay == "content" and not self._outs:
                raise ValueError("ScriptedBackend(replay='content') needs at least one output")
            self._it = itertools.cycle(self._outs) if cycle else iter(self._outs)
        self._lock = threading.Lock()
        self.calls: list[list[Messages]] = []

    def _item(self, msgs: Messages, params: SamplingParams) -> ScriptItem:
        if self._fn is not None:
            return self._fn(msgs, params)
        if self.replay == "content":
            key = json.dumps([dict(m) for m in msgs], sort_keys=True, ensure_ascii=False)
            return self._outs[derive_seed(key, params.seed) % len(self._outs)]
        with self._lock:
            try:
                return next(self._it)
            except StopIteration:
                raise IndexError("ScriptedBackend ran out of scripted outputs") from None

    def generate(
        self,
        prompts: Sequence[Messages],
        params: SamplingParams,
        *,
        seeds: Sequence[int] | None = None,
        on_result: OnResult | None = None,
    ) -> list[Completion]:
        """One completion per prompt (see the class docstring); ``seeds`` become ``params.seed``.

        Raises:
            ValueError: ``seeds`` of the wrong length; a scripted item of the wrong type.
            IndexError: an order-replay script ran out.
        """
        if seeds is not None and len(seeds) != len(prompts):
            raise ValueError(f"got {len(seeds)} seeds for {len(prompts)} prompts")
        self.calls.append(list(prompts))
        listener = progress_listener()
        result = []
        for i, msgs in enumerate(prompts):
            p = params if seeds is None else replace(params, seed=int(seeds[i]))
            prompt_words = sum(len(str(m.get("content", "")).split()) for m in msgs)
            if self.context_length is not None and prompt_words + p.max_new_tokens > self.context_length:
                msg = too_long_message(self.name, prompt_words, p.max_new_tokens, self.context_length)
                c = Completion("", prompt_words, 0, "prompt_too_long", error=msg)
            else:
                c = self._complete(self._item(msgs, p), p, prompt_words)
            result.append(c)
            if self.stepwise:
                continue
            if listener is not None and c.finish_reason != "prompt_too_long":
                listener.on_started(1, prompt_words)
                listener.on_tokens(c.completion_tokens)
            if on_result is not None:
                on_result(i, c)
        if self.stepwise:
            self._replay_steps(result, listener, on_result)
        return result

    def _replay_steps(self, result: list[Completion], listener: Any, on_result: OnResult | None) -> None:
        """Report ``result`` as a continuous-batching engine would (see ``stepwise``)."""
        running = [i for i, c in enumerate(result) if c.finish_reason != "prompt_too_long"]
        for i, c in enumerate(result):
            if c.finish_reason == "prompt_too_long" and on_result is not None:
                on_result(i, c)
        if listener is not None and running:
            listener.on_started(len(running), sum(result[i].prompt_tokens for i in running))
        step = 0
        while running:
            step += 1
            if listener is not None:
                listener.on_tokens(len(running))
            if self.on_step is not None:
                self.on_step(step)
            for i in [i for i in running if result[i].completion_tokens <= step]:
                running.remove(i)
                if on_result is not None:
                    on_result(i, result[i])

    @staticmethod
    def _complete(item: ScriptItem, params: SamplingParams, prompt_words: int) -> Completion:
        if isinstance(item, Mapping):
            raw = item.get("text")
            finish = item.get("finish_reason", "stop")
            error = item.get("error")
            if raw is None:  # an API's null content: nothing generated
                return Completion("", prompt_words, 0, finish, error=error)
        elif isinstance(item, str):
            raw, finish, error = item, "stop", None
        else:
            raise ValueError(f"a scripted output must be a str or a mapping, got {type(item).__name__}")
        text, stopped = cut_at_stop(str(raw), params.stop)
        words = text.split()
        if len(words) > params.max_new_tokens:
            text = " ".join(words[: params.max_new_tokens])
            finish = "length"
        return Completion(text, prompt_words, min(len(words), params.max_new_tokens), finish, error=error)
