"""Run an ASGI app with uvicorn in a background thread on a loopback port (tests, benchmarks, notebooks);
``judgerl serve`` runs it in the foreground with ``uvicorn.run``."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class ServerThread:
    """uvicorn serving ``app`` in a daemon thread; a context manager that starts and stops it.

    Args:
        app: An ASGI app (e.g. from :func:`judgerl.serve.app.create_app`).
        host: Interface to bind; loopback by default.
        port: Port; None picks a free one.
        startup_timeout_s: Seconds to wait for the server to accept connections.
        log_level: uvicorn log level.

    Attributes:
        url: ``http://host:port`` once started.

    Raises:
        RuntimeError: from :meth:`start` when the server does not come up within the timeout
            (e.g. the port is taken); the thread is stopped first.
    """

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout_s: float = 30.0,
        log_level: str = "warning",
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.url = f"http://{host}:{self.port}"
        self.startup_timeout_s = startup_timeout_s
        config = uvicorn.Config(app, host=host, port=self.port, log_level=log_level, lifespan="on")
        self.server = uvicorn.Server(config)
        self.startup_error: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"uvicorn-{self.port}", daemon=True)

    def _run(self) -> None:
        try:
            self.server.run()
        except SystemExit as e:  # uvicorn exits this way when it cannot bind / start up
            self.startup_error = f"uvicorn exited with code {e.code}"

    def start(self) -> "ServerThread":
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                why = f" ({self.startup_error}; is the port taken?)" if self.startup_error else ""
                raise RuntimeError(f"server on {self.url} did not start within {self.startup_timeout_s}s{why}")
            time.sleep(0.02)
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask uvicorn to exit and wait up to ``timeout_s`` seconds for the thread."""
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
