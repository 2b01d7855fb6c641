"""The tool-integrated reasoning (TIR) judging loop.

TIR-Judge (Xu et al., 2025, "Incentivizing Agentic Reasoning in LLM Judges via Tool-Integrated
Reinforcement Learning", Sec. 3) writes a judgment as a trajectory r1, c1, o1, …, rk, ck, ok, answer:
reasoning ``r_i``, a python block ``c_i``, its interpreter output ``o_i``; at most 3 tool rounds, then
the final answer. :func:`run_tool_loop` produces such trajectories for a *batch* of prompts:

* every round, all unfinished prompts go to the backend in ONE ``generate`` call; each continues its
  own assistant message (prefill: the prompt plus ``{"role": "assistant", "content": text so far}``);
* each trajectory samples with its own seed (``seeds``; round ``r`` uses :func:`round_seed`), so it
  does not depend on the other trajectories of the batch;
* generation uses the extra stop string ```` ```output ````. Why: the end of a python block (a bare
  ```` ``` ```` line) cannot be told apart from the start of another block by a stop string, while a
  model that has seen TIR trajectories writes ```` ```output ```` right after its code, i.e. exactly
  when it would start to *hallucinate* interpreter output. The loop then finds the first complete
  python block in the new text itself (:func:`~judgerl.text.codeblocks.find_new_python_block`)
  and drops everything generated after its closing fence. A block may open in the prompt's own
  assistant prefill (e.g. a prefill ending in ```` ```python\n ````, used to nudge small models
  into writing code); its ``code`` segment then starts at the beginning of the completion;
* the blocks of one round run in the sandbox in parallel threads; each observation is appended as
  ```` ```output\\n…\\n``` ```` (stdout capped at ``output_cap`` characters, errors cut to their last
  line; fences escaped and judge tags neutralised so printed text cannot close the block or write a
  verdict) and the trajectory continues in the next round;
* a trajectory stops when its new text holds no complete python block (the final answer), or when
  generation stopped for length without a block. After ``max_rounds`` executed blocks the last
  observation says the tool budget is spent and one final generation follows in which code is
  **not** executed.

``max_new_tokens`` of ``params`` applies to each generation round, so a trajectory has at most
``(max_rounds + 1) * max_new_tokens`` generated tokens plus the inserted tool output.

Token offsets of the segments (model / code / tool) index the tokens of the whole completion text
(everything after the prompt) as tokenized by the judge's tokenizer -- ``backend.tokenizer`` for
:class:`~judgerl.backends.hf.HFBackend`, or the ``tokenizer`` argument -- using the fast tokenizer's
offset mapping; without a tokenizer they count whitespace-separated words. Training uses them to
mask ``tool`` segments out of the loss (TIR-Judge: tool outputs are not trained on).
"""

from __future__ import annotations

import logging
import os
import re
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from judgerl.backends.base import Backend, SamplingParams, derive_seed
from judgerl.backends.chat import continue_prompt, defuse_text, prefill_of
from judgerl.text.codeblocks import MAX_TOOL_ROUNDS, find_new_python_block, format_observation, output_block
from judgerl.tools._sandbox_base import Executor
from judgerl.tools.namespace import namespaced_code
from judgerl.types import Messages, Segment, SegmentKind, Trajectory

logger = logging.getLogger(__name__)

#: Stop string added to every generation round (see the module docstring).
OUTPUT_FENCE = "```output"
#: Appended after the observation of the last allowed tool call.
TOOLS_EXHAUSTED_NOTE = (
    "\nThe tool budget is used up: further code will not be executed. "
    "Give your final answer now.\n"
)
#: Default cap on the stdout part of one observation, in characters.
DEFAULT_OUTPUT_CAP = 1024

_WORD = re.compile(r"\S+")


@dataclass
class _State:
    """Mutable per-prompt state while the loop runs (frozen into a Trajectory at the end)."""

    pieces: list[tuple[SegmentKind, str]] = field(default_factory=list)
    tool_calls: int = 0
    tool_errors: int = 0
    prompt_tokens: int = 0
    finish_reason: str = "stop"
    error: str | None = None
    done: bool = False

    @property
    def text(self) -> str:
        return "".join(t for _, t in self.pieces)

    def add(self, kind: SegmentKind, text: str) -> None:
        if text:
            self.pieces.append((kind, text))


def token_positions(text: str, char_positions: Sequence[int], tokenizer: Any | None = None) -> list[int]:
    """Token index of each character position of ``text``.

    The index of position ``p`` is the number of tokens that start before ``p`` (so a token that
    straddles ``p`` belongs to the piece where it starts). Tokens come from ``tokenizer`` (a
    transformers tokenizer; offset mapping when it is a fast tokenizer, else the length of the
    encoded prefix) or, when ``tokenizer`` is None, from whitespace splitting.

    Args:
        text: The full completion text.
        char_positions: Non-decreasing positions in ``[0, len(text)]``.
        tokenizer: Optional transformers tokenizer.

    Returns:
        One non-decreasing token index per position.
    """
    if tokenizer is None:
        starts = [m.start() for m in _WORD.finditer(text)]
    elif getattr(tokenizer, "is_fast", False):
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        starts = [s for s, _ in enc["offset_mapping"]]
    else:
        return [len(tokenizer.encode(text[:p], add_special_tokens=False)) for p in char_positions]
    out, k = [], 0
    for p in char_positions:
        while k < len(starts) and starts[k] < p:
            k += 1
        out.append(k)
    # Fast tokenizers may trim offsets; keep the result monotone and covering every token at the end.
    if char_positions and char_positions[-1] >= len(text):
        out[-1] = len(starts)
    return out


