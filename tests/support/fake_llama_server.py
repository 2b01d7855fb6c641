"""A stand-in for llama.cpp's ``llama-server`` (tests of bench/genbench_llamacpp.py).

Run as ``python fake_llama_server.py --port P --host H ...`` (the real server's options are
accepted and ignored). Behaviour from the environment:

* ``FAKE_LLAMA_MODE``: ``ok`` (default): ``/health`` is 503 "Loading model" for the first
  ``FAKE_LLAMA_LOADING_S`` seconds (default 0.3), then 200; ``exit``: prints an error and exits
  with code 3 at once; ``never``: ``/health`` stays 503.
* ``FAKE_LLAMA_ARGV``: a file the server writes its argv to (JSON).

``/apply-template`` renders ``<role>content</role>`` pieces plus ``<gen>`` for a generation prompt;
``/v1/chat/completions`` answers ``chat:<last message content>`` and ``/v1/completions``
``completion:<prompt>``, each with a ``usage`` block.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STARTED = time.monotonic()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path != "/health":
            return self._send(404, {"error": {"message": "not found", "code": 404}})
        loading = float(os.environ.get("FAKE_LLAMA_LOADING_S", "0.3"))
        if os.environ.get("FAKE_LLAMA_MODE") == "never" or time.monotonic() - STARTED < loading:
            return self._send(503, {"error": {"message": "Loading model", "type": "unavailable_error", "code": 503}})
        self._send(200, {"status": "ok"})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
        if self.path == "/apply-template":
            text = "".join(f"<{m['role']}>{m['content']}</{m['role']}>" for m in body["messages"])
            return self._send(200, {"prompt": text + ("<gen>" if body.get("add_generation_prompt", True) else "")})
        if self.path == "/v1/chat/completions":
            content = f"chat:{body['messages'][-1]['content']}"
            return self._send(200, {"id": "fake", "created": 0, "object": "chat.completion", "model": body.get("model"), "usage": usage,
                                    "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": content}}]})
        if self.path == "/v1/completions":
            return self._send(200, {"id": "fake", "created": 0, "object": "text_completion", "model": body.get("model"), "usage": usage,
                                    "choices": [{"index": 0, "finish_reason": "stop",
                                                 "text": f"completion:{body['prompt']}"}]})
        self._send(404, {"error": {"message": f"no route {self.path}", "code": 404}})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    args, _ = ap.parse_known_args()
    if os.environ.get("FAKE_LLAMA_ARGV"):
        with open(os.environ["FAKE_LLAMA_ARGV"], "w") as f:
            json.dump(sys.argv[1:], f)
    if os.environ.get("FAKE_LLAMA_MODE") == "exit":
        print("llama_model_load: error loading model: tensor data is not within the file bounds", flush=True)
        return 3
    print(f"main: server is listening on http://{args.host}:{args.port}", flush=True)
    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
