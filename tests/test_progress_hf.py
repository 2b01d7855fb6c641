"""The hf backend reports progress once per decode step (issue 27), in both engines, on the tiny
random Llama of ``test_backends_hf`` (seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_backends_hf import PROMPTS, build_tiny_model  # noqa: E402

from judgerl.backends import SamplingParams  # noqa: E402
from judgerl.backends.base import reporting_progress  # noqa: E402
from judgerl.backends.hf import HFBackend  # noqa: E402


class Recorder:
    """A ProgressListener that keeps every call."""

    def __init__(self) -> None:
        self.started: list[tuple[int, int]] = []
        self.tokens: list[int] = []

    def on_started(self, n_prompts: int, prompt_tokens: int) -> None:
        self.started.append((n_prompts, prompt_tokens))

    def on_tokens(self, n_new: int) -> None:
        self.tokens.append(n_new)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny-progress"))


def test_continuous_engine_reports_each_step_once(tiny_dir: Path) -> None:
    b = HFBackend(str(tiny_dir), device="cpu", batch_size=2, engine="continuous")
    rec = Recorder()
    params = SamplingParams(max_new_tokens=6)
    with reporting_progress(rec):
        outs = b.generate(PROMPTS, params)
    st = b.last_stats
    assert [n for n, _ in rec.started] == [1] * len(PROMPTS)  # one per admitted prompt
    assert sum(t for _, t in rec.started) == st.prefill_tokens
    # one call per admission (its first token) and one per decode step, never per row
    assert len(rec.tokens) == len(PROMPTS) + st.decode_steps
    assert sum(rec.tokens) == len(PROMPTS) + st.decode_row_tokens >= sum(c.completion_tokens for c in outs)
    assert max(rec.tokens) <= 2  # a step reports the rows of the batch (batch_size 2)
    assert outs == b.generate(PROMPTS, params)  # reporting changes nothing


def test_static_engine_reports_each_step(tiny_dir: Path) -> None:
    b = HFBackend(str(tiny_dir), device="cpu", batch_size=8, engine="static")
    rec = Recorder()
    with reporting_progress(rec):
        outs = b.generate(PROMPTS, SamplingParams(max_new_tokens=5))
    assert rec.started == [(len(PROMPTS), 0)]  # the batch starts at its first step
    assert len(rec.tokens) <= 5 and rec.tokens[0] == len(PROMPTS)
    assert sum(rec.tokens) >= sum(c.completion_tokens for c in outs)
