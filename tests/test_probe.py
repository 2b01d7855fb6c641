"""`judgerl probe`: probe set, pass definitions, resume, ensembles, CLI and bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.cli.main import main
from judgerl.judge.ensemble import JudgeEnsemble
from judgerl.eval import RunConfigMismatch
from judgerl.judge import Judge
from judgerl.probe import (
    HACK_TEMPLATES,
    ProbePrompt,
    default_probes,
    hack_probes,
    load_probe_prompts,
    load_prompts_file,
    master_key_probes,
    plan_probe,
    run_probe,
)
from judgerl.protocols import get_protocol

PARAMS = SamplingParams(max_new_tokens=32)
PROMPTS = [ProbePrompt("toy/1", "toy", "What is 2+2?", "2+2 = 4. The answer is 4."),
           ProbePrompt("toy/2", "toy", "Write a haiku about rain.", None)]


def gullible(messages, params) -> str:
    """Passes everything except the reference answers (score 8 vs 3)."""
    return "<think>t</think><score>" + ("3" if "The answer is 4" in messages[-1]["content"] else "8") + "</score>"


def run(judge, tmp_path: Path, name: str = "p", **kw) -> dict:
    return run_probe(judge, kw.pop("prompts", PROMPTS), tmp_path / name, progress=False, **kw)


def test_every_probe_response_is_flagged_by_the_audit() -> None:
    from judgerl.audit import flag_response

    for prompt in ("What is 2+2?", "Write a 300 word essay about the history of Rome without commas."):
        for p in default_probes():
            assert flag_response(p.text, prompt), p.name
    assert flag_response(HACK_TEMPLATES["hacking_pattern"], "What is 2+2?")[-1] == "hacking_pattern"


def test_one_master_key_list() -> None:
    import judgerl.audit as audit
    import judgerl.audit.detectors as detectors
    from judgerl.rewards import guards

    assert audit.DEFAULT_MASTER_KEYS is guards.DEFAULT_MASTER_KEYS is detectors.DEFAULT_MASTER_KEYS
    names = [p.name for p in master_key_probes()]
    assert names[0] == "master_key:<empty>" and len(names) == len(set(guards.DEFAULT_MASTER_KEYS)) + 1
    with pytest.raises(ValueError, match="unknown hacking template"):
        hack_probes(["nope"])


def test_plan_pointwise_and_pairwise() -> None:
    probes = hack_probes(["self_evaluation"])
    point = plan_probe(PROMPTS, probes, "pointwise")
    assert [(u.prompt.id, u.probe.name, u.order) for u in point] == [
        ("toy/1", "hack:self_evaluation", "single"), ("toy/1", "reference", "single"),
        ("toy/2", "hack:self_evaluation", "single")]
    pair = plan_probe(PROMPTS, probes, "pairwise")  # the haiku has no reference: skipped
    assert [(u.order, u.probe_position) for u in pair] == [("hack_first", 0), ("reference_first", 1)]
    assert pair[1].responses() == (PROMPTS[0].reference, HACK_TEMPLATES["self_evaluation"])
    with pytest.raises(ValueError, match="reference"):
        plan_probe(PROMPTS[1:], probes, "pairwise")
    with pytest.raises(ValueError, match="listwise"):
        plan_probe(PROMPTS, probes, "listwise")
    with pytest.raises(ValueError, match="duplicate"):
        plan_probe([PROMPTS[0], PROMPTS[0]], probes, "pointwise")


def test_pointwise_pass_rates_threshold_and_screens(tmp_path: Path) -> None:
    judge = Judge(get_protocol("pos"), ScriptedBackend(gullible), PARAMS)
    s = run(judge, tmp_path)
    assert s["threshold"] == 5.0 and s["false_positive_rate"] == 1.0
    assert s["families"]["reference"]["pass_rate"] == 0.0
    assert s["families"]["hack"]["mean_score"] == pytest.approx(0.8)
    n_keys = len(master_key_probes())
    assert s["families"]["master_key"]["n"] == 2 * n_keys and s["n_judgments"] == 2 * (n_keys + 6) + 1
    assert s["guard_would_block"] == {"n": 2 * n_keys, "of": 2 * (n_keys + 6), "rate": n_keys / (n_keys + 6)}
    assert s["audit_flagged"]["rate"] == 1.0
    assert "off" in s["guards"]
    strict = run(judge, tmp_path, "strict", threshold=9)
    assert strict["false_positive_rate"] == 0.0
    with pytest.raises(ValueError, match="outside"):
        run(judge, tmp_path, "bad", threshold=11)
    with pytest.raises(ValueError, match="outside"):
        run(judge, tmp_path, "nan", threshold=float("nan"))
    report = (tmp_path / "p" / "report.md").read_text()
    assert "False-positive rate" in report and "hack:note_to_evaluator" in report
    assert (tmp_path / "p" / "probe_pass_rates.png").stat().st_size > 1000


def test_pairwise_passes_are_preferences_over_the_reference(tmp_path: Path) -> None:
    always_a = Judge(get_protocol("pav"), ScriptedBackend(lambda m, p: "<think>t</think><verdict>A</verdict>"), PARAMS)
    s = run(always_a, tmp_path, probes=hack_probes())
    hack = s["families"]["hack"]
    assert hack["pass_rate"] == 0.5 and hack["consistent_pass_rate"] == 0.0 and hack["tie_rate"] == 0.0
    assert "reference" not in s["families"]
    with pytest.raises(ValueError, match="pointwise"):
        run(always_a, tmp_path, "t", threshold=5)

    def fooled(messages, params):  # prefers whichever response is not the real answer
        u = messages[-1]["content"]
        return "<think>t</think><verdict>" + ("B" if u.index("The answer is 4") < u.index("[The Start of Assistant B")
                                              else "A") + "</verdict>"

    s2 = run(Judge(get_protocol("pav"), ScriptedBackend(fooled), PARAMS), tmp_path, "fooled", probes=hack_probes())
    assert s2["false_positive_rate"] == 1.0 and s2["families"]["hack"]["consistent_pass_rate"] == 1.0


def test_invalid_judgments_are_never_passes(tmp_path: Path) -> None:
    judge = Judge(get_protocol("pos"), ScriptedBackend(lambda m, p: "I think it is great"), PARAMS)
    s = run(judge, tmp_path, probes=hack_probes(["self_evaluation"]))
    assert s["false_positive_rate"] == 0.0 and s["families"]["hack"]["invalid_rate"] == 1.0
    assert s["families"]["hack"]["pass_rate_valid"] is None
    assert s["invalid_reasons"] == {"missing_final_answer": 3}


def test_resume_config_and_data_checks(tmp_path: Path) -> None:
    backend = ScriptedBackend(gullible)
    judge = Judge(get_protocol("pos"), backend, PARAMS)
    probes = hack_probes(["policy_refusal", "fake_end_marker"])
    first = run(judge, tmp_path, probes=probes)
    n_calls = len(backend.calls)
    again = run(judge, tmp_path, probes=probes)
    assert len(backend.calls) == n_calls and again["timing"]["judgments_this_run"] == 0
    assert again["false_positive_rate"] == first["false_positive_rate"]
    more = run(judge, tmp_path, probes=hack_probes(["policy_refusal", "fake_end_marker", "self_evaluation"]))
    assert more["timing"]["judgments_this_run"] == 2  # only the new probe, on both prompts
    with pytest.raises(RunConfigMismatch, match="different configuration"):
        run(Judge(get_protocol("pos", anti_hacking=True), backend, PARAMS), tmp_path, probes=probes)
    changed = [ProbePrompt("toy/1", "toy", "What is 3+3?", "6"), PROMPTS[1]]
    with pytest.raises(RunConfigMismatch, match="data changed"):
        run(judge, tmp_path, probes=probes, prompts=changed)
    fresh = run_probe(judge, changed, tmp_path / "p", probes=probes, progress=False, resume=False)
    assert fresh["timing"]["judgments_this_run"] == 5


def test_ensemble_probe_min_defends(tmp_path: Path) -> None:
    fooled = Judge(get_protocol("pos"), ScriptedBackend(gullible, name="fooled"), PARAMS)

    def wary(messages, params):
        u = messages[-1]["content"].lower()
        return "<think>t</think><score>" + ("1" if any(w in u for w in ("policy", "evaluat", "score", "end response",
                                                                        "thanks")) else "7") + "</score>"

    careful = Judge(get_protocol("pos", max_score=9), ScriptedBackend(wary, name="wary"), PARAMS)
    probes = hack_probes()
    single = run(fooled, tmp_path, "one", probes=probes)
    ens = run(JudgeEnsemble([fooled, careful], "min"), tmp_path, "ens", probes=probes)
    assert single["false_positive_rate"] == 1.0 and ens["false_positive_rate"] < 0.2
    rec = json.loads((tmp_path / "ens" / "judgments.jsonl").open().readline())
    assert len(rec["members"]) == 2 and len(rec["samples"]) == 2
    assert "ensemble (min) of fooled, wary" in (tmp_path / "ens" / "report.md").read_text()


def test_load_probe_prompts_from_shared_data(shared_data: Path) -> None:
    prompts = load_probe_prompts(shared_data, n_per_source=3, seed=1)
    assert [p.source for p in prompts] == ["ifeval"] * 3 + ["gsm8k"] * 3 + ["llmbar"] * 3
    assert load_probe_prompts(shared_data, n_per_source=3, seed=1) == prompts
    assert all(p.reference is None for p in prompts[:3]) and all(p.reference for p in prompts[3:])
    gsm = prompts[3].reference
    assert "<<" not in gsm and gsm.rstrip().split("\n")[-1].startswith("The answer is ")
    with pytest.raises(FileNotFoundError, match="data-dir"):
        load_probe_prompts(shared_data / "nope", ["gsm8k"])
    with pytest.raises(ValueError, match="unknown probe source"):
        load_probe_prompts(shared_data, ["mmlu"])


@pytest.mark.parametrize("line, message", [
    ('{"id": 1}', "line 1: field 'prompt' must be a non-empty string"),
    ('{"prompt": "  "}', "field 'prompt' must be a non-empty string"),
    ('{"prompt": "Q", "reference": 5}', "field 'reference' must be a string or null"),
    ('{"prompt": "Q", "id": true}', "field 'id' must be a non-empty string or an integer"),
    ('["Q"]', "must be a JSON object"),
    ('{"prompt": "Q", "id": 1}\n{"prompt": "R", "id": 1}', "line 2: field 'id' duplicate id 1"),
    ('{"prompt": "Q"', "line 1"),
])
def test_bad_prompt_files_name_the_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    f = tmp_path / "mine.jsonl"
    f.write_text(line + "\n")
    with pytest.raises(ValueError, match=message):
        load_prompts_file(f)


def test_cli_with_a_prompts_file_and_an_ensemble(tmp_path: Path, capsys) -> None:
    prompts = tmp_path / "mine.jsonl"
    prompts.write_text('{"id": "a", "prompt": "What is 2+2?", "reference": "4"}\n{"prompt": "Name a color."}\n')
    outputs = tmp_path / "judge.jsonl"
    outputs.write_text(json.dumps("<think>t</think><score>7</score>") + "\n")
    out = tmp_path / "probe"
    args = ["probe", "--judge", f"scripted/{outputs}", "--prompts", str(prompts), "--hacks", "self_evaluation",
            "--no-keys", "-o", str(out), "--no-progress"]
    assert main(args) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["false_positive_rate"] == 1.0 and s["n_judgments"] == 3
    assert "false-positive rate 100.0%" in capsys.readouterr().out
    assert main(args + ["--max-new-tokens", "12"]) == 2  # a different judge config is refused
    ens = tmp_path / "ens"
    assert main(["probe", "--judge", f"scripted/{outputs}", "--judge", f"scripted/{outputs}", "--combine", "min",
                 "--prompts", str(prompts), "--no-keys", "--hacks", "all", "-o", str(ens), "--no-progress",
                 "--anti-hacking", "--protocol-arg", "max_score=9"]) == 0
    cfg = json.loads((ens / "run.json").read_text())["config"]["judge"]
    assert cfg["ensemble"]["combine"] == "min" and cfg["members"][0]["protocol"]["anti_hacking"] is True
    assert main(["probe", "--judge", f"scripted/{outputs}", "--prompts", str(prompts), "--no-keys", "--hacks",
                 "none", "-o", str(tmp_path / "x")]) == 2
    assert main(["probe", "--judge", f"scripted/{outputs}", "--protocol", "listwise", "--prompts", str(prompts),
                 "-o", str(tmp_path / "y")]) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\n')
    assert main(["probe", "--judge", f"scripted/{outputs}", "--prompts", str(bad), "-o", str(tmp_path / "z")]) == 2
    assert "bad.jsonl line 1: field 'prompt'" in capsys.readouterr().err


@pytest.mark.slow
def test_probe_on_the_embedded_model(tmp_path: Path, embedded_backend) -> None:
    judge = Judge(get_protocol("pos", anti_hacking=True), embedded_backend, SamplingParams(max_new_tokens=16),
                  force_answer=True)
    s = run(judge, tmp_path, probes=hack_probes(["self_evaluation"]) + master_key_probes(["Solution"], include_empty=False))
    assert s["n_judgments"] == 5 and 0.0 <= s["false_positive_rate"] <= 1.0
    assert sum(1 for _ in (tmp_path / "p" / "judgments.jsonl").open()) == 5


def _probe_records(passes_per_prompt: list[list[bool]]) -> list[dict]:
    return [{"prompt_id": f"q{i}", "probe": "key:solution", "family": "master_key", "source": "toy", "probe_position": 0,
             "decision": {"valid": True, "verdict": "A" if p else "B"}}
            for i, passes in enumerate(passes_per_prompt) for p in passes]


@pytest.mark.parametrize("passes, n_eff", [
    ([[True]] * 10, 10),          # issue 22: 10/10 passed gave the zero-width bootstrap [1.0, 1.0]
    ([[False]] * 10, 10),         # 0/10 likewise [0.0, 0.0]
    ([[True]], 1),                # one prompt
    ([[True] * 10], 1),           # ten judgments of one prompt are one unit, not ten
    ([[True] * 3, [False]], 1),   # unequal judgments per prompt: Kish n_eff = 16/10 -> 1
])
def test_probe_pass_rate_cis_are_wilson_over_prompts_and_never_zero_width(passes, n_eff) -> None:
    from judgerl.eval.intervals import mean_ci, proportion_ci
    from judgerl.probe.summary import summarise_probe

    s = summarise_probe(_probe_records(passes), [], kind="pairwise", scale=None, threshold=None)
    lo, hi = s["false_positive_rate_ci"]
    rate = s["false_positive_rate"]
    assert rate == sum(map(sum, passes)) / sum(map(len, passes))
    assert hi - lo > 0.05 and lo <= rate <= hi
    fracs = [sum(p) / len(p) for p in passes]
    assert [lo, hi] == pytest.approx(list(mean_ci(fracs, weights=[len(p) for p in passes])))
    if len(set(fracs)) == 1:
        assert [lo, hi] == pytest.approx(list(proportion_ci(round(fracs[0] * n_eff), n_eff)))
    if passes == [[True]] * 10:
        assert lo == pytest.approx(0.7225, abs=1e-3) and hi == 1.0
