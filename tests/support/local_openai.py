"""Start a real local OpenAI-compatible server (``transformers serve``) on a loopback port.

Used by the slow tests and ``bench/bench_serve.py consistency`` to check the ``openai`` backend
against a real server on the embedded model, offline and on CPU. ``transformers serve`` ships
with transformers (>= 5) and needs fastapi + uvicorn (``pip install 'judgerl[serve]'``).

What ``transformers serve`` supports (checked on transformers 5.24): ``/v1/chat/completions``
(temperature, top_p, max_tokens, seed, stop; token usage reported), ``/v1/completions`` (raw text
prompt), ``/v1/models``, ``/health``. It rejects unknown request fields with 422, so the vLLM
prefill extension (``continue_final_message``) is refused: use ``OpenAIBackend(prefill="completions",
tokenizer=<model dir>)`` with it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from judgerl.serve.server_thread import free_port


class TransformersServe:
    """``transformers serve <model_dir>`` in a subprocess; a context manager that starts and stops it.

    Args:
        model_dir: Local model directory (e.g. :func:`judgerl.backends.embedded.embedded_model_path`).
        port: Loopback port; None picks a free one.
        device: Torch device for the server (``"cpu"`` by default).
        startup_timeout_s: Seconds to wait for ``/health`` (model loading included).
        log_path: Where the server's output goes (default: a temporary file, see :attr:`log_path`).

    Attributes:
        url: ``http://127.0.0.1:<port>``; ``base_url`` is ``url + "/v1"`` (for OpenAIBackend).
        model: The model name to send in requests (the server is pinned to it).

    Raises:
        RuntimeError: from :meth:`start` when the ``transformers`` command is missing, the server
            exits, or ``/health`` does not answer within the timeout (the log tail is included).
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        port: int | None = None,
        device: str = "cpu",
        startup_timeout_s: float = 180.0,
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.model = str(model_dir)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.url}/v1"
        self.device = device
        self.startup_timeout_s = startup_timeout_s
        self.log_path = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="transformers-serve-", suffix=".log")[1])
        self._proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        exe = shutil.which("transformers", path=os.path.dirname(sys.executable)) or shutil.which("transformers")
        if exe is None:
            raise RuntimeError("the `transformers` command is not installed (pip install 'transformers[serving]')")
        return [exe, "serve", self.model, "--host", "127.0.0.1", "--port", str(self.port), "--device", self.device]

    def start(self) -> "TransformersServe":
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        log = open(self.log_path, "wb")
        try:
            self._proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env)
        finally:
            log.close()
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited with {self._proc.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"transformers serve not healthy after {self.startup_timeout_s}s:\n{self.log_tail()}"
                )
            time.sleep(0.5)
        return self

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def stop(self, timeout_s: float = 15.0) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after ``timeout_s`` seconds)."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout_s)

    def __enter__(self) -> "TransformersServe":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
