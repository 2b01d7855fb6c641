"""Results depend on the seed and the data only: the same sampled eval (samples=3, T=0.7) gives
byte-identical judgments.jsonl at batch sizes 1, 4 and 16 and when killed and resumed at two
points, on the scripted backend (fast) and on the embedded model (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.eval import run_eval
from judgerl.judge import Judge
from judgerl.protocols import get_protocol
from judgerl.types import PreferencePair

SAMPLED = SamplingParams(max_new_tokens=24, temperature=0.7)
OUTPUTS = [
    "<think>A looks right</think><verdict>A</verdict>",
    "<think>B looks right</think><verdict>B</verdict>",
    "<think>hmm",  # never answers: invalid
    "<think>both fine</think><verdict>A</verdict>",
]


class Killer:
    """Wraps a backend and raises KeyboardInterrupt once ``after`` prompts were generated (a kill)."""

    def __init__(self, inner, after: int) -> None:
        self.inner, self.after, self.seen = inner, after, 0
        self.name = inner.name

    def generate(self, prompts, params, *, seeds=None, on_result=None):
        if self.seen + len(prompts) > self.after:
            raise KeyboardInterrupt("killed")
        self.seen += len(prompts)
        return self.inner.generate(prompts, params, seeds=seeds, on_result=on_result)


def pairs(n: int) -> list[PreferencePair]:
    return [PreferencePair(id=f"p{i}", prompt=f"Question {i}?", chosen=f"good {i}", rejected=f"bad {i}")
            for i in range(n)]


def content_backend(name: str = "scripted/content") -> ScriptedBackend:
    return ScriptedBackend(OUTPUTS, replay="content", name=name)


def run(backend, out: Path, batch_size: int, data, **kw) -> dict:
    judge = Judge(get_protocol("pav"), backend, SAMPLED, seed=11)
    return run_eval(judge, data, out, samples=3, batch_size=batch_size, progress=False, **kw)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_scripted_identical_at_any_batch_size_and_resume_point(tmp_path: Path) -> None:
    data = pairs(5)  # 30 judgment samples
    reference = None
    for bs in (1, 4, 16):
        run(content_backend(), tmp_path / f"bs{bs}", bs, data)
        got = lines(tmp_path / f"bs{bs}" / "judgments.jsonl")
        assert len(got) == 30
        reference = reference or got
        assert got == reference, f"batch size {bs} differs"
    # killed after 7 and after 19 generated prompts, resumed with other batch sizes each time
    out = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        run(Killer(content_backend(), 7), out, 4, data)
    assert 0 < len(lines(out / "judgments.jsonl")) < 30
    with pytest.raises(KeyboardInterrupt):
        run(Killer(content_backend(), 12), out, 3, data)
    run(content_backend(), out, 16, data)
    assert lines(out / "judgments.jsonl") == reference
    assert json.loads((out / "summary.json").read_text())["accuracy"] == json.loads(
        (tmp_path / "bs1" / "summary.json").read_text())["accuracy"]


def test_different_seeds_give_different_samples(tmp_path: Path) -> None:
    data = pairs(4)
    run(content_backend(), tmp_path / "a", 4, data)
    judge = Judge(get_protocol("pav"), content_backend(), SAMPLED, seed=12)
    run_eval(judge, data, tmp_path / "b", samples=3, progress=False)
    a = [json.loads(x)["raw_output"] for x in lines(tmp_path / "a" / "judgments.jsonl")]
    b = [json.loads(x)["raw_output"] for x in lines(tmp_path / "b" / "judgments.jsonl")]
    assert a != b


@pytest.mark.slow
def test_embedded_model_identical_at_any_batch_size_and_resume_point(tmp_path: Path, embedded_model_dir) -> None:
    from judgerl.backends import load_backend

    data = pairs(2)  # 12 judgment samples of 24 tokens
    backend = load_backend("smollm2-135m", batch_size=16)
    reference = None
    for bs in (1, 4, 16):
        backend.batch_size = min(bs, 16)
        run(backend, tmp_path / f"bs{bs}", bs, data)
        got = lines(tmp_path / f"bs{bs}" / "judgments.jsonl")
        reference = reference or got
        assert got == reference, f"batch size {bs} differs"
    out = tmp_path / "resumed"
    backend.batch_size = 4
    with pytest.raises(KeyboardInterrupt):
        run(Killer(backend, 3), out, 2, data)
    with pytest.raises(KeyboardInterrupt):
        run(Killer(backend, 5), out, 4, data)
    run(backend, out, 16, data)
    assert lines(out / "judgments.jsonl") == reference
