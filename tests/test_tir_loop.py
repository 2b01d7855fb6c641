"""The tool-integrated judging loop: rounds, batching, truncation, segments and token offsets."""

from __future__ import annotations

import threading

import pytest

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.backends.base import Backend
from judgerl.tools.sandbox import ExecResult
from judgerl.tools.tir import (
    OUTPUT_FENCE,
    TOOLS_EXHAUSTED_NOTE,
    build_trajectory,
    continue_prompt,
    run_tool_loop,
    token_positions,
)
from judgerl.types import Trajectory

PARAMS = SamplingParams(max_new_tokens=200)


class FakeSandbox:
    """Records the code it is given; answers from a dict of code -> ExecResult (default: echo ok)."""

    def __init__(self, results: dict[str, ExecResult] | None = None) -> None:
        self.results = results or {}
        self.codes: list[str] = []
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def run(self, code: str) -> ExecResult:
        with self._lock:
            self.codes.append(code)
            self.threads.add(threading.current_thread().name)
        return self.results.get(code.strip(), ExecResult(f"ran {len(self.codes)}\n", "", 0, False, False, 0.0))


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def code_block(code: str) -> str:
    return f"```python\n{code}\n```\n"


def check_segments(traj: Trajectory) -> None:
    """Segments tile the completion: contiguous token offsets, text = concatenation."""
    assert traj.segments, "empty trajectory"
    assert traj.segments[0].token_start == 0
    for a, b in zip(traj.segments, traj.segments[1:]):
        assert a.token_end == b.token_start
    for s in traj.segments:
        assert s.token_end >= s.token_start
        assert s.text
    assert traj.text == "".join(s.text for s in traj.segments)


# --------------------------------------------------------------------------- basic flow
def test_no_code_single_round():
    backend = ScriptedBackend(["<think>easy</think><verdict>A</verdict>"])
    sandbox = FakeSandbox()
    [traj] = run_tool_loop(backend, [user("q")], PARAMS, sandbox)
    assert traj.tool_calls == 0 and traj.tool_errors == 0
    assert [s.kind for s in traj.segments] == ["model"]
    assert traj.text == "<think>easy</think><verdict>A</verdict>"
    assert sandbox.codes == [] and len(backend.calls) == 1
    check_segments(traj)


def test_one_tool_round_then_answer():
    def script(msgs, params):
        prefix = msgs[-1]["content"] if msgs[-1]["role"] == "assistant" else ""
        if not prefix:
            # the model keeps going after its code and hallucinates an output: it is cut off
            return "<think>Count words.\n" + code_block("print(len('a b c'.split()))") + "```output\n7\n```\nSo 7."
        return "It is 3 words. </think><verdict>B</verdict>"

    backend = ScriptedBackend(script)
    sandbox = FakeSandbox({"print(len('a b c'.split()))": ExecResult("3\n", "", 0, False, False, 0.01)})
    [traj] = run_tool_loop(backend, [user("q")], PARAMS, sandbox)
    assert [s.kind for s in traj.segments] == ["model", "code", "tool", "model"]
    assert traj.segments[1].text == code_block("print(len('a b c'.split()))")
    assert traj.segments[2].text == "```output\n3\n```\n"
    assert "7" not in traj.text  # the hallucinated output never enters the trajectory
    assert traj.tool_calls == 1 and traj.tool_errors == 0
    assert sandbox.codes == ["print(len('a b c'.split()))\n"]
    # round 2 continued the assistant message (prefill) with everything so far
    second = backend.calls[1][0]
    assert second[-1]["role"] == "assistant"
    assert second[-1]["content"] == "".join(s.text for s in traj.segments[:3])
    check_segments(traj)


def test_stop_string_added_and_user_stop_kept():
    seen = []

    def script(msgs, params):
        seen.append(params.stop)
        return "answer"

    run_tool_loop(ScriptedBackend(script), [user("q")], SamplingParams(max_new_tokens=5, stop=("</verdict>",)), FakeSandbox())
    assert seen == [("</verdict>", OUTPUT_FENCE)]


