"""`judgerl eval` through judgerl.cli.main.main with a scripted model (fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.cli.main import main
from judgerl.data import write_pairs_jsonl
from judgerl.eval import read_judgments
from judgerl.types import PreferencePair


@pytest.fixture()
def always_a_model(tmp_path: Path) -> str:
    path = tmp_path / "outputs.jsonl"
    path.write_text(json.dumps("<think>A looks fine</think><verdict>A</verdict>") + "\n"
                    + json.dumps({"text": "<think>A again</think>\n<verdict>A</verdict>"}) + "\n")
    return f"scripted/{path}"


def test_eval_cli_on_llmbar_writes_three_files_and_resumes(tmp_path, shared_data, always_a_model, capsys):
    out = tmp_path / "run"
    argv = ["eval", "--model", always_a_model, "--data", str(shared_data / "llmbar" / "natural.json"),
            "--protocol", "pav", "--limit", "5", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    assert "accuracy 50.0%" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    for key in ("n_pairs", "accuracy", "position_consistent_accuracy", "flip_rate", "tie_rate", "invalid_rate",
                "by_source"):
        assert key in summary
    # an always-"A" judge: right in exactly one order of every pair
    assert summary["n_pairs"] == 5 and summary["accuracy"] == 0.5
    assert summary["position_consistent_accuracy"] == 0.0 and summary["flip_rate"] == 1.0
    assert summary["by_source"]["llmbar/natural"]["n_pairs"] == 5
    assert summary["info"]["format"] == "llmbar"
    recs = read_judgments(out / "judgments.jsonl")
    assert len(recs) == 10 and all("raw_output" in r for r in recs)
    report = (out / "report.md").read_text()
    assert "accuracy_by_source.png" in report and (out / "accuracy_by_source.png").stat().st_size > 1000

    # same command again: resumes, nothing new; changing --samples is refused
    assert main(argv) == 0
    assert len(read_judgments(out / "judgments.jsonl")) == 10
    assert json.loads((out / "summary.json").read_text())["timing"]["judgments_this_run"] == 0
    assert main([*argv, "--samples", "3"]) == 2
    assert "different configuration" in capsys.readouterr().err
    assert main([*argv, "--samples", "3", "--overwrite"]) == 0
    assert len(read_judgments(out / "judgments.jsonl")) == 30


def test_eval_refuses_a_changed_run_dir_before_the_model_loads(tmp_path, shared_data, always_a_model, capsys,
                                                              monkeypatch):
    from judgerl.judge.options import JudgeOptions

    out = tmp_path / "run"
    argv = ["eval", "--model", always_a_model, "--data", str(shared_data / "llmbar" / "natural.json"),
            "--limit", "2", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    capsys.readouterr()

    def no_load(self, **extra):
        raise AssertionError("the model was loaded before the run dir was checked")

    monkeypatch.setattr(JudgeOptions, "make_backend", no_load)
    for change in (["--protocol", "pas"], ["--max-new-tokens", "77"], ["--protocol-arg", "anti_hacking=true"]):
        assert main([*argv, *change]) == 2, change
        assert "different configuration" in capsys.readouterr().err
    assert main(argv) == 1  # the same options pass the check and reach the model load
    assert "the model was loaded" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [{}, {"tools": True, "max_tool_rounds": 2}, {"protocol": "pas", "samples": 3},
                                   {"protocol_args": {"namespace": True}, "tools": True, "force_answer": True}])
def test_options_identity_is_the_built_judges_config(always_a_model, extra):
    """The pre-load identity equals the built judge's config (else a resume would be refused wrongly)."""
    from judgerl.judge.options import JudgeOptions

    opts = JudgeOptions(model=always_a_model, unsafe_sandbox=True, **extra)
    judge = opts.make_judge(sandbox=object() if opts.tools else None)
    assert opts.identity() == judge.config()


