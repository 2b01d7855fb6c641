"""Shared judge options (issue 26): ``--model-arg KEY=VALUE`` reaches the backend, ``--base-url`` as the README
documents it, one error line and exit 2 for bad options -- in eval, serve, label, probe and arena alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.cli.judge_options import backend_kwargs, load_judge_backend
from judgerl.cli.main import main
from judgerl.data import write_pairs_jsonl
from judgerl.types import PreferencePair


@pytest.fixture()
def scripted(tmp_path: Path) -> str:
    path = tmp_path / "outputs.jsonl"
    path.write_text(json.dumps("<think>fine</think><verdict>A</verdict>") + "\n")
    return f"scripted/{path}"


def test_model_args_are_yaml_scalars_and_reach_the_backend(scripted):
    assert backend_kwargs("vllm/m", ["tensor_parallel_size=8", "dtype=bfloat16", "max_model_len=32768"], None) == {
        "tensor_parallel_size": 8, "dtype": "bfloat16", "max_model_len": 32768}
    assert backend_kwargs("openai/q", None, "http://gpu:8000/v1") == {"base_url": "http://gpu:8000/v1"}
    assert load_judge_backend(scripted, ["name=my-judge"]).name == "my-judge"


def test_bad_backend_options_are_one_clear_error(scripted):
    with pytest.raises(ValueError, match="--model-arg: expected KEY=VALUE"):
        backend_kwargs("vllm/m", ["tensor_parallel_size"], None)
    with pytest.raises(ValueError, match="--base-url only applies to openai/"):
        backend_kwargs("hf/x", None, "http://x")
    with pytest.raises(ValueError, match=r"--model-arg for scripted/.*bogus"):
        load_judge_backend(scripted, ["bogus=1"])


@pytest.mark.parametrize("command", ["eval", "probe", "arena", "label"])
def test_every_judge_command_has_the_shared_options(command, capsys):
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "--model-arg" in text and "--base-url" in text


def test_serve_has_the_shared_options_and_policy_tokenizer(capsys):
    assert main(["serve", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--model-arg" in text and "--base-url" in text and "--policy-tokenizer" in text


def test_eval_with_model_arg_and_base_url(tmp_path, scripted, capsys):
    data = tmp_path / "pairs.jsonl"
    write_pairs_jsonl([PreferencePair(id="p0", prompt="q", chosen="good", rejected="bad", source="toy")], data)
    argv = ["eval", "--model", scripted, "--data", str(data), "--out", str(tmp_path / "run"), "--no-progress"]
    assert main([*argv, "--model-arg", "name=judge-x"]) == 0
    assert main([*argv, "--model-arg", "bogus=1", "--overwrite"]) == 2
    assert "--model-arg for scripted/" in capsys.readouterr().err
    assert main([*argv, "--base-url", "http://gpu:8000/v1", "--overwrite"]) == 2
    assert "--base-url only applies to openai/" in capsys.readouterr().err


def test_serve_policy_tokenizer_errors_before_loading_a_model(tmp_path, scripted, capsys):
    rc = main(["serve", "--model", scripted, "--policy-tokenizer", str(tmp_path / "none"), "--port", "1"])
    assert rc == 2 and "--policy-tokenizer" in capsys.readouterr().err


def test_ctrl_c_keeps_the_work_and_exits_130(tmp_path, scripted, capsys, monkeypatch):
    """Every resumable command ends a Ctrl-C the same way (judgerl.cli.errors.interrupted): exit 130, one line."""
    import judgerl.eval

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(judgerl.eval, "run_eval", killed)
    data = tmp_path / "pairs.jsonl"
    write_pairs_jsonl([PreferencePair(id="p0", prompt="q", chosen="good", rejected="bad", source="toy")], data)
    out = tmp_path / "run"
    assert main(["eval", "--model", scripted, "--data", str(data), "--out", str(out), "--no-progress"]) == 130
    assert f"interrupted: finished judgments are saved in {out}; run the same command to resume" in capsys.readouterr().err
