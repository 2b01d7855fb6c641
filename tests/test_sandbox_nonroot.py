"""A non-root sandbox host (issue 22): the run shares bubblewrap's uid, so every fd it can name under
/proc — bubblewrap's init (pid 1), its own, its parent's, any pid's — is tried as a way onto the
control channel. The attack forges a reply with the right sequence number (accepted as its own
result), then reads the next caller's request and forges that caller's reply too.

The host runs as uid 65534 through ``setpriv`` (this machine runs tests as root; bubblewrap then
makes an unprivileged user namespace, as it would for any non-root user).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from judgerl.tools import bwrap_available

REPO = Path(__file__).resolve().parents[1]
PAYLOAD = "FORGED-BY-THE-RUN"
#: The unprivileged uid cannot traverse /root (where this venv's interpreter may live), so the
#: non-root host runs the system interpreter with judgerl and pyseccomp on PYTHONPATH.
SYSTEM_PYTHON = "/usr/bin/python3"

# Runs inside the sandbox. Finds its own request's seq in the zygote frames it inherited by fork,
# writes a complete forged reply into every fd it can open for writing, then waits for the next
# request on every fd it can open for reading and answers it with a forged reply of its own.
ATTACK = textwrap.dedent("""
    import json, os, select, signal, struct, sys, time
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a pipe nobody reads must not end the attack
    seq = None
    frame = sys._getframe()
    while frame is not None and seq is None:
        req = frame.f_locals.get("req")
        if isinstance(req, dict):
            seq = req.get("seq")
        frame = frame.f_back

    def forged(s):
        payload = PAYLOAD.encode()
        body = json.dumps({"seq": s, "exit_code": 0, "timed_out": False, "truncated": False,
                           "duration_s": 0.0, "note": "", "stdout_len": len(payload),
                           "stderr_len": 0}).encode()
        return struct.pack(">I", len(body)) + body + payload

    paths = []
    for pid in ["1", "self", str(os.getppid())] + [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            paths += [f"/proc/{pid}/fd/{n}" for n in os.listdir(f"/proc/{pid}/fd")]
        except OSError as e:
            paths += [f"/proc/{pid}/fd/{n}" for n in range(8)]
    paths = list(dict.fromkeys(paths))
    wrote, readers = [], []
    for path in paths:
        if path.startswith(("/proc/self/", f"/proc/{os.getpid()}/")) and \
                path.endswith(("/fd/1", "/fd/2")):
            continue  # our own stdout/stderr: harmless, and would clutter the real result
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            for s in (seq, (seq or 0) + 1):
                os.write(fd, forged(s))
            wrote.append(path)
        except OSError:
            pass
        if path.startswith(("/proc/self/", f"/proc/{os.getpid()}/")):
            continue  # our own fds (we would read back our own frames)
        try:
            readers.append((path, os.open(path, os.O_RDONLY | os.O_NONBLOCK)))
        except OSError:
            pass
    stolen = []
    deadline = time.monotonic() + 2.0
    while readers and time.monotonic() < deadline:
        ready, _, _ = select.select([fd for _, fd in readers], [], [], 0.05)
        for fd in ready:
            try:
                data = os.read(fd, 1 << 16)
            except OSError:
                continue
            if b'"code"' in data or b"secret-" in data:  # a request (not our own frames echoed)
                stolen.append(data[:200].decode(errors="replace"))
                try:
                    nxt = json.loads(data[4:4 + struct.unpack(">I", data[:4])[0]])["seq"]
                    for path in wrote:
                        os.write(os.open(path, os.O_WRONLY | os.O_NONBLOCK), forged(nxt))
                except Exception:
                    pass
    print("ATTACKER-DONE", json.dumps({"seq": seq, "wrote": wrote, "stolen": stolen,
                                       "readable": [p for p, _ in readers]}))
""").replace("PAYLOAD", repr(PAYLOAD))

HOST = textwrap.dedent("""
    import json, os, sys, threading
    from judgerl.tools import get_sandbox
    attack = sys.stdin.read()
    out = {"uid": os.getuid()}
    with get_sandbox("bwrap", pool_size=1, timeout_s=6) as sb:
        results = [None] * 4
        def attacker():
            results[0] = sb.run(attack)
        t = threading.Thread(target=attacker)
        t.start()
        import time; time.sleep(0.5)  # victims queue up behind the attacker
        for i in range(1, 4):
            results[i] = sb.run(f"import sys; print('victim', {i}, sys.stdin.read())",
                                stdin=f"secret-{i}")
        t.join()
        out["results"] = [[r.stdout, r.stderr[-300:], r.exit_code] for r in results]
        out["budget"] = [sb.budget] + [r.budget for r in results]
    print(json.dumps(out))
""")


def _as_nobody(script: str, stdin: str) -> subprocess.CompletedProcess:
    import pyseccomp

    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{REPO / 'src'}:{Path(pyseccomp.__file__).parent}",
           "LC_ALL": "C.UTF-8"}
    return subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", SYSTEM_PYTHON, "-c", script],
        input=stdin, capture_output=True, text=True, timeout=120, env=env, cwd="/",
    )


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not Path(SYSTEM_PYTHON).exists(),
                    reason="needs root (to drop to an unprivileged uid with setpriv) and /usr/bin/python3")
def test_non_root_run_can_neither_forge_replies_nor_steal_requests() -> None:
    if not bwrap_available():
        pytest.skip("bubblewrap is not usable here")
    proc = _as_nobody(HOST, ATTACK)
    if proc.returncode != 0 and ("No module named" in proc.stderr or "Permission denied" in proc.stderr):
        pytest.skip(f"the unprivileged uid cannot import judgerl here: {proc.stderr.strip()[-300:]}")
    if "bubblewrap cannot create its namespaces" in proc.stderr:
        pytest.skip("unprivileged user namespaces are disabled here")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["uid"] == 65534
    # No cgroup is writable for uid 65534 here: the documented rlimit mode, stated in every result.
    assert set(out["budget"]) == {"rlimit"}, out["budget"]
    results = out["results"]
    forged = [r for r in results if r[0] == PAYLOAD]
    assert forged == [], results  # 0 forged frames accepted
    attacker_out = results[0][0]
    assert attacker_out.startswith("ATTACKER-DONE"), results[0]  # the run's real result
    report = json.loads(attacker_out.split(" ", 1)[1])
    # pid 1 is the zygote itself (bwrap --as-pid-1, undumpable): none of its fds can be opened.
    assert not [p for p in report["wrote"] + report["readable"] if p.startswith("/proc/1/")], report
    assert report["stolen"] == [], report  # 0 requests read by the run
    assert report["seq"] is not None  # the attack had what it needed to forge a valid frame
    for i in range(1, 4):
        assert results[i][0] == f"victim {i} secret-{i}\n", results[i]
