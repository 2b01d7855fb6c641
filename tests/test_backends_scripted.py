"""ScriptedBackend (replays outputs for fast tests) and the shared backend helpers in base.py."""

from __future__ import annotations

import threading

import pytest

from judgerl.backends import Backend, SamplingParams, ScriptedBackend
from judgerl.backends.base import cut_at_stop
from judgerl.types import Completion

USER = [{"role": "user", "content": "Which is better, A or B?"}]


def test_scripted_backend_satisfies_the_protocol() -> None:
    assert isinstance(ScriptedBackend(["x"]), Backend)


def test_replays_outputs_in_order_and_records_calls() -> None:
    b = ScriptedBackend(["<verdict>A</verdict>", "<verdict>B</verdict>"])
    out = b.generate([USER, USER], SamplingParams(max_new_tokens=50))
    assert [c.text for c in out] == ["<verdict>A</verdict>", "<verdict>B</verdict>"]
    assert b.calls == [[USER, USER]]
    assert out[0] == Completion("<verdict>A</verdict>", prompt_tokens=6, completion_tokens=1, finish_reason="stop")


def test_runs_out_unless_cycling() -> None:
    b = ScriptedBackend(["a"])
    b.generate([USER], SamplingParams())
    with pytest.raises(IndexError, match="ran out"):
        b.generate([USER], SamplingParams())
    c = ScriptedBackend(["a", "b"], cycle=True)
    assert [x.text for x in c.generate([USER] * 5, SamplingParams())] == ["a", "b", "a", "b", "a"]


def test_callable_sees_prompt_and_params() -> None:
    b = ScriptedBackend(lambda msgs, params: f"{msgs[-1]['content']} / {params.max_new_tokens}")
    assert b.generate([USER], SamplingParams(max_new_tokens=9))[0].text == "Which is better, A or B? / 9"


def test_stop_strings_and_max_new_tokens() -> None:
    b = ScriptedBackend(["think think ```python\nprint(1)\n```", "one two three four five"], cycle=True)
    stopped = b.generate([USER], SamplingParams(stop=("```output", "\n```")))[0]
    assert stopped.text == "think think ```python\nprint(1)"
    assert stopped.finish_reason == "stop"
    b.generate([USER], SamplingParams())  # advance past the first script
    b.generate([USER], SamplingParams())
    cut = b.generate([USER], SamplingParams(max_new_tokens=3))[0]
    assert (cut.text, cut.completion_tokens, cut.finish_reason) == ("one two three", 3, "length")


def test_thread_safe_replay() -> None:
    b = ScriptedBackend([str(i) for i in range(200)])
    seen: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(50):
            t = b.generate([USER], SamplingParams())[0].text
            with lock:
                seen.append(t)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen, key=int) == [str(i) for i in range(200)]


@pytest.mark.parametrize(
    ("text", "stop", "expected"),
    [
        ("abc</verdict>def", ("</verdict>",), ("abc", True)),
        ("abc", ("x",), ("abc", False)),
        ("a1b2", ("2", "1"), ("a", True)),  # the earliest stop wins, not the first listed
        ("abc", ("", "c"), ("ab", True)),  # empty stop strings are ignored
        ("abc", (), ("abc", False)),
    ],
)
def test_cut_at_stop(text: str, stop: tuple[str, ...], expected: tuple[str, bool]) -> None:
    assert cut_at_stop(text, stop) == expected


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"temperature": -0.1}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
    ],
)
def test_sampling_params_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SamplingParams(**kwargs)
