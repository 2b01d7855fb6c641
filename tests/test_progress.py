"""Progress that moves while generating (issue 27): counters, ETA, the eval bar, the serve log line."""

from __future__ import annotations

import io
import logging

import pytest

from support.judging import ev
from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.backends.base import progress_listener, reporting_progress
from judgerl.judge.progress import GenerationProgress, ProgressBar, ThroughputLog, describe
from judgerl.protocols import get_protocol
from judgerl.types import PreferencePair


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def pairs(n: int) -> list[PreferencePair]:
    return [PreferencePair(id=f"q{i}", prompt=f"Question {i}?", chosen=f"GOOD {i}", rejected=f"BAD {i}")
            for i in range(n)]


def oracle(messages, params) -> str:
    """Right on every pair, after a long think (20 words in all), so every row finishes at the end."""
    text = messages[-1]["content"]
    v = "A" if text.index("GOOD") < text.index("BAD") else "B"
    return "<think>" + " ".join(["step"] * 20) + f"</think><verdict>{v}</verdict>"


def test_eta_from_token_rate_then_from_finished_lengths() -> None:
    clock = Clock()
    p = GenerationProgress(total=4, max_new_tokens=100, clock=clock)
    assert p.state().eta_s is None and p.state().expected_tokens is None
    p.on_started(4, 400)
    clock.t += 2.0
    p.on_tokens(4)  # one decode step of 4 rows
    s = p.state()
    assert (s.started, s.prefill_tokens, s.tokens, s.finished) == (4, 400, 4, 0)
    assert s.expected_tokens == 400  # 4 unfinished x max_new_tokens
    assert s.tokens_per_s == pytest.approx(2.0) and s.eta_s == pytest.approx(396 / 2.0)
    for _ in range(9):
        p.on_tokens(4)
    clock.t += 3.0  # 40 tokens in 5 s
    p.on_finished(10, True, True)  # the first one ends after 10 tokens: the rest are expected that long too
    s = p.state()
    assert s.expected_tokens == 40 + max(3 * 10 - 30, 3) and s.eta_s == pytest.approx(3 / 8.0)
    p.on_finished(10, False, True)
    p.on_finished(10, None, False)  # invalid on a gold tie: not graded
    s = p.state()
    assert (s.correct, s.graded, s.invalid, s.accuracy) == (1, 2, 1, 0.5)
    assert describe(s) == "judged 3/4 (4 started) acc 50.0% invalid 1"


def test_eta_from_judgments_when_no_tokens_are_reported() -> None:
    clock = Clock()
    p = GenerationProgress(total=10, max_new_tokens=64, clock=clock)
    p.on_finished(5, True, True)
    clock.t += 4.0
    p.on_finished(5, True, True)
    s = p.state()
    assert s.tokens == 0 and s.expected_tokens is None and s.eta_s == pytest.approx(8 / (2 / 4.0))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="total"):
        GenerationProgress(-1, 10)
    with pytest.raises(ValueError, match="max_new_tokens"):
        GenerationProgress(1, 0)
    with pytest.raises(ValueError, match="interval_s"):
        ThroughputLog(logging.getLogger("x"), interval_s=0)


def test_bar_moves_before_the_first_judgment_finishes() -> None:
    """The display of a stepwise scripted backend (all rows finish at the last step): the bar has
    advanced, with a total and a rate, before any judgment is done."""
    out = io.StringIO()
    p = GenerationProgress(total=2, max_new_tokens=30)
    bar = ProgressBar(p, "eval pav", out, mininterval=0)
    seen = []

    def step(k: int) -> None:
        s = p.state()
        seen.append((s.finished, bar.bar.n, bar.bar.total))

    backend = ScriptedBackend(["one two three four five six", "a b c d e f"], stepwise=True, on_step=step)
    finished_at = []
    with reporting_progress(p):
        backend.generate([[{"role": "user", "content": "x"}]] * 2, SamplingParams(max_new_tokens=30),
                         on_result=lambda i, c: (finished_at.append(bar.bar.n),
                                                 p.on_finished(c.completion_tokens, True, True)))
    bar.close()
    before = [n for f, n, _ in seen if f == 0]
    assert before == [2, 4, 6, 8, 10, 12] and finished_at == [12, 12]  # moved 6 times, then both finished
    assert all(total >= n for _, n, total in seen)
    text = out.getvalue()
    assert "judged 0/2 (2 started)" in text and "judged 2/2 acc 100.0% invalid 0" in text and "tok" in text


