"""Shared setup of the sandbox attack suites (``tests/test_sandbox_attacks*.py``): the host state an attack must
not harm (a sentinel file, a secret file and fd, a canary process), both sandbox kinds as a module fixture, and
``host_ok``, which checks the host after each test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from judgerl.tools import ExecResult, Sandbox, bwrap_available, get_sandbox

REPO = Path(__file__).resolve().parents[2]
KINDS = ["bwrap", "fallback"]
LIMITS = dict(timeout_s=5.0, cpu_time_s=5, memory_bytes=256 * 1024 * 1024, output_bytes=4096,
              max_processes=16, max_open_files=64, file_bytes=8 * 1024 * 1024,
              disk_bytes=32 * 1024 * 1024)
SECRET = "judgerl-secret-" + uuid.uuid4().hex


@pytest.fixture(scope="module", params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    if request.param == "bwrap" and not bwrap_available():
        pytest.skip("bubblewrap is not usable here (apt-get install bubblewrap)")
    return request.param


@pytest.fixture(scope="module")
def host_state(tmp_path_factory: pytest.TempPathFactory):
    """A sentinel file, a secret file and an open secret fd on the host, plus a canary process."""
    base = tmp_path_factory.mktemp("host")
    sentinel = base / "sentinel.txt"
    sentinel.write_text("intact")
    secret_file = base / "secret.txt"
    secret_file.write_text(SECRET)
    secret_fd = os.open(secret_file, os.O_RDONLY)
    os.set_inheritable(secret_fd, True)  # even an inheritable fd must not reach the sandbox
    canary = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    old = os.environ.get("JUDGERL_TEST_SECRET")
    os.environ["JUDGERL_TEST_SECRET"] = SECRET  # set before any sandbox worker starts
    yield {"sentinel": sentinel, "secret_file": secret_file, "secret_fd": secret_fd,
           "canary": canary, "base": base}
    canary.kill()
    canary.wait()
    os.close(secret_fd)
    if old is None:
        os.environ.pop("JUDGERL_TEST_SECRET", None)
    else:
        os.environ["JUDGERL_TEST_SECRET"] = old


@pytest.fixture(scope="module")
def sb(kind: str, host_state) -> Sandbox:
    with get_sandbox(kind, pool_size=2, **LIMITS) as sandbox:
        yield sandbox


@pytest.fixture()
def host_ok(sb: Sandbox, host_state):
    """After the test: the host is unharmed and the sandbox still serves trivial code."""
    yield
    assert host_state["sentinel"].read_text() == "intact"
    assert host_state["canary"].poll() is None, "the canary process on the host was killed"
    for _ in range(sb.pool_size):  # touch every warm worker
        r = sb.run("print('still ok')")
        assert r.ok and r.stdout == "still ok\n", r


def run(sb: Sandbox, code: str, **kw) -> ExecResult:
    return sb.run(textwrap.dedent(code), **kw)


def _marker() -> str:
    return f"judgerl_pwned_{uuid.uuid4().hex}"