def test_stop_string_cuts_hallucinated_output_with_scripted_backend():
    # ScriptedBackend applies stop strings like a real backend: generation ends at ```output.
    outputs = iter(["```python\nprint(1)\n```\n```output\nfake\n```\nmore", "done"])
    backend = ScriptedBackend(lambda m, p: next(outputs))
    [traj] = run_tool_loop(backend, [user("q")], PARAMS, FakeSandbox())
    assert "fake" not in traj.text
    assert traj.text.endswith("```output\nran 1\n```\ndone")


# --------------------------------------------------------------------------- limits
def test_max_rounds_enforced_and_final_round_not_executed():
    backend = ScriptedBackend(lambda m, p: "step\n" + code_block("print('again')"))
    sandbox = FakeSandbox()
    [traj] = run_tool_loop(backend, [user("q")], PARAMS, sandbox, max_rounds=3)
    assert traj.tool_calls == 3
    assert len(sandbox.codes) == 3
    assert len(backend.calls) == 4  # 3 tool rounds + the final generation
    # the last observation tells the judge the budget is spent
    tools = [s for s in traj.segments if s.kind == "tool"]
    assert len(tools) == 3 and tools[-1].text.endswith(TOOLS_EXHAUSTED_NOTE)
    assert TOOLS_EXHAUSTED_NOTE not in tools[0].text
    # the 4th block was generated but not executed: it stays model text
    assert traj.segments[-1].kind == "model" and "```python" in traj.segments[-1].text
    check_segments(traj)


@pytest.mark.parametrize("max_rounds", [0, 1, 2])
def test_max_rounds_parameter(max_rounds):
    backend = ScriptedBackend(lambda m, p: code_block("print(1)"))
    sandbox = FakeSandbox()
    [traj] = run_tool_loop(backend, [user("q")], PARAMS, sandbox, max_rounds=max_rounds)
    assert traj.tool_calls == max_rounds == len(sandbox.codes)
    assert len(backend.calls) == max_rounds + 1


def test_invalid_arguments():
    backend = ScriptedBackend(["x"], cycle=True)
    with pytest.raises(ValueError, match="max_rounds"):
        run_tool_loop(backend, [user("q")], PARAMS, FakeSandbox(), max_rounds=-1)
    with pytest.raises(ValueError, match="sandbox"):
        run_tool_loop(backend, [user("q")], PARAMS, None)
    with pytest.raises(ValueError, match="output_cap"):
        run_tool_loop(backend, [user("q")], PARAMS, FakeSandbox(), output_cap=0)


def test_backend_returning_wrong_count_is_an_error():
    class Broken(Backend):
        name = "broken"

        def generate(self, prompts, params, **kw):
            return []

    with pytest.raises(RuntimeError, match="0 completions for 1 prompts"):
        run_tool_loop(Broken(), [user("q")], PARAMS, FakeSandbox())


def test_length_without_code_stops():
    backend = ScriptedBackend(["word " * 50])
    [traj] = run_tool_loop(backend, [user("q")], SamplingParams(max_new_tokens=10), FakeSandbox())
    assert traj.finish_reason == "length" and traj.tool_calls == 0


def test_length_after_complete_block_still_executes():
    from judgerl.types import Completion

    class LengthBackend(Backend):
        """Round 1: a complete block, then rambling until max_new_tokens ("length")."""

        name = "length"

        def __init__(self):
            self.outputs = iter([Completion(code_block("print(1)") + "rambling " * 5, 3, 20, "length"),
                                 Completion("final", 3, 1, "stop")])

        def generate(self, prompts, params, **kw):
            return [next(self.outputs) for _ in prompts]

    [traj] = run_tool_loop(LengthBackend(), [user("q")], SamplingParams(max_new_tokens=20), FakeSandbox())
    assert traj.tool_calls == 1 and traj.finish_reason == "stop"
    assert "rambling" not in traj.text


def test_unclosed_block_is_not_executed():
    backend = ScriptedBackend(["```python\nprint('unfinished')\n"])
    sandbox = FakeSandbox()
    [traj] = run_tool_loop(backend, [user("q")], PARAMS, sandbox)
    assert sandbox.codes == [] and traj.tool_calls == 0