def test_run_eval_progress_advances_before_the_first_judgment(tmp_path, capsys) -> None:
    states = []
    backend = ScriptedBackend(oracle, stepwise=True, on_step=lambda k: states.append(progress_listener().state()))
    summary = ev(backend, get_protocol("pav"), pairs(3), tmp_path, progress=True,
                 params=SamplingParams(max_new_tokens=64))
    assert summary["accuracy"] == 1.0
    first = [s for s in states if s.finished == 0]
    assert len(first) == 20 and first[-1].tokens == 6 * 20 and first[-1].started == 6
    assert first[-1].expected_tokens == 6 * 64 and first[-1].eta_s is not None
    assert [s.tokens for s in first] == sorted(s.tokens for s in first)
    err = capsys.readouterr().err
    assert "judged 6/6 acc 100.0% invalid 0" in err


def test_stepwise_replay_gives_the_same_completions() -> None:
    items = ["alpha beta gamma", {"text": None, "finish_reason": "error", "error": "boom"}, "one two three four five"]
    prompts = [[{"role": "user", "content": "x"}]] * 3
    plain = ScriptedBackend(items).generate(prompts, SamplingParams(max_new_tokens=4))
    order: list[int] = []
    stepped = ScriptedBackend(items, stepwise=True).generate(prompts, SamplingParams(max_new_tokens=4),
                                                             on_result=lambda i, c: order.append(i))
    assert stepped == plain and order == [1, 0, 2]  # the failed (empty) one first, then by length


def test_bar_falls_back_to_judgments_for_backends_without_tokens() -> None:
    out = io.StringIO()
    p = GenerationProgress(total=3, max_new_tokens=512)
    bar = ProgressBar(p, "eval pav", out, mininterval=0)
    p.on_finished(7, True, True)
    assert bar.mode == "judgment" and bar.bar.n == 1 and bar.bar.total == 3
    p.on_finished(7, False, True)
    bar.close()
    assert "judgment" in out.getvalue() and "judged 2/3 acc 50.0%" in out.getvalue()


def test_throughput_log_line(caplog) -> None:
    clock = Clock()
    log = ThroughputLog(logging.getLogger("judgerl.test.progress"), interval_s=10, queue=lambda: 5, clock=clock)
    with caplog.at_level(logging.INFO, logger="judgerl.test.progress"):
        log.on_started(2, 300)
        log.on_tokens(40)
        assert not caplog.records  # before the interval
        clock.t += 10
        log.on_tokens(10)
    [rec] = caplog.records
    assert rec.getMessage() == ("generating: 5.0 tokens/s over 10 s; 2 prompts started, 300 tokens prefilled, "
                                "50 generated in total, queue 5")


def test_no_listener_outside_a_block() -> None:
    assert progress_listener() is None
    p = GenerationProgress(1, 4)
    with reporting_progress(p):
        assert progress_listener() is p
        ScriptedBackend(["a b"]).generate([[{"role": "user", "content": "x"}]], SamplingParams(max_new_tokens=4))
    assert progress_listener() is None and (p.started, p.prefill_tokens, p.tokens) == (1, 1, 2)


def test_serve_batches_log_throughput_and_queue(caplog) -> None:
    from judgerl.judge import Judge, JudgeRequest
    from judgerl.serve.service import JudgeService, ServeConfig

    judge = Judge(get_protocol("pav"), ScriptedBackend(oracle, stepwise=True), SamplingParams(max_new_tokens=64))
    service = JudgeService(judge, ServeConfig())
    clock = Clock()
    service.throughput = ThroughputLog(logging.getLogger("uvicorn.error"), 1.0, queue=lambda: service.batcher.pending,
                                       clock=lambda: clock.t)
    service.throughput._last = clock.t - 2.0  # the interval has passed: the first step logs
    messages = judge.build("Question 0?", ["GOOD 0", "BAD 0"])
    with caplog.at_level(logging.INFO, logger="uvicorn.error"):
        [j] = service._run_batch([JudgeRequest(messages, 2)])
    assert j.decision.verdict == "A"
    assert [r.getMessage() for r in caplog.records] == [
        "generating: 0.0 tokens/s over 2 s; 1 prompts started, "
        f"{sum(len(str(m['content']).split()) for m in messages)} tokens prefilled, 0 generated in total, queue 0"]
