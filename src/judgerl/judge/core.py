"""The Judge: one path from judge inputs to judgments, shared by eval, the reward server and training.

A :class:`Judge` is a protocol + a backend + sampling parameters (+ an optional sandbox for
tool-integrated judging, + optional answer forcing). Everything that turns a batch of inputs into
decisions lives here and only here::

    protocol.build ──> backend.generate  (or the TIR tool loop, ≤ max_tool_rounds executed blocks, the
                                          budget the prompt states)
        ──> protocol.parse  (executed code and tool output blanked by their recorded offsets, never
                             re-found by fences)
        ──> answer forcing  (opt-in: prefill the answer tag when no final answer was written)
        ──> quoted-answer check ──> aggregation of N samples (judgerl.judge.aggregate)

Seeds belong to work items, not batches: the seed of sample ``k`` of input ``key`` is
``derive_seed(judge.seed, key, k)``, so results are identical whatever the batch size, the
backend's own batching or the point where a resumed run restarted.

Example::

    judge = Judge(get_protocol("pav"), load_backend("smollm2-135m"), SamplingParams(max_new_tokens=256))
    [result] = judge.judge([JudgeInput("What is 2+2?", ("4", "5"), key="q1")], samples=3)
    result.decision.verdict        # majority vote of 3 samples
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from judgerl.backends.base import Backend, SamplingParams, derive_seed
from judgerl.backends.chat import continue_prompt, prefill_of
from judgerl.judge.aggregate import aggregate_decisions
from judgerl.judge.decision import FORCEABLE_REASONS, carriers_of, forceable, observations_of, read_decision  # noqa: F401
from judgerl.judge.defaults import DEFAULT_MAX_NEW_TOKENS
from judgerl.protocols.base import JudgeProtocol
from judgerl.text.codeblocks import MAX_TOOL_ROUNDS
from judgerl.tools import Executor
from judgerl.tools.namespace import response_namespace
from judgerl.tools.tir import backend_tokenizer, build_trajectory, run_tool_loop
from judgerl.types import Completion, Decision, FinishReason, Messages, RETRYABLE_FINISH_REASONS, Trajectory

#: Invalid reasons the Judge adds to the parser's (:data:`judgerl.protocols.INVALID_REASONS`).
JUDGE_INVALID_REASONS: dict[str, str] = {
    "quoted_answer": "the final-answer region is text quoted from a response under judgment",
    "spoiled_by_markup": "the judge repeated a response's markup (an end of thinking, an answer tag) and that "
                         "broke its output",
    "prompt_too_long": "the prompt plus max_new_tokens does not fit the model's context; not generated",
    "generation_failed": "the backend raised for this item alone (reward server; the error is reported)",
}
#: Tokens generated after the forced answer tag (enough for a verdict or two scores).
FORCED_ANSWER_TOKENS = 24


@dataclass(frozen=True)
class JudgeInput:
    """What to judge: a prompt and the responses shown to the judge, in the order shown.

    Attributes:
        prompt: The user instruction.
        responses: 1 response (pointwise), 2 (pairwise) or n >= 2 (listwise).
        key: Stable identity of this input for sampling seeds (e.g. ``"pair-7/AB"``); empty means
            "derive it from the content" (same texts -> same seeds).
        rubric: Per-prompt rubric shown to the judge (``protocol.build(..., rubric=...)``), or None.
    """

    prompt: str
    responses: tuple[str, ...]
    key: str = ""
    rubric: str | None = None

    def seed_key(self) -> str:
        """``key``, or a SHA-256 of the prompt and responses (and the rubric, when there is one) when ``key``
        is empty."""
        if self.key:
            return self.key
        texts: list = [self.prompt, list(self.responses)]
        if self.rubric and self.rubric.strip():  # a blank rubric shows nothing: same seeds as none
            texts.append(self.rubric)
        blob = json.dumps(texts, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:32]  # a lone surrogate: no crash


@dataclass(frozen=True)
class JudgeRequest:
    """One generation to make: already-built messages, how many responses they show, a seed.

    Attributes:
        messages: The judge prompt (from :meth:`Judge.build`, or a training row's prompt).
        n_responses: Responses shown (for listwise index checks; None when unknown).
        seed: Sampling seed of this sample (None: greedy, or the backend's own seeds).
        responses: The texts under judgment (the quoted-answer check, the response namespace; may be empty).
        prompt: The user question, ``PROMPT`` of the response namespace (None: ``""``).
    """

    messages: Messages
    n_responses: int | None = None
    seed: int | None = None
    responses: tuple[str, ...] = ()
    prompt: str | None = None


@dataclass(frozen=True)
class Judgment:
    """One judge sample, fully resolved.

    Attributes:
        text: The judge's raw output (for tool runs the whole trajectory; with forcing, the forced
            suffix and the forced tokens included).
        decision: The parsed decision (``invalid_reason`` ``prompt_too_long`` / ``quoted_answer``
            / a parse failure when invalid).
        messages: The prompt that was sent.
        trajectory: The tool-integrated trajectory (tool runs and forced answers), else None.
        prompt_tokens: Prompt tokens (first round).
        completion_tokens: Tokens generated in total (all rounds and the forced answer).
        finish_reason: Of the last generation (see :data:`judgerl.types.FinishReason`).
        forced: Whether answer forcing produced the final answer.
        error: The generation error, if any (API failure, filtered answer, prompt too long).
        seed: The sample's seed.
        carriers: The responses under judgment that carry the judge's answer syntax
            (:func:`judgerl.judge.decision.carriers_of`); their expected score is the parsed one.
    """

    text: str
    decision: Decision
    messages: Messages
    trajectory: Trajectory | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: FinishReason = "stop"
    forced: bool = False
    error: str | None = None
    seed: int | None = None
    carriers: tuple[int, ...] = ()

    @property
    def retryable(self) -> bool:
        """True when a later run should make this judgment again (API error, filtered answer)."""
        return self.finish_reason in RETRYABLE_FINISH_REASONS


@dataclass(frozen=True)
class AggregateJudgment:
    """The N samples of one :class:`JudgeInput` and their combined decision.

    Attributes:
        decision: :func:`judgerl.judge.aggregate.aggregate_decisions` over the samples.
        samples: The samples in sample order.
    """

    decision: Decision
    samples: tuple[Judgment, ...] = field(default_factory=tuple)

    @property
    def n_invalid(self) -> int:
        """Samples whose decision is invalid."""
        return sum(not s.decision.valid for s in self.samples)

    @property
    def retryable(self) -> bool:
        """True when any sample failed for a reason a retry may fix."""
        return any(s.retryable for s in self.samples)


OnDone = Callable[[int, Judgment], None]


class Judge:
    """Protocol + backend + sampling (+ sandbox, tool rounds, answer forcing): judgments.

    Args:
        protocol: A :class:`judgerl.protocols.JudgeProtocol` object (with its options).
        backend: Any :class:`judgerl.backends.Backend`.
        params: Sampling parameters of every generation (default: greedy,
            :data:`judgerl.judge.defaults.DEFAULT_MAX_NEW_TOKENS` new tokens; with tools
            ``max_new_tokens`` is per round).
        sandbox: An :class:`judgerl.tools.Executor` (:func:`judgerl.tools.get_sandbox`); when given,
            prompts ask for code (stating ``max_tool_rounds`` as the budget) and generation runs the
            TIR tool loop.
        max_tool_rounds: Most executed code blocks per judgment (TIR-Judge: 3).
        force_answer: When a judgment ends without its final answer, prefill the protocol's
            :meth:`~judgerl.protocols.JudgeProtocol.force_suffix` and generate
            :data:`FORCED_ANSWER_TOKENS` more tokens (marked ``forced``).
        seed: Base seed of :meth:`sample_seed`.

    Raises:
        ValueError: ``max_tool_rounds`` < 0.
    """

    def __init__(
        self,
        protocol: JudgeProtocol,
        backend: Backend,
        params: SamplingParams | None = None,
        *,
        sandbox: Executor | None = None,
        max_tool_rounds: int = MAX_TOOL_ROUNDS,
        force_answer: bool = False,
        seed: int = 0,
    ) -> None:
        if max_tool_rounds < 0:
            raise ValueError(f"max_tool_rounds must be >= 0, got {max_tool_rounds}")
        self.protocol = protocol
        self.backend = backend
        self.params = params or SamplingParams(max_new_tokens=DEFAULT_MAX_NEW_TOKENS, temperature=0.0)
        self.sandbox = sandbox
        self.max_tool_rounds = max_tool_rounds
        self.force_answer = force_answer
        self.seed = seed
        self._lock = threading.Lock()

    @property
    def tools(self) -> bool:
        """Whether the judge runs code (a sandbox was given)."""
        return self.sandbox is not None

    @property
    def kind(self) -> str:
        """The protocol kind: ``pairwise``, ``pointwise`` or ``listwise``."""
        return str(self.protocol.kind)

    def config(self) -> dict[str, Any]:
        """The judge's identity as JSON: model, protocol (name, kind, options), sampling, tools,
        forcing (:func:`judgerl.judge.identity.judge_config`). Two judges with the same config give the
        same judgments."""
        from judgerl.judge.identity import judge_config

        return judge_config(self.backend.name, self.protocol, self.params, tools=self.tools,
                            max_tool_rounds=self.max_tool_rounds, force_answer=self.force_answer)

    def build(self, prompt: str, responses: Sequence[str], rubric: str | None = None) -> Messages:
        """The judge prompt for one input (``protocol.build`` with this judge's ``tools`` and tool budget, and
        the input's ``rubric``, None for none).

        Raises:
            TypeError, ValueError: from the protocol (wrong number or type of responses, a non-str rubric).
        """
        if rubric is None:  # protocols written before rubrics keep working
            return self.protocol.build(prompt, list(responses), tools=self.tools, max_tool_rounds=self.max_tool_rounds)
        return self.protocol.build(prompt, list(responses), tools=self.tools, max_tool_rounds=self.max_tool_rounds,
                                   rubric=rubric)

    def sample_seed(self, key: str, sample: int) -> int | None:
        """The seed of sample ``sample`` of the input ``key``; None for greedy decoding."""
        if self.params.temperature == 0:
            return None
        return derive_seed(self.seed, key, sample)

    def request(self, messages: Messages, responses: Sequence[str], key: str, sample: int,
                prompt: str | None = None) -> JudgeRequest:
        """The request of sample ``sample`` of the input ``key`` whose prompt is ``messages`` (``prompt``: the
        user question, for the response namespace)."""
        return JudgeRequest(messages, len(responses), self.sample_seed(key, sample), tuple(responses), prompt)

    def requests(self, inputs: Sequence[JudgeInput], samples: int = 1) -> list[JudgeRequest]:
        """THE expansion of inputs x samples into requests (the Judge, the reward server and the eval
        runner share it): input ``i``'s samples are requests ``i * samples`` .. ``i * samples + samples - 1``,
        each seeded by :meth:`sample_seed` of the input's :meth:`~JudgeInput.seed_key`.

        Raises:
            ValueError: ``samples`` < 1; TypeError / ValueError from the protocol for bad inputs.
        """
        if samples < 1:
            raise ValueError(f"samples must be >= 1, got {samples}")
        out = []
        for inp in inputs:
            messages = self.build(inp.prompt, inp.responses, inp.rubric)
            key = inp.seed_key()
            out.extend(self.request(messages, inp.responses, key, k, inp.prompt) for k in range(samples))
        return out

    # -- batch API -------------------------------------------------------------------------------

    def judge(self, inputs: Sequence[JudgeInput], samples: int = 1, on_done: OnDone | None = None) -> list[AggregateJudgment]:
        """Judge each input ``samples`` times and combine the samples (test-time scaling).

        Args:
            inputs: What to judge.
            samples: Samples per input (>= 1); voting rules in :mod:`judgerl.judge.aggregate`.
            on_done: Called ``f(flat_index, judgment)`` per finished sample, ``flat_index = input
                index * samples + sample index``.

        Returns:
            One :class:`AggregateJudgment` per input, in order.

        Raises:
            ValueError: ``samples`` < 1; TypeError / ValueError from the protocol for bad inputs.
        """
        flat = self.run(self.requests(inputs, samples), on_done)
        out = []
        for i in range(len(inputs)):
            group = tuple(flat[i * samples : (i + 1) * samples])
            out.append(AggregateJudgment(aggregate_decisions([j.decision for j in group], self.kind), group))
        return out

    def run(self, requests: Sequence[JudgeRequest], on_done: OnDone | None = None) -> list[Judgment]:
        """Generate, parse (and force) one judgment per request.

        Args:
            requests: Prompts with their seeds.
            on_done: Called ``f(index, judgment)`` as soon as each judgment is final (from the
                backend's thread; calls are serialised by the judge).

        Returns:
            One :class:`Judgment` per request, in order.

        Raises:
            Whatever the backend or the sandbox raise for the whole call (per-prompt generation
            failures are returned as judgments with ``error`` set).
        """
        n = len(requests)
        out: list[Judgment | None] = [None] * n
        to_force: dict[int, Judgment] = {}
        seeds = [r.seed for r in requests]
        use_seeds = None if any(s is None for s in seeds) else [int(s) for s in seeds]  # type: ignore[arg-type]

        def settle(i: int, j: Judgment) -> None:
            if self.force_answer and _forceable(j, self.protocol):
                with self._lock:
                    to_force[i] = j
                return
            self._finalise(i, j, out, on_done)

        if self.sandbox is not None:
            def traj_done(i: int, t: Trajectory) -> None:
                settle(i, self._from_trajectory(requests[i], t))

            run_tool_loop(self.backend, [r.messages for r in requests], self.params, self.sandbox,
                          max_rounds=self.max_tool_rounds, seeds=use_seeds, on_done=traj_done,
                          namespaces=self.namespaces(requests))
        else:
            def gen_done(i: int, c: Completion) -> None:
                settle(i, self._from_completion(requests[i], c))

            outs = self.backend.generate([r.messages for r in requests], self.params, seeds=use_seeds,
                                         on_result=gen_done)
            if len(outs) != n:
                raise RuntimeError(f"backend {self.backend.name!r} returned {len(outs)} completions for {n} prompts")
            for i, c in enumerate(outs):  # backends that never call on_result
                if out[i] is None and i not in to_force:
                    settle(i, self._from_completion(requests[i], c))
        if to_force:
            self._force(to_force, requests, out, on_done)
        return out  # type: ignore[return-value]

    def namespaces(self, requests: Sequence[JudgeRequest]) -> list[dict[str, Any]] | None:
        """Each request's response namespace (:mod:`judgerl.tools.namespace`); None when the protocol's option
        is off. Raises ValueError: a request without its responses."""
        return [response_namespace(self.kind, r.prompt or "", r.responses) for r in requests] \
            if self.protocol.namespace else None

    def expected_scores(self, judgments: Sequence[Judgment], require_valid: bool = False) -> list[Any]:
        """The expected score of each pointwise judgment (judge-as-reward: E[s] = Σ s·p(s) / Σ p(s)
        over the valid scores at the judge's answer position); see :mod:`judgerl.judge.expected`.

        Returns:
            One :class:`judgerl.judge.expected.ExpectedScore` per judgment (judgments without an answer
            position, quoted answers and, with ``require_valid``, all invalid ones keep their invalid
            reason). A judgment of a response that carries the judge's answer syntax (``Judgment.carriers``)
            gets its parsed score as its value: the decision stood only as that response's worst outcome, and
            the answer the response carries would lift the probabilities at the answer position.

        Raises:
            judgerl.judge.expected.ExpectedScoreUnavailable: the backend cannot give token probabilities
                (scripted, an API without logprobs) or the scale cannot be read.
        """
        from judgerl.judge import expected  # its score_reader is looked up per call (tests replace it)

        read = expected.read_expected(self.protocol, expected.score_reader(self.backend),
                                      [(j.messages, j.text, j.decision.valid, j.decision.invalid_reason)
                                       for j in judgments], require_valid)
        return [expected.parsed_for_carrier(j.decision) if j.carriers else e for j, e in zip(judgments, read)]

    # -- internals -------------------------------------------------------------------------------

    def _parse(self, req: JudgeRequest, text: str, parse_text: str, finish: str,
               observations: Sequence[str] = ()) -> Decision:
        return read_decision(self.protocol, parse_text, req.responses, req.n_responses, finish, observations)

    def _carriers(self, req: JudgeRequest) -> tuple[int, ...]:
        # pointwise only: an expected score is read for pointwise judgments
        return carriers_of(self.protocol, req.responses) if self.kind == "pointwise" else ()

    def _from_completion(self, req: JudgeRequest, c: Completion) -> Judgment:
        # The parser reads the judge's whole turn: an assistant prefill (e.g. "<think>") frames the
        # completion. A prefilled judgment keeps its prefill on record (a one-segment trajectory), so
        # re-reading the record gives the same decision.
        prefill = prefill_of(req.messages)
        traj = None if not prefill else build_trajectory(
            [("model", c.text)] if c.text else [], backend_tokenizer(self.backend),
            prompt_tokens=c.prompt_tokens, finish_reason=c.finish_reason, error=c.error, prefill=prefill)
        return Judgment(
            text=c.text, decision=self._parse(req, c.text, prefill + c.text, c.finish_reason), messages=req.messages,
            trajectory=traj, prompt_tokens=c.prompt_tokens, completion_tokens=c.completion_tokens,
            finish_reason=c.finish_reason, error=c.error, seed=req.seed, carriers=self._carriers(req),
        )

    def _from_trajectory(self, req: JudgeRequest, t: Trajectory) -> Judgment:
        text = t.text
        parse_text = t.parse_text()
        return Judgment(
            text=text, decision=self._parse(req, text, parse_text, t.finish_reason, observations_of(t)),
            messages=req.messages,
            trajectory=t, prompt_tokens=t.prompt_tokens, completion_tokens=t.completion_tokens,
            finish_reason=t.finish_reason, error=t.error, seed=req.seed, carriers=self._carriers(req),
        )

    def _finalise(self, i: int, j: Judgment, out: list[Judgment | None], on_done: OnDone | None) -> None:
        with self._lock:
            if out[i] is not None:
                return
            out[i] = j
            if on_done is not None:
                on_done(i, j)

    def _force(self, firsts: dict[int, Judgment], requests: Sequence[JudgeRequest], out: list[Judgment | None],
               on_done: OnDone | None) -> None:
        """Answer forcing for the first-pass judgments ``firsts`` (index -> judgment) that never
        reached their final answer: one ``generate`` call with the answer tag prefilled."""
        idx = sorted(firsts)
        proto = self.protocol
        # The suffix is computed on the text the parser reads (the trajectory's parse_text: the prompt's
        # assistant prefill + the completion, executed code and tool output blanked), so a fence inside
        # executed code cannot make it open a code span over the forced answer, and a "<think>" or
        # fence the prefill opened is closed before the answer tag. (A prefilled judgment always has a
        # trajectory: _from_completion records one.)
        prefills = {i: prefill_of(requests[i].messages) for i in idx}
        prefixes = {i: proto.force_suffix(firsts[i].trajectory.parse_text() if firsts[i].trajectory is not None
                                          else firsts[i].text) for i in idx}
        prompts = [continue_prompt(requests[i].messages, firsts[i].text + prefixes[i]) for i in idx]
        params = dataclasses.replace(self.params, max_new_tokens=FORCED_ANSWER_TOKENS, stop=proto.forced_stop)
        seeds = (None if any(requests[i].seed is None for i in idx)
                 else [derive_seed(requests[i].seed, "force") for i in idx])
        outs = self.backend.generate(prompts, params, seeds=seeds)
        for i, c in zip(idx, outs):
            first = firsts[i]
            gen = proto.finish_forced(c.text) if c.error is None else ""
            pieces = _pieces(first) + [("forced", prefixes[i]), ("model", gen)]
            traj = build_trajectory(
                pieces, backend_tokenizer(self.backend), tool_calls=_tool_calls(first),
                tool_errors=_tool_errors(first), prompt_tokens=first.prompt_tokens,
                finish_reason=c.finish_reason if c.error else first.finish_reason, error=c.error,
                prefill=prefills[i],
            )
            j = self._from_trajectory(requests[i], traj)
            j = dataclasses.replace(j, forced=True, completion_tokens=first.completion_tokens + c.completion_tokens)
            self._finalise(i, j, out, on_done)


def _forceable(j: Judgment, protocol: Any = None) -> bool:
    text = j.trajectory.parse_text() if j.trajectory is not None else j.text
    return forceable(j.decision, j.finish_reason, text, protocol)


def _pieces(j: Judgment) -> list[tuple[str, str]]:
    if j.trajectory is not None:
        return [(s.kind, s.text) for s in j.trajectory.segments]
    return [("model", j.text)] if j.text else []


def _tool_calls(j: Judgment) -> int:
    return j.trajectory.tool_calls if j.trajectory is not None else 0


def _tool_errors(j: Judgment) -> int:
    return j.trajectory.tool_errors if j.trajectory is not None else 0


def judgment_record(j: Judgment) -> dict[str, Any]:
    """The JSON fields of a judgment that eval records and server responses share."""
    rec: dict[str, Any] = {
        "raw_output": j.text,
        "decision": j.decision.to_dict(),
        "prompt_tokens": j.prompt_tokens,
        "completion_tokens": j.completion_tokens,
        "finish_reason": j.finish_reason,
        "trajectory": j.trajectory.to_dict() if j.trajectory is not None else None,
        "forced_answer": j.forced,
    }
    if j.error is not None:
        rec["error"] = j.error
    return rec


__all__ = [
    "AggregateJudgment",
    "FORCEABLE_REASONS",
    "FORCED_ANSWER_TOKENS",
    "JUDGE_INVALID_REASONS",
    "Judge",
    "JudgeInput",
    "JudgeRequest",
    "Judgment",
    "judgment_record",
]