def test_non_python_block_is_not_executed():
    backend = ScriptedBackend(["```bash\nrm -rf /\n```\n<verdict>A</verdict>"])
    sandbox = FakeSandbox()
    [traj] = run_tool_loop(backend, [user("q")], PARAMS, sandbox)
    assert sandbox.codes == [] and traj.tool_calls == 0


# --------------------------------------------------------------------------- errors
def test_error_truncated_to_last_line_and_counted():
    tb = 'Traceback (most recent call last):\n  File "<sandbox>", line 1\nZeroDivisionError: division by zero\n'
    outputs = iter([code_block("1/0"), "after error"])
    sandbox = FakeSandbox({"1/0": ExecResult("", tb, 1, False, False, 0.0)})
    [traj] = run_tool_loop(ScriptedBackend(lambda m, p: next(outputs)), [user("q")], PARAMS, sandbox)
    tool = [s for s in traj.segments if s.kind == "tool"][0]
    assert tool.text == "```output\nZeroDivisionError: division by zero\n```\n"
    assert traj.tool_calls == 1 and traj.tool_errors == 1


def test_timeout_counts_as_error():
    outputs = iter([code_block("while True: pass"), "ok"])
    sandbox = FakeSandbox({"while True: pass": ExecResult("", "", -9, True, False, 2.0)})
    [traj] = run_tool_loop(ScriptedBackend(lambda m, p: next(outputs)), [user("q")], PARAMS, sandbox)
    assert traj.tool_errors == 1 and "TimeoutError" in traj.text


def test_output_cap_in_loop():
    outputs = iter([code_block("print('x' * 10000)"), "ok"])
    sandbox = FakeSandbox({"print('x' * 10000)": ExecResult("x" * 10000 + "\n", "", 0, False, False, 0.0)})
    [traj] = run_tool_loop(ScriptedBackend(lambda m, p: next(outputs)), [user("q")], PARAMS, sandbox, output_cap=50)
    tool = [s for s in traj.segments if s.kind == "tool"][0]
    assert len(tool.text) < 200 and "output truncated" in tool.text


def test_sandbox_exception_propagates():
    class Exploding:
        def run(self, code):
            raise OSError("sandbox worker could not start")

    with pytest.raises(OSError, match="could not start"):
        run_tool_loop(ScriptedBackend([code_block("print(1)")]), [user("q")], PARAMS, Exploding())


# --------------------------------------------------------------------------- batching
def test_all_prompts_advance_together_one_generate_per_round():
    # prompt i uses i tool rounds, then answers
    def script(msgs, params):
        i = int(msgs[0]["content"])
        done = msgs[-1]["content"].count("```output") if msgs[-1]["role"] == "assistant" else 0
        if done < i:
            return f"round {done}\n" + code_block(f"print({i}, {done})")
        return f"<verdict>A</verdict> after {done}"

    backend = ScriptedBackend(script)
    sandbox = FakeSandbox()
    trajs = run_tool_loop(backend, [user(str(i)) for i in range(4)], PARAMS, sandbox, max_rounds=3)
    assert [t.tool_calls for t in trajs] == [0, 1, 2, 3]
    # one generate call per round, with exactly the unfinished prompts
    assert [len(c) for c in backend.calls] == [4, 3, 2, 1]
    assert [c[0][0]["content"] for c in backend.calls] == ["0", "1", "2", "3"]
    assert len(sandbox.codes) == 6
    for i, t in enumerate(trajs):
        check_segments(t)
        assert t.text.endswith(f"after {i}") or i == 3
    assert trajs[3].segments[-1].text.endswith("after 3")


def test_tools_run_in_parallel_threads():
    barrier = threading.Barrier(3, timeout=10)

    class BarrierSandbox(FakeSandbox):
        def run(self, code):
            barrier.wait()  # deadlocks (then times out) unless the 3 runs are concurrent
            return super().run(code)

    outputs = {"0": code_block("print(0)"), "1": code_block("print(1)"), "2": code_block("print(2)")}

    def script(msgs, params):
        return "end" if msgs[-1]["role"] == "assistant" else outputs[msgs[0]["content"]]

    sandbox = BarrierSandbox()
    trajs = run_tool_loop(ScriptedBackend(script), [user(str(i)) for i in range(3)], PARAMS, sandbox,
                          max_parallel_tools=3)
    assert all(t.tool_calls == 1 for t in trajs)
    assert len(sandbox.threads) == 3


