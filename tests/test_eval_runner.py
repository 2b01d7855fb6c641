"""The eval runner: plans, determinism, resume after a crash, config checks, tools."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.judging import ev
from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.backends.base import Backend
from judgerl.eval import RunConfigMismatch, first_order, plan_units, read_judgments, run_eval
from judgerl.protocols import get_protocol
from judgerl.types import PreferencePair

PARAMS = SamplingParams(max_new_tokens=64)
SAMPLED = SamplingParams(max_new_tokens=64, temperature=0.7)


def make_pairs(n: int, source: str = "toy") -> list[PreferencePair]:
    return [
        PreferencePair(id=f"q{i}", prompt=f"Question {i}?", chosen=f"GOOD answer {i}", rejected=f"BAD answer {i}",
                       source=source if i % 2 else f"{source}-odd")
        for i in range(n)
    ]


def oracle_judge(messages, params) -> str:
    """A PaV judge that is always right: picks the position where the GOOD answer appears."""
    text = messages[-1]["content"]
    return "<think>compare</think><verdict>" + ("A" if text.index("GOOD") < text.index("BAD") else "B") + "</verdict>"


def always_a(messages, params) -> str:
    return "<think>first one</think><verdict>A</verdict>"


class CrashingBackend(Backend):
    """Delegates to a ScriptedBackend, raising on generate call number ``crash_at`` (1-based)."""

    def __init__(self, fn, crash_at: int) -> None:
        self.inner = ScriptedBackend(fn)
        self.name = "scripted"
        self.crash_at = crash_at
        self.n_calls = 0
        self.n_prompts = 0

    def generate(self, prompts, params, **kw):
        self.n_calls += 1
        if self.n_calls == self.crash_at:
            raise RuntimeError("simulated crash")
        self.n_prompts += len(prompts)
        return self.inner.generate(prompts, params, **kw)


def keys(path: Path) -> list[tuple[str, str, int]]:
    return [(r["pair_id"], r["order"], r["sample"]) for r in read_judgments(path)]


def test_plan_judges_both_orders_and_all_samples():
    pairs = make_pairs(5)
    units = plan_units(pairs, "pairwise", samples=3, seed=0)
    assert len(units) == 5 * 2 * 3
    per_pair = Counter(u.pair.id for u in units)
    assert set(per_pair.values()) == {6}
    u = units[0]
    assert u.order_index == 0 and u.order == first_order(0, u.pair.id, "pairwise")
    assert {x.order for x in units if x.pair.id == u.pair.id} == {"AB", "BA"}
    ab = next(x for x in units if x.order == "AB")
    assert ab.responses()[ab.chosen_index] == ab.pair.chosen
    ba = next(x for x in units if x.order == "BA")
    assert ba.responses()[ba.chosen_index] == ba.pair.chosen
    pointwise = plan_units(pairs, "pointwise", samples=2, seed=0)
    assert len(pointwise) == 5 * 2 * 2 and {x.order for x in pointwise} == {"chosen", "rejected"}
    assert all(x.chosen_index is None for x in pointwise)


def test_first_order_is_seeded_deterministic_and_balanced():
    ids = [f"pair-{i}" for i in range(400)]
    a = [first_order(7, i, "pairwise") for i in ids]
    assert a == [first_order(7, i, "pairwise") for i in ids]
    assert a != [first_order(8, i, "pairwise") for i in ids]
    assert 150 < a.count("AB") < 250


def test_plan_rejects_duplicate_ids_and_bad_args():
    p = make_pairs(2)
    with pytest.raises(ValueError, match="duplicate pair id 'q0'"):
        plan_units([p[0], p[0]], "pairwise", 1, 0)
    with pytest.raises(ValueError, match="samples"):
        plan_units(p, "pairwise", 0, 0)
    with pytest.raises(ValueError, match="kind"):
        plan_units(p, "nope", 1, 0)


def test_run_writes_files_and_correct_metrics(tmp_path):
    s = ev(ScriptedBackend(oracle_judge), get_protocol("pav"), make_pairs(6), tmp_path, params=PARAMS,
                 progress=False)
    assert s["accuracy"] == 1.0 and s["position_consistent_accuracy"] == 1.0 and s["flip_rate"] == 0.0
    for f in ("judgments.jsonl", "summary.json", "report.md", "accuracy_by_source.png", "run.json"):
        assert (tmp_path / f).is_file(), f
    recs = read_judgments(tmp_path / "judgments.jsonl")
    assert len(recs) == 12
    r = recs[0]
    for field in ("pair_id", "source", "order", "order_index", "sample", "chosen_index", "prompt_hash",
                  "raw_output", "decision", "correct", "completion_tokens", "finish_reason"):
        assert field in r
    assert r["raw_output"].startswith("<think>") and r["correct"] is True
    assert json.loads((tmp_path / "summary.json").read_text())["n_pairs"] == 6
    assert set(s["by_source"]) == {"toy", "toy-odd"}


def test_same_seed_same_presentation_order(tmp_path):
    def run(d, seed):
        backend = ScriptedBackend(always_a)
        ev(backend, get_protocol("pav"), make_pairs(8), d, seed=seed, params=PARAMS, progress=False)
        return [m[-1]["content"] for call in backend.calls for m in call]

    first = run(tmp_path / "a", 3)
    assert first == run(tmp_path / "b", 3)
    assert first != run(tmp_path / "c", 4)


def test_resume_after_crash_has_exactly_one_judgment_per_unit(tmp_path):
    pairs = make_pairs(5)
    proto = get_protocol("pav")
    crashing = CrashingBackend(oracle_judge, crash_at=3)
    with pytest.raises(RuntimeError, match="simulated crash"):
        ev(crashing, proto, pairs, tmp_path, samples=2, params=SAMPLED, batch_size=3, progress=False)
    jpath = tmp_path / "judgments.jsonl"
    assert len(keys(jpath)) == 6  # two full batches of 3 written before the crash
    assert not (tmp_path / "summary.json").exists()

    resumed = CrashingBackend(oracle_judge, crash_at=-1)
    s = ev(resumed, proto, pairs, tmp_path, samples=2, params=SAMPLED, batch_size=3, progress=False)
    ks = keys(jpath)
    assert len(ks) == len(set(ks)) == 5 * 2 * 2
    assert resumed.n_prompts == 20 - 6  # nothing repeated
    assert s["timing"]["judgments_resumed"] == 6 and s["timing"]["judgments_this_run"] == 14
    assert s["n_samples"] == 20 and s["accuracy"] == 1.0

    again = CrashingBackend(oracle_judge, crash_at=-1)
    ev(again, proto, pairs, tmp_path, samples=2, params=SAMPLED, batch_size=3, progress=False)
    assert again.n_prompts == 0 and len(keys(jpath)) == 20


def test_torn_last_line_is_dropped_and_redone(tmp_path):
    pairs = make_pairs(3)
    proto = get_protocol("pav")
    ev(ScriptedBackend(oracle_judge), proto, pairs, tmp_path, params=PARAMS, progress=False)
    jpath = tmp_path / "judgments.jsonl"
    lines = jpath.read_text().splitlines(keepends=True)
    jpath.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # crash mid-write
    backend = ScriptedBackend(oracle_judge)
    with pytest.warns(UserWarning, match="torn last line"):
        s = ev(backend, proto, pairs, tmp_path, params=PARAMS, progress=False)
    assert sum(len(c) for c in backend.calls) == 1
    ks = keys(jpath)
    assert len(ks) == len(set(ks)) == 6 and s["accuracy"] == 1.0


def test_corrupt_middle_line_is_an_error(tmp_path):
    ev(ScriptedBackend(oracle_judge), get_protocol("pav"), make_pairs(2), tmp_path, params=PARAMS,
             progress=False)
    jpath = tmp_path / "judgments.jsonl"
    lines = jpath.read_text().splitlines(keepends=True)
    jpath.write_text(lines[0] + "{not json\n" + "".join(lines[1:]))
    with pytest.raises(ValueError, match=r"judgments.jsonl:2: corrupt"):
        ev(ScriptedBackend(oracle_judge), get_protocol("pav"), make_pairs(2), tmp_path, params=PARAMS,
                 progress=False)


def test_refuses_to_resume_a_different_run(tmp_path):
    pairs = make_pairs(2)
    ev(ScriptedBackend(oracle_judge), get_protocol("pav"), pairs, tmp_path, params=PARAMS, progress=False)
    with pytest.raises(RunConfigMismatch, match="samples: 1 in run.json, 2 now"):
        ev(ScriptedBackend(oracle_judge), get_protocol("pav"), pairs, tmp_path, samples=2,
                 params=SAMPLED, progress=False)
    with pytest.raises(RunConfigMismatch, match="protocol"):
        ev(ScriptedBackend(oracle_judge), get_protocol("pas"), pairs, tmp_path, params=PARAMS,
                 progress=False)
    changed = [pairs[0], PreferencePair(id="q1", prompt="other", chosen="GOOD", rejected="BAD")]
    with pytest.raises(RunConfigMismatch, match="pair 'q1' has different content"):
        ev(ScriptedBackend(oracle_judge), get_protocol("pav"), changed, tmp_path, params=PARAMS,
                 progress=False)
    # overwrite (resume=False) discards the old run
    s = ev(ScriptedBackend(always_a), get_protocol("pav"), pairs, tmp_path, samples=2, params=SAMPLED,
                 progress=False, resume=False)
    assert s["n_samples"] == 8 and s["accuracy"] == 0.5


def test_limit_can_grow_and_summary_covers_only_current_pairs(tmp_path):
    proto = get_protocol("pav")
    ev(ScriptedBackend(oracle_judge), proto, make_pairs(3), tmp_path, params=PARAMS, progress=False)
    backend = ScriptedBackend(oracle_judge)
    s = ev(backend, proto, make_pairs(5), tmp_path, params=PARAMS, progress=False)
    assert sum(len(c) for c in backend.calls) == 4 and s["n_pairs"] == 5
    s = ev(ScriptedBackend(oracle_judge), proto, make_pairs(2), tmp_path, params=PARAMS, progress=False)
    assert s["n_pairs"] == 2


def test_invalid_outputs_are_counted_not_tied(tmp_path):
    outputs = iter(["<think>x</think><verdict>A</verdict>", "I think A is better"] * 4)
    s = ev(ScriptedBackend(lambda m, p: next(outputs)), get_protocol("pav"), make_pairs(4), tmp_path,
                 params=PARAMS, progress=False, batch_size=1)
    assert s["invalid_rate"] == 0.5 and s["tie_rate"] == 0.0
    assert s["invalid_reasons"] and sum(s["invalid_reasons"].values()) == 4
    recs = read_judgments(tmp_path / "judgments.jsonl")
    bad = [r for r in recs if not r["decision"]["valid"]]
    assert len(bad) == 4 and all(r["choice"] is None and r["correct"] is None for r in bad)


def test_pointwise_protocol_scores_each_response(tmp_path):
    def scorer(messages, params):
        text = messages[-1]["content"]
        return "<think>ok</think><score>" + ("8" if "GOOD" in text else "3") + "</score>"

    backend = ScriptedBackend(scorer)
    s = ev(backend, get_protocol("pos"), make_pairs(4), tmp_path, params=PARAMS, progress=False)
    assert s["kind"] == "pointwise" and s["accuracy"] == 1.0
    assert s["position_consistent_accuracy"] == s["accuracy"] and s["flip_rate"] is None
    assert sum(len(c) for c in backend.calls) == 8
    for call in backend.calls:
        for msgs in call:
            content = msgs[-1]["content"]
            assert ("GOOD" in content) != ("BAD" in content)  # one response per prompt


def test_test_time_scaling_majority_vote(tmp_path):
    # 3 samples per order: two right, one wrong -> every judgment right after voting.
    counter = Counter()

    def noisy(messages, params):
        text = messages[-1]["content"]
        counter[text] += 1
        right = "A" if text.index("GOOD") < text.index("BAD") else "B"
        wrong = "B" if right == "A" else "A"
        return f"<verdict>{wrong if counter[text] % 3 == 0 else right}</verdict>"

    s = ev(ScriptedBackend(noisy), get_protocol("pav"), make_pairs(4), tmp_path, samples=3,
                 params=SamplingParams(max_new_tokens=16, temperature=0.7), progress=False)
    assert s["n_samples"] == 24 and s["n_judgments"] == 8
    assert s["accuracy"] == 1.0 and s["position_consistent_accuracy"] == 1.0


def test_listwise_protocol_on_pairs(tmp_path):
    def best(messages, params):
        text = messages[-1]["content"]
        return "<think>x</think><best>" + ("1" if text.index("GOOD") < text.index("BAD") else "2") + "</best>"

    s = ev(ScriptedBackend(best), get_protocol("listwise"), make_pairs(3), tmp_path, params=PARAMS,
                 progress=False)
    assert s["kind"] == "listwise" and s["accuracy"] == 1.0 and s["n_judgments"] == 6


@dataclass
class FakeExec:
    stdout: str
    stderr: str = ""
    exit_code: int = 0
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class FakeSandbox:
    def __init__(self) -> None:
        self.codes: list[str] = []

    def run(self, code: str) -> FakeExec:
        self.codes.append(code)
        if "boom" in code:
            return FakeExec("", "Traceback ...\nNameError: name 'boom' is not defined", exit_code=1)
        return FakeExec("4\n")


def test_tool_loop_adds_tool_statistics(tmp_path):
    def tir_judge(messages, params):
        prefix = messages[-1]["content"] if messages[-1]["role"] == "assistant" else ""
        if "```output" in prefix:
            return "<think>checked</think><verdict>A</verdict>"
        code = "print(boom)" if "Question 0" in messages[1]["content"] else "print(2 + 2)"
        return f"<think>let me check</think>\n```python\n{code}\n```\n"

    sandbox = FakeSandbox()
    s = ev(ScriptedBackend(tir_judge), get_protocol("pav"), make_pairs(3), tmp_path, params=PARAMS,
                 sandbox=sandbox, progress=False)
    assert len(sandbox.codes) == 6
    assert s["tool_use_rate"] == 1.0 and s["mean_tool_rounds"] == 1.0
    assert s["tool_error_rate"] == pytest.approx(2 / 6)
    assert s["config"]["tools"] == "python"
    recs = read_judgments(tmp_path / "judgments.jsonl")
    assert all(r["trajectory"]["tool_calls"] == 1 for r in recs)
    assert "```output" in recs[0]["raw_output"]
    assert "Tool use" in (tmp_path / "report.md").read_text()


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="no pairs"):
        ev(ScriptedBackend(always_a), get_protocol("pav"), [], tmp_path)
    with pytest.raises(ValueError, match="batch_size"):
        ev(ScriptedBackend(always_a), get_protocol("pav"), make_pairs(1), tmp_path, batch_size=0)


def test_last_record_without_newline_is_kept_and_appending_stays_line_based(tmp_path):
    proto = get_protocol("pav")
    ev(ScriptedBackend(oracle_judge), proto, make_pairs(2), tmp_path, params=PARAMS, progress=False)
    jpath = tmp_path / "judgments.jsonl"
    jpath.write_text(jpath.read_text().rstrip("\n"))
    backend = ScriptedBackend(oracle_judge)
    ev(backend, proto, make_pairs(3), tmp_path, params=PARAMS, progress=False)
    assert sum(len(c) for c in backend.calls) == 2
    ks = keys(jpath)
    assert len(ks) == len(set(ks)) == 6


# --------------------------------------------------------------------------- answer forcing


def test_force_answer_prefills_tag_only_for_unfinished_judgments(tmp_path):
    pav = get_protocol("pav")
    pairs = [PreferencePair(id=f"p{i}", prompt="2+2?", chosen="4", rejected="5") for i in range(2)]

    def reply(messages, params):
        last = messages[-1]
        if last["role"] == "assistant":  # the forced continuation
            assert last["content"].endswith("<verdict>")
            return "A</verdict>"
        return "<think>Both look similar"  # an untrained judge that never answers

    summary = ev(ScriptedBackend(reply), pav, pairs, tmp_path / "forced", force_answer=True, progress=False)
    assert summary["invalid_rate"] == 0.0
    assert summary["forced_answer_rate"] == 1.0
    recs = [json.loads(line) for line in (tmp_path / "forced" / "judgments.jsonl").read_text().splitlines()]
    assert all(r["forced_answer"] for r in recs)
    assert all(r["raw_output"] == "<think>Both look similar\n</think>\n<verdict>A</verdict>" for r in recs)
    # Always answering "A" is right in exactly one of the two orders of every pair.
    assert summary["accuracy"] == 0.5 and summary["position_consistent_accuracy"] == 0.0

    # Without the flag the same outputs stay invalid (never silently repaired).
    plain = ev(ScriptedBackend(reply), pav, pairs, tmp_path / "plain", progress=False)
    assert plain["invalid_rate"] == 1.0 and "forced_answer_rate" not in plain
    assert pav.force_suffix("no think tags") == "\n\n<verdict>"
    # An echoed, never-closed code fence is closed first, so the forced tag is outside the code.
    echoed = "<think>Response A:\n```python\ndef f(x):\n    return x"
    forced = echoed + pav.force_suffix(echoed) + "A</verdict>"
    assert pav.parse(forced).verdict == "A"


def test_force_answer_leaves_finished_judgments_alone(tmp_path):

    backend = ScriptedBackend(lambda m, p: "<think>ok</think><verdict>B</verdict>")
    pairs = [PreferencePair(id="p", prompt="q", chosen="x", rejected="y")]
    summary = ev(backend, get_protocol("pav"), pairs, tmp_path, force_answer=True, progress=False)
    assert summary["forced_answer_rate"] == 0.0
    assert len(backend.calls) == 1  # no extra generate call


def test_forced_single_tag_answer_stops_at_end_of_line(tmp_path):
    """A small judge that runs on after the forced verdict (code, a second tag) is cut at the line end."""

    def reply(messages, params):
        if messages[-1]["role"] == "assistant":
            assert "</verdict>" in params.stop and "\n" in params.stop
            return "B\n\n```python\ndef f(): pass\n```\n<verdict>A</verdict>"
        return "Looking at both programs"

    pairs = [PreferencePair(id="p", prompt="q", chosen="x", rejected="y")]
    ev(ScriptedBackend(reply), get_protocol("pav"), pairs, tmp_path, force_answer=True, progress=False)
    recs = [json.loads(line) for line in (tmp_path / "judgments.jsonl").read_text().splitlines()]
    assert [r["raw_output"] for r in recs] == ["Looking at both programs\n\n<verdict>B</verdict>"] * 2
    assert all(r["decision"]["verdict"] == "B" for r in recs)
