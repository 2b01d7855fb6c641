"""`judgerl serve`: argument errors, and a real server process on a scripted judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from judgerl.cli.main import main
from judgerl.serve.runner import free_port


def test_bad_protocol_exits_2(capsys):
    assert main(["serve", "--model", "scripted/none.jsonl", "--protocol", "nope"]) == 2
    assert "unknown judge protocol" in capsys.readouterr().err


def test_base_url_needs_openai_model(capsys, tmp_path):
    script = tmp_path / "out.jsonl"
    script.write_text(json.dumps("<verdict>A</verdict>") + "\n")
    assert main(["serve", "--model", f"scripted/{script}", "--base-url", "http://x/v1"]) == 2
    assert "--base-url" in capsys.readouterr().err


def test_missing_scripted_file_exits_2(capsys, tmp_path):
    assert main(["serve", "--model", f"scripted/{tmp_path / 'missing.jsonl'}"]) == 2


def test_options_reach_the_app(monkeypatch, tmp_path):
    script = tmp_path / "out.jsonl"
    script.write_text(json.dumps("<score>3</score>") + "\n")
    seen = {}

    def fake_run(app, host, port, log_level):
        seen.update(app=app, host=host, port=port)

    monkeypatch.setattr("uvicorn.run", fake_run)
    code = main(["serve", "--model", f"scripted/{script}", "--protocol", "pos", "--protocol-arg", "max_score=9",
                 "--port", "8123", "--max-items", "7", "--samples", "2", "--temperature", "0.5",
                 "--invalid-reward", "-1"])
    assert code == 0 and seen["port"] == 8123 and seen["host"] == "127.0.0.1"
    service = seen["app"].state.service
    assert service.config.max_items == 7 and service.config.samples == 2 and service.config.invalid_reward == -1
    assert service.score_range == (0.0, 9.0) and service.judge.params.temperature == 0.5


@pytest.mark.server
def test_judgerl_serve_process_end_to_end(tmp_path):
    script = tmp_path / "out.jsonl"
    script.write_text(json.dumps("<think>x</think><verdict>B</verdict>") + "\n")
    port = free_port()
    cmd = [sys.executable, "-m", "judgerl.cli.main", "serve", "--model", f"scripted/{script}", "--protocol", "pav",
           "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read().decode()
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)
        r = httpx.post(f"{url}/v1/judge/pairwise", json={"prompt": "q", "response_a": "a", "response_b": "b"})
        assert r.status_code == 200 and r.json()["verdict"] == "B"
        r = httpx.post(f"{url}/v1/rewards", json={"items": [{"prompt": "q", "response": "a", "reference": "b"}]})
        assert r.json()["rewards"] == [0.0]
    finally:
        proc.terminate()
        proc.wait(15)