def test_seed_varies_per_round():
    seeds = []

    def script(msgs, params):
        seeds.append(params.seed)
        return "end" if msgs[-1]["role"] == "assistant" else code_block("print(1)")

    from judgerl.tools.tir import round_seed

    run_tool_loop(ScriptedBackend(script), [user("q")], SamplingParams(max_new_tokens=9, temperature=1.0),
                  FakeSandbox(), seeds=[7])
    assert seeds == [7, round_seed(7, 1)] and seeds[0] != seeds[1]


def test_a_trajectory_does_not_depend_on_the_others_in_its_batch():
    def script(msgs, params):
        # the "model" samples from its seed: a different seed gives a different trajectory
        n = params.seed % 3
        return "end" if msgs[-1]["role"] == "assistant" else code_block(f"print({n})")

    sampled = SamplingParams(max_new_tokens=9, temperature=1.0)
    echo = {f"print({n})": ExecResult(f"{n}\n", "", 0, False, False, 0.0) for n in range(3)}
    together = run_tool_loop(ScriptedBackend(script), [user("a"), user("b"), user("c")], sampled,
                             FakeSandbox(echo), seeds=[10, 11, 12])
    alone = run_tool_loop(ScriptedBackend(script), [user("b")], sampled, FakeSandbox(echo), seeds=[11])
    assert together[1].text == alone[0].text


def test_on_done_reports_each_trajectory_once_when_it_finishes():
    def script(msgs, params):
        return "end" if (msgs[-1]["role"] == "assistant" or msgs[-1]["content"] == "quick") else code_block("print(1)")

    done = []
    trajs = run_tool_loop(ScriptedBackend(script), [user("slow"), user("quick")], PARAMS, FakeSandbox(),
                          on_done=lambda i, t: done.append((i, t.tool_calls)))
    assert done == [(1, 0), (0, 1)] and [t.tool_calls for t in trajs] == [1, 0]


# --------------------------------------------------------------------------- prefill
def test_prefill_opening_code_fence_is_honoured():
    def script(msgs, params):
        if "```output" in msgs[-1]["content"]:
            return "</think><verdict>A</verdict>"
        return "print(6 * 7)\n```\n"

    prompt = user("q") + [{"role": "assistant", "content": "<think>\n```python\n"}]
    backend = ScriptedBackend(script)
    sandbox = FakeSandbox()
    [traj] = run_tool_loop(backend, [prompt], PARAMS, sandbox)
    assert sandbox.codes == ["print(6 * 7)\n"]
    assert [s.kind for s in traj.segments] == ["code", "tool", "model"]
    # the prefill is part of the prompt, not of the trajectory; continuation appends to it
    assert not traj.text.startswith("<think>")
    assert backend.calls[1][0][-1]["content"].startswith("<think>\n```python\nprint(6 * 7)")
    assert len(backend.calls[1][0]) == 2  # still one assistant message


def test_continue_prompt():
    base = user("q")
    assert continue_prompt(base, "") == base
    assert continue_prompt(base, "abc")[-1] == {"role": "assistant", "content": "abc"}
    pre = base + [{"role": "assistant", "content": "<think>"}]
    assert continue_prompt(pre, " more") == base + [{"role": "assistant", "content": "<think> more"}]
    assert pre[-1]["content"] == "<think>"  # input not mutated


# --------------------------------------------------------------------------- token offsets
def test_whitespace_offsets():
    traj = build_trajectory([("model", "a b "), ("code", "```python\nx\n```\n"), ("tool", "```output\n1\n```\n"), ("model", "end")])
    assert [(s.token_start, s.token_end) for s in traj.segments] == [(0, 2), (2, 5), (5, 8), (8, 9)]
    assert traj.completion_tokens == 9


def test_token_positions_whitespace_straddling_word():
    # the word "abcdef" starts before position 3: it belongs to the first piece
    assert token_positions("abcdef gh", [0, 3, 9]) == [0, 1, 2]