def build_trajectory(
    pieces: Sequence[tuple[SegmentKind, str]],
    tokenizer: Any | None = None,
    *,
    tool_calls: int = 0,
    tool_errors: int = 0,
    prompt_tokens: int = 0,
    finish_reason: str = "stop",
    error: str | None = None,
    prefill: str = "",
) -> Trajectory:
    """Freeze ``(kind, text)`` pieces into a :class:`Trajectory` with token offsets.

    Segments are contiguous: ``segments[i].token_end == segments[i + 1].token_start`` and the
    first starts at 0. See :func:`token_positions` for how tokens are counted. ``prefill``: the
    assistant prefill the pieces continue (:attr:`Trajectory.prefill`; not tokenized here).
    """
    text = "".join(t for _, t in pieces)
    bounds, pos = [0], 0
    for _, t in pieces:
        pos += len(t)
        bounds.append(pos)
    toks = token_positions(text, bounds, tokenizer)
    segments = tuple(
        Segment(kind, t, toks[i], toks[i + 1]) for i, (kind, t) in enumerate(pieces)
    )
    return Trajectory(
        segments=segments,
        tool_calls=tool_calls,
        tool_errors=tool_errors,
        prompt_tokens=prompt_tokens,
        finish_reason=finish_reason,  # type: ignore[arg-type]
        error=error,
        prefill=prefill,
    )


def backend_tokenizer(backend: Backend) -> Any | None:
    """The tokenizer segment token offsets are counted with: an hf backend's transformers tokenizer;
    None for backends without one (OpenAI, scripted: offsets then count whitespace tokens)."""
    return backend.tokenizer


def _resolve_tokenizer(backend: Backend, tokenizer: Any | None) -> Any | None:
    if tokenizer == "whitespace":
        return None
    if tokenizer is not None:
        return tokenizer
    return backend_tokenizer(backend)


def _round_params(params: SamplingParams) -> SamplingParams:
    stop = tuple(params.stop)
    if OUTPUT_FENCE not in stop:
        stop = stop + (OUTPUT_FENCE,)
    return replace(params, stop=stop)


def round_seed(seed: int, round_idx: int) -> int:
    """The sampling seed of tool round ``round_idx`` of a trajectory whose seed is ``seed``
    (round 0 uses ``seed`` itself; see :func:`judgerl.backends.base.derive_seed`)."""
    return seed if round_idx == 0 else derive_seed(seed, "round", round_idx)