def test_backend_name_is_the_loaded_backends_name(tmp_path):
    from judgerl.backends.models import backend_name

    d = tmp_path / "m"
    d.mkdir()
    assert backend_name("smollm2-135m") == "hf/smollm2-135m"
    assert backend_name("hf/org/model") == "hf/org/model"
    assert backend_name(str(d)) == f"hf/{d}"
    assert backend_name("openai/gpt-x", base_url="http://h") == "openai/gpt-x"
    assert backend_name("vllm/some/path") == "vllm/some/path"
    assert backend_name("scripted/x.jsonl") == "scripted/x.jsonl"
    with pytest.raises(ValueError, match="Unknown model"):
        backend_name("nosuch/provider/thing")


def test_eval_cli_pointwise_with_gold_scores(tmp_path):
    pairs = [PreferencePair(id=f"p{i}", prompt=f"q{i}", chosen=f"good {i}", rejected=f"bad {i}", source="toy",
                            chosen_score=8.0, rejected_score=float(i % 3)) for i in range(4)]
    data = tmp_path / "pairs.jsonl"
    write_pairs_jsonl(pairs, data)
    model = tmp_path / "outs.jsonl"
    model.write_text("\n".join(json.dumps(f"<think>hm</think><score>{s}</score>") for s in (9, 2, 7, 1)) + "\n")
    out = tmp_path / "run"
    rc = main(["eval", "--model", f"scripted/{model}", "--data", str(data), "--protocol", "PoS",
               "--protocol-arg", "max_score=9", "--out", str(out), "--no-progress"])
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "pointwise" and summary["flip_rate"] is None
    assert summary["config"]["protocol"]["max_score"] == 9
    assert summary["n_scored_responses"] == 8
    assert summary["krippendorff_alpha"] is not None and -1.0 <= summary["krippendorff_alpha"] <= 1.0
    assert "Agreement with gold scores" in (out / "report.md").read_text()


def test_eval_cli_errors(tmp_path, always_a_model, capsys):
    missing = tmp_path / "nope.json"
    assert main(["eval", "--model", always_a_model, "--data", str(missing), "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 2
    assert "nope.json" in capsys.readouterr().err
    data = tmp_path / "pairs.jsonl"
    write_pairs_jsonl([PreferencePair(id="a", prompt="q", chosen="x", rejected="y")], data)
    rc = main(["eval", "--model", always_a_model, "--data", str(data), "--protocol", "nosuch",
               "--out", str(tmp_path / "o")])
    assert rc == 2
    assert "unknown judge protocol" in capsys.readouterr().err
    rc = main(["eval", "--model", always_a_model, "--data", str(data), "--protocol-arg", "oops",
               "--out", str(tmp_path / "o")])
    assert rc == 2


def test_eval_cli_with_python_tools(tmp_path):
    data = tmp_path / "pairs.jsonl"
    write_pairs_jsonl([PreferencePair(id=f"p{i}", prompt="What is 6*7?", chosen="42", rejected="41")
                       for i in range(2)], data)
    model = tmp_path / "outs.jsonl"
    # replayed by content: every round writes code, then a verdict; the tool loop runs the code (the text
    # after a block is dropped) until the tool budget is spent, and the last round's verdict is read
    model.write_text(json.dumps("<think>check</think>\n```python\nprint(6*7)\n```\n<verdict>A</verdict>") + "\n")
    out = tmp_path / "run"
    rc = main(["eval", "--model", f"scripted/{model}", "--data", str(data), "--tools", "python",
               "--batch-size", "1", "--out", str(out), "--no-progress"])
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tool_use_rate"] == 1.0 and summary["mean_tool_rounds"] == 3.0
    assert summary["tool_error_rate"] == 0.0 and summary["invalid_rate"] == 0.0
    rec = read_judgments(out / "judgments.jsonl")[0]
    assert "```output\n42\n```" in rec["raw_output"] and rec["trajectory"]["tool_calls"] == 3
