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
from judgerl.serve.server_thread import free_port


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


def _serve(args: list[str]):
    port = free_port()
    cmd = [sys.executable, "-m", "judgerl.cli.main", "serve", *args, "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stdout.read().decode()
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.2)


@pytest.mark.server
def test_judgerl_serve_process_end_to_end(tmp_path):
    script = tmp_path / "out.jsonl"
    script.write_text(json.dumps("<think>x</think><verdict>B</verdict>") + "\n")
    proc, url = _serve(["--model", f"scripted/{script}", "--protocol", "pav"])
    try:
        r = httpx.post(f"{url}/v1/judge/pairwise", json={"prompt": "q", "response_a": "a", "response_b": "b"})
        assert r.status_code == 200 and r.json()["verdict"] == "B"
        r = httpx.post(f"{url}/v1/rewards", json={"items": [{"prompt": "q", "response": "a", "reference": "b"}]})
        assert r.json()["rewards"] == [0.0]
    finally:
        proc.terminate()
        proc.wait(15)


@pytest.mark.server
def test_judgerl_serve_with_python_tools_and_listwise(tmp_path):
    """`judgerl serve --tools python --protocol pav`: the judge's code runs in the sandbox and its
    output comes back in the trajectory; a listwise protocol is served too."""
    script = tmp_path / "tir.jsonl"
    script.write_text(json.dumps("<think>check</think>\n```python\nprint(6 * 7)\n```\n<verdict>A</verdict>") + "\n")
    args = ["--model", f"scripted/{script}", "--protocol", "pav", "--tools", "python", "--max-tool-rounds", "1"]
    proc, url = _serve(args + (["--unsafe-sandbox"] if not _bwrap() else []))
    try:
        r = httpx.post(f"{url}/v1/judge/pairwise", json={"prompt": "6*7?", "response_a": "42", "response_b": "41"},
                       timeout=60)
        body = r.json()
        assert r.status_code == 200 and body["verdict"] == "A" and body["valid"]
        assert "```output\n42\n```" in body["raw"]
        health = httpx.get(f"{url}/health").json()
        assert health["judge"]["tools"] == "python" and health["judge"]["max_tool_rounds"] == 1
    finally:
        proc.terminate()
        proc.wait(15)
    lw = tmp_path / "lw.jsonl"
    lw.write_text(json.dumps("<think>x</think><best>2</best>") + "\n")
    proc, url = _serve(["--model", f"scripted/{lw}", "--protocol", "listwise"])
    try:
        body = httpx.post(f"{url}/v1/judge/listwise", json={"prompt": "q", "responses": ["a", "b", "c"]}).json()
        assert body["best"] == 1 and body["ranking"] == [1] and body["valid"]
    finally:
        proc.terminate()
        proc.wait(15)


def _bwrap() -> bool:
    from judgerl.tools import bwrap_available

    return bwrap_available()


def test_a_taken_port_fails_before_the_model_loads(capsys, tmp_path):
    import socket

    script = tmp_path / "out.jsonl"
    script.write_text(json.dumps("<verdict>A</verdict>") + "\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        rc = main(["serve", "--model", f"scripted/{script}", "--port", str(port)])
    assert rc == 2 and f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