@pytest.fixture(scope="module")
def tok(embedded_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(embedded_model_dir))


def test_tokenizer_offsets_match_tokenizer_count(tok):
    pieces = [
        ("model", "<think>Let me compute.\n"),
        ("code", "```python\nprint(12 * 7)\n```\n"),
        ("tool", "```output\n84\n```\n"),
        ("model", "So 84.</think><verdict>A</verdict>"),
    ]
    traj = build_trajectory(pieces, tok, tool_calls=1)
    check_segments(traj)
    full = "".join(t for _, t in pieces)
    assert traj.completion_tokens == len(tok(full, add_special_tokens=False)["input_ids"])
    # each segment's token span decodes back to (about) its text
    ids = tok(full, add_special_tokens=False)["input_ids"]
    tool = traj.segments[2]
    assert "84" in tok.decode(ids[tool.token_start : tool.token_end])
    assert "print" not in tok.decode(ids[tool.token_start : tool.token_end])


def test_loop_uses_backend_tokenizer(tok):
    class TokBackend(ScriptedBackend):
        tokenizer = tok

    [traj] = run_tool_loop(TokBackend(["hello world, how are you"]), [user("q")], PARAMS, FakeSandbox())
    n = len(TokBackend.tokenizer("hello world, how are you", add_special_tokens=False)["input_ids"])
    assert traj.completion_tokens == n
    [traj_ws] = run_tool_loop(TokBackend(["hello world, how are you"]), [user("q")], PARAMS, FakeSandbox(),
                              tokenizer="whitespace")
    assert traj_ws.completion_tokens == 5


# --------------------------------------------------------------------------- real sandbox
@pytest.fixture(scope="module")
def real_sandbox():
    from judgerl.tools import get_sandbox

    sb = get_sandbox(timeout_s=2)
    yield sb
    sb.close()


def test_real_sandbox_runs_code_and_reports_errors(real_sandbox):
    def script(msgs, params):
        n = msgs[-1]["content"].count("```output") if msgs[-1]["role"] == "assistant" else 0
        if n == 0:
            return "Check both sums.\n" + code_block("print(16 - 3 - 4, (16 - 3 - 4) * 2)")
        if n == 1:
            return "Now B's claim.\n" + code_block("print(totl)")
        return "A is right.</think><verdict>A</verdict>"

    [traj] = run_tool_loop(ScriptedBackend(script), [user("q")], PARAMS, real_sandbox)
    tools = [s.text for s in traj.segments if s.kind == "tool"]
    assert tools[0] == "```output\n9 18\n```\n"
    assert tools[1] == "```output\nNameError: name 'totl' is not defined\n```\n"
    assert traj.tool_calls == 2 and traj.tool_errors == 1
    check_segments(traj)


def test_real_sandbox_timeout(real_sandbox):
    outputs = iter([code_block("while True:\n    pass"), "gave up"])
    [traj] = run_tool_loop(ScriptedBackend(lambda m, p: next(outputs)), [user("q")], PARAMS, real_sandbox)
    assert traj.tool_errors == 1
    assert "TimeoutError" in [s for s in traj.segments if s.kind == "tool"][0].text


# --------------------------------------------------------------------------- embedded model
@pytest.mark.slow
def test_embedded_model_tool_loop(embedded_backend, real_sandbox):
    prompt = [
        {"role": "user", "content": "What is 12 * 7? Use Python."},
        {"role": "assistant", "content": "```python\nprint(12 * 7)"},
    ]
    trajs = run_tool_loop(embedded_backend, [prompt, user("Say hi.")], SamplingParams(max_new_tokens=12),
                          real_sandbox, max_rounds=1)
    for t in trajs:
        check_segments(t)
        ids = embedded_backend.tokenizer(t.text, add_special_tokens=False)["input_ids"]
        assert t.completion_tokens == len(ids)
        assert t.prompt_tokens > 0
    if trajs[0].tool_calls:  # the model closed the fence: the real output follows
        assert "84" in [s for s in trajs[0].segments if s.kind == "tool"][0].text
