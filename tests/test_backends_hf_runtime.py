"""The OpenMP wait policy judgerl applies before torch, and the ``--verbose`` lines that report it
and the hf engine (issue 13 §1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from judgerl.cli.main import main
from judgerl.data import write_pairs_jsonl
from judgerl.types import PreferencePair


def policy_in_fresh_process(env_extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "JUDGERL_OMP_POLICY")}
    env.update(env_extra)
    code = "import judgerl, os; from judgerl.backends.runtime import omp_policy; print(omp_policy())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_import_sets_passive_unless_the_user_chose() -> None:
    assert policy_in_fresh_process({}) == "PASSIVE (set by judgerl)"
    assert policy_in_fresh_process({"OMP_WAIT_POLICY": "ACTIVE"}) == "ACTIVE (user)"
    assert policy_in_fresh_process({"JUDGERL_OMP_POLICY": "keep"}).startswith("default (active) (kept default")


def test_eval_verbose_prints_the_policy_and_threads(tmp_path: Path, capsys) -> None:
    data = tmp_path / "pairs.jsonl"
    write_pairs_jsonl([PreferencePair(id="p0", prompt="q", chosen="good", rejected="bad")], data)
    model = tmp_path / "outs.jsonl"
    model.write_text(json.dumps("<think>x</think><verdict>A</verdict>") + "\n")
    argv = ["eval", "--model", f"scripted/{model}", "--data", str(data), "--out", str(tmp_path / "run"),
            "--no-progress", "--verbose"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "OpenMP wait policy" in err and "torch threads" in err
    assert main([*argv[:-1], "--overwrite"]) == 0
    assert "OpenMP wait policy" not in capsys.readouterr().err


def test_train_and_serve_accept_verbose() -> None:
    from typer.testing import CliRunner

    from judgerl.cli.main import app

    runner = CliRunner()
    for cmd in ("train", "serve"):
        res = runner.invoke(app, [cmd, "--help"])
        assert res.exit_code == 0 and "--verbose" in res.output