def run_tool_loop(
    backend: Backend,
    prompts: Sequence[Messages],
    params: SamplingParams,
    sandbox: Executor,
    max_rounds: int = MAX_TOOL_ROUNDS,
    tokenizer: Any | None = None,
    *,
    seeds: Sequence[int] | None = None,
    on_done: Callable[[int, Trajectory], None] | None = None,
    output_cap: int = DEFAULT_OUTPUT_CAP,
    max_parallel_tools: int | None = None,
    namespaces: Sequence[Mapping[str, Any] | None] | None = None,
) -> list[Trajectory]:
    """Run tool-integrated judging for a batch of prompts; all prompts advance together.

    Args:
        backend: Any :class:`~judgerl.backends.Backend`; called once per round with every
            unfinished prompt (at most ``max_rounds + 1`` calls in total).
        prompts: Chat prompts (e.g. from ``protocol.build(..., tools=True)``). A trailing assistant
            message is continued.
        params: Sampling parameters for each round; ```` ```output ```` is added to ``stop``.
            ``max_new_tokens`` is per round.
        sandbox: Object with ``run(code: str) -> ExecResult`` (see
            :func:`judgerl.tools.get_sandbox`); called from worker threads.
        max_rounds: Most code blocks executed per trajectory (TIR-Judge: 3). 0 disables execution.
        tokenizer: Tokenizer for the segment token offsets; default ``backend.tokenizer`` when the
            backend has one, else whitespace words. Pass ``"whitespace"`` to force word counts.
        seeds: One sampling seed per trajectory; round ``r`` samples with :func:`round_seed`, so a
            trajectory does not depend on which others share its rounds. None: the backend
            derives seeds from ``params.seed``.
        on_done: Called ``f(index, trajectory)`` as soon as a trajectory is finished.
        output_cap: Most characters of stdout kept per observation (head kept, a note says how
            many were cut).
        max_parallel_tools: Threads running sandboxed code at once (default: CPU count).
        namespaces: One response namespace per prompt (:func:`judgerl.tools.namespace.response_namespace`;
            None for a prompt without one): each executed block of that trajectory runs with those
            names defined (:func:`judgerl.tools.namespace.namespaced_code`). The trajectory records
            only the judge's code and its output. None: every block runs as written.

    Returns:
        One :class:`Trajectory` per prompt, in order: segments ``model`` / ``code`` / ``tool``
        with contiguous token offsets, ``tool_calls`` (blocks executed), ``tool_errors`` (blocks
        that raised or timed out), ``prompt_tokens`` of the first round, and the finish reason
        (and error) of the last generation. A failed generation (``error``, ``prompt_too_long``,
        ``content_filter``) ends its trajectory.

    Raises:
        ValueError: ``max_rounds`` < 0, ``output_cap`` < 1, ``sandbox`` is None, or ``seeds`` /
            ``namespaces`` of the wrong length.
        RuntimeError: the backend returned a different number of completions than prompts.
    """
    if max_rounds < 0:
        raise ValueError(f"max_rounds must be >= 0, got {max_rounds}")
    if output_cap < 1:
        raise ValueError(f"output_cap must be >= 1, got {output_cap}")
    if sandbox is None:
        raise ValueError("run_tool_loop needs a sandbox: pass judgerl.tools.get_sandbox()")
    if seeds is not None and len(seeds) != len(prompts):
        raise ValueError(f"got {len(seeds)} seeds for {len(prompts)} prompts")
    if namespaces is not None and len(namespaces) != len(prompts):
        raise ValueError(f"got {len(namespaces)} namespaces for {len(prompts)} prompts")
    tok = _resolve_tokenizer(backend, tokenizer)
    states = [_State() for _ in prompts]
    workers = max_parallel_tools or os.cpu_count() or 2
    rparams = _round_params(params)
    sampled = seeds is not None and params.temperature > 0

    def freeze(i: int) -> Trajectory:
        s = states[i]
        return build_trajectory(s.pieces, tok, tool_calls=s.tool_calls, tool_errors=s.tool_errors,
                                prompt_tokens=s.prompt_tokens, finish_reason=s.finish_reason, error=s.error,
                                prefill=prefill_of(prompts[i]))

    def finish(i: int) -> None:
        states[i].done = True
        if on_done is not None:
            on_done(i, freeze(i))

    for round_idx in range(max_rounds + 1):
        active = [i for i, s in enumerate(states) if not s.done]
        if not active:
            break
        batch = [continue_prompt(prompts[i], states[i].text) for i in active]
        rseeds = [round_seed(int(seeds[i]), round_idx) for i in active] if sampled else None  # type: ignore[index]
        completions = backend.generate(batch, rparams, seeds=rseeds)
        if len(completions) != len(batch):
            raise RuntimeError(
                f"backend {getattr(backend, 'name', backend)!r} returned {len(completions)} "
                f"completions for {len(batch)} prompts"
            )
        jobs: list[tuple[int, str]] = []
        for i, comp in zip(active, completions):
            s = states[i]
            if round_idx == 0:
                s.prompt_tokens = comp.prompt_tokens
            if comp.error is not None or comp.finish_reason in ("error", "prompt_too_long", "content_filter"):
                s.add("model", comp.text)
                s.finish_reason, s.error = comp.finish_reason, comp.error
                finish(i)
                continue
            # Blocks are searched in prefill + text so far + new text, so a prefill ending in an
            # opened ```python fence is honoured; only a block ending in the new text is run.
            context = prefill_of(prompts[i]) + s.text
            block = None
            if s.tool_calls < max_rounds:
                block = find_new_python_block(context + comp.text, len(context))
            if block is None:
                s.add("model", comp.text)
                s.finish_reason = comp.finish_reason
                finish(i)
                continue
            code_start = max(0, block.start - len(context))
            s.add("model", comp.text[:code_start])
            s.add("code", comp.text[code_start : block.end - len(context)])
            code = textwrap.dedent(block.code)
            ns = namespaces[i] if namespaces is not None else None
            jobs.append((i, code if ns is None else namespaced_code(code, ns)))
        if not jobs:
            continue
        with ThreadPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            results = list(pool.map(sandbox.run, [code for _, code in jobs]))
        for (i, _), result in zip(jobs, results):
            s = states[i]
            observation, is_error = format_observation(result, output_cap)
            s.tool_calls += 1
            s.tool_errors += int(is_error)
            lead = "" if s.text.endswith("\n") else "\n"
            note = TOOLS_EXHAUSTED_NOTE if s.tool_calls >= max_rounds else ""
            # the tokenizer's special tokens defused here too (output_block defuses the common role markers):
            # the trajectory a judge is trained on holds the text it saw
            s.add("tool", lead + defuse_text(tok, output_block(observation)) + note)
    for i, s in enumerate(states):
        if not s.done:  # pragma: no cover - the last round always finishes every trajectory
            finish(i)
    logger.debug(
        "tool loop: %d prompts, %d tool calls, %d errors",
        len(states),
        sum(s.tool_calls for s in states),
        sum(s.tool_errors for s in states),
    )
    return [freeze(i) for i in range(len(states))]
