"""Benchmarks for serving judges (loopback only).

``load``: start the reward server in a child process (``--in-process``: a uvicorn thread) with a scripted judge that sleeps
``--latency-ms`` per generation batch (a stand-in for a GPU step) or the embedded model
(``--model smollm2-135m``), then run ``--clients`` concurrent httpx clients posting ``/v1/rewards``
until ``--requests`` are done or ``--duration-s`` passes. Every request carries a unique id the
scripted judge turns into its score, so each answer is checked against its own request: a lost,
dropped or mixed-up answer counts as a failure. Reports requests/s, p50/p99 latency, failures,
batching. Then sends malformed JSON, a huge body (with and without Content-Length), missing /
mistyped fields, too many items, and checks each gets a 4xx and the server still answers.

``consistency``: run the eval runner on a few LLMBar pairs through the ``openai`` backend against a
local ``transformers serve`` on the embedded model, and through the ``hf`` backend (unbatched and
batched), greedy; compare raw outputs and decisions per (pair, order).

    python bench/bench_serve.py load --clients 32 --requests 3000 --duration-s 60
    python bench/bench_serve.py consistency --pairs 6 --max-new-tokens 64

Exit status 1 when a load request failed, an abuse request did not get a 4xx, or the server
stopped answering.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import httpx

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.serve.app import ServeConfig, create_app
from judgerl.serve.server_thread import ServerThread
from judgerl.types import Completion, Messages

REPO = Path(__file__).resolve().parents[1]


class SlowScriptedJudge:
    """Pointwise scripted judge: score = (request id mod 11), one sleep of ``latency_s`` per batch."""

    name = "scripted-latency"

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self._inner = ScriptedBackend(self._answer)

    @staticmethod
    def _answer(messages: Messages, params: SamplingParams) -> str:
        m = re.search(r"request-id=(\d+)", messages[-1]["content"])
        score = int(m.group(1)) % 11 if m else 0
        return f"<think>checked</think><score>{score}</score>"

    def generate(self, prompts: Sequence[Messages], params: SamplingParams) -> list[Completion]:
        time.sleep(self.latency_s)
        return self._inner.generate(prompts, params)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation (numpy's default method)."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


async def run_clients(url: str, clients: int, requests: int, duration_s: float, items: int, check: bool) -> dict[str, Any]:
    latencies: list[float] = []
    failures: list[str] = []
    sent = [0]
    counter = iter(range(requests))
    deadline = time.monotonic() + duration_s
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:

        async def worker() -> None:
            for rid in counter:
                if time.monotonic() > deadline:
                    return
                ids = [rid * items + j for j in range(items)]
                body = {"items": [{"prompt": "Rate this.", "response": f"answer request-id={i}"} for i in ids]}
                t0 = time.perf_counter()
                sent[0] += 1
                try:
                    r = await http.post("/v1/rewards", json=body)
                except httpx.HTTPError as e:
                    failures.append(f"request {rid}: {type(e).__name__}: {e}")
                    continue
                latencies.append(time.perf_counter() - t0)
                if r.status_code != 200:
                    failures.append(f"request {rid}: HTTP {r.status_code}: {r.text[:200]}")
                    continue
                rewards = r.json().get("rewards", [])
                if len(rewards) != items:
                    failures.append(f"request {rid}: {len(rewards)} rewards for {items} items (lost)")
                elif check and any(abs(rw - (i % 11) / 10) > 1e-9 for rw, i in zip(rewards, ids)):
                    failures.append(f"request {rid}: rewards {rewards} do not match its ids {ids} (mixed up)")

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - t0
    done = len(latencies)
    return {
        "clients": clients,
        "items_per_request": items,
        "requests_sent": sent[0],
        "requests_answered": done,
        "failures": len(failures),
        "failure_examples": failures[:5],
        "wall_s": round(wall, 3),
        "requests_per_s": round(done / wall, 1) if wall > 0 else 0.0,
        "items_per_s": round(done * items / wall, 1) if wall > 0 else 0.0,
        "latency_ms": {
            "p50": round(percentile(latencies, 50) * 1000, 1),
            "p90": round(percentile(latencies, 90) * 1000, 1),
            "p99": round(percentile(latencies, 99) * 1000, 1),
            "max": round(max(latencies) * 1000, 1) if latencies else float("nan"),
            "mean": round(statistics.fmean(latencies) * 1000, 1) if latencies else float("nan"),
        },
    }


def abuse(url: str, max_body_bytes: int, max_items: int, timeout_s: float = 600.0) -> list[dict[str, Any]]:
    """Send bad requests; each must get a 4xx and the server must still answer ``/health``; then one
    normal request must succeed (``timeout_s`` covers a slow real model)."""
    huge = b'{"items": [{"prompt": "q", "response": "' + b"x" * (max_body_bytes + 10) + b'"}]}'

    def chunked():
        for i in range(0, len(huge), 65536):
            yield huge[i : i + 65536]

    json_h = {"content-type": "application/json"}
    cases: list[tuple[str, str, dict[str, Any]]] = [
        ("malformed JSON", "/v1/rewards", {"content": b'{"items": [{"prompt": "q",', "headers": json_h}),
        ("not JSON", "/v1/judge/pairwise", {"content": b"\x00\xff garbage", "headers": json_h}),
        ("huge payload (Content-Length)", "/v1/rewards", {"content": huge, "headers": json_h}),
        ("huge payload (chunked)", "/v1/rewards", {"content": chunked(), "headers": json_h}),
        ("missing fields", "/v1/rewards", {"json": {"items": [{"prompt": "q"}]}}),
        ("missing body fields", "/v1/judge/pairwise", {"json": {"prompt": "q", "response_a": "a"}}),
        ("wrong type", "/v1/score", {"json": {"prompt": ["not", "a", "string"], "response": 5}}),
        ("empty items", "/v1/rewards", {"json": {"items": []}}),
        ("too many items", "/v1/rewards", {"json": {"items": [{"prompt": "q", "response": "r"}] * (max_items + 1)}}),
        ("unknown field", "/v1/rewards", {"json": {"items": [{"prompt": "q", "response": "r", "rsponse": 1}]}}),
        ("OpenRLHF query without prompts", "/get_reward", {"json": {"query": ["abc"]}}),
        ("wrong endpoint", "/v1/nothing", {"json": {}}),
    ]
    out = []
    with httpx.Client(base_url=url, timeout=timeout_s) as http:
        for name, path, kw in cases:
            try:
                r = http.post(path, **kw)
                status, msg = r.status_code, r.text[:160]
            except httpx.HTTPError as e:  # a server that closes the connection counts as a failure
                status, msg = None, f"{type(e).__name__}: {e}"
            healthy = http.get("/health").status_code == 200
            ok = status is not None and 400 <= status < 500 and healthy
            out.append({"case": name, "status": status, "ok": ok, "healthy_after": healthy, "message": msg})
        try:
            r = http.post("/v1/rewards", json={"items": [{"prompt": "q", "response": "request-id=3"}]})
            status, msg = r.status_code, r.text[:160]
        except httpx.HTTPError as e:
            status, msg = None, f"{type(e).__name__}: {e}"
        out.append({"case": "normal request after abuse", "status": status, "ok": status == 200,
                    "healthy_after": True, "message": msg})
    return out


def _make_app(model: str, latency_ms: float, max_new_tokens: int, cfg: ServeConfig) -> Any:
    if model == "scripted":
        backend: Any = SlowScriptedJudge(latency_ms / 1000.0)
        params = SamplingParams(max_new_tokens=16)
    else:
        from judgerl.backends import load_backend

        backend = load_backend(model)
        params = SamplingParams(max_new_tokens=max_new_tokens)
    return create_app(backend, "pos", params=params, config=cfg)


def _serve_forever(port: int, model: str, latency_ms: float, max_new_tokens: int, cfg: ServeConfig) -> None:
    """Child-process entry point: serve on 127.0.0.1:port until terminated."""
    import uvicorn

    uvicorn.run(_make_app(model, latency_ms, max_new_tokens, cfg), host="127.0.0.1", port=port, log_level="error")


class ServerProcess:
    """The reward server in a child process (so clients and server do not share one GIL)."""

    def __init__(self, model: str, latency_ms: float, max_new_tokens: int, cfg: ServeConfig) -> None:
        import multiprocessing

        from judgerl.serve.server_thread import free_port

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        ctx = multiprocessing.get_context("spawn")
        self.proc = ctx.Process(target=_serve_forever, args=(self.port, model, latency_ms, max_new_tokens, cfg),
                                daemon=True)

    def __enter__(self) -> "ServerProcess":
        self.proc.start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if not self.proc.is_alive():
                raise RuntimeError(f"server process exited with {self.proc.exitcode}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.2)
        self.__exit__()
        raise RuntimeError("server process did not become healthy within 120 s")

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate()
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(10)


def cmd_load(args: argparse.Namespace) -> int:
    cfg = ServeConfig(max_batch_size=args.max_batch_size, max_wait_ms=args.max_wait_ms,
                      max_body_bytes=args.max_body_bytes, max_items=args.max_items)
    check = args.model == "scripted"
    if args.in_process:
        server: Any = ServerThread(_make_app(args.model, args.latency_ms, args.max_new_tokens, cfg), log_level="error")
    else:
        server = ServerProcess(args.model, args.latency_ms, args.max_new_tokens, cfg)
    with server:
        load = asyncio.run(run_clients(server.url, args.clients, args.requests, args.duration_s, args.items, check))
        health = httpx.get(f"{server.url}/health", timeout=60).json()
        bad = abuse(server.url, args.max_body_bytes, args.max_items)
        healthy_at_end = httpx.get(f"{server.url}/health", timeout=60).status_code == 200
    report = {"backend": health["model"], "latency_ms_per_batch": args.latency_ms if check else None,
              "server": {"max_batch_size": args.max_batch_size, "max_wait_ms": args.max_wait_ms,
                         "process": "thread" if args.in_process else "child process"},
              "load": load, "batching": health["batching"], "abuse": bad, "healthy_at_end": healthy_at_end}
    print(json.dumps(report, indent=2))
    lat = load["latency_ms"]
    print(
        f"\n{load['requests_answered']}/{load['requests_sent']} requests answered, {load['clients']} clients, "
        f"{load['wall_s']} s: {load['requests_per_s']} req/s, p50 {lat['p50']} ms, p99 {lat['p99']} ms, "
        f"failures {load['failures']}; mean batch {health['batching']['mean_batch']}; abuse cases 4xx+healthy: "
        f"{sum(c['ok'] for c in bad)}/{len(bad)}",
        file=sys.stderr,
    )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    ok = load["failures"] == 0 and load["requests_answered"] == load["requests_sent"] and healthy_at_end
    return 0 if ok and all(c["ok"] for c in bad) else 1


def cmd_consistency(args: argparse.Namespace) -> int:
    from judgerl.backends.embedded import embedded_model_path
    from judgerl.backends.hf import HFBackend
    from judgerl.backends.openai import OpenAIBackend
    from judgerl.data import load_pairs
    from judgerl.eval import run_eval
    from judgerl.protocols import get_protocol
    from judgerl.judge import Judge

    sys.path.insert(0, str(REPO / "tests"))  # the test-only `transformers serve` helper
    from support.local_openai import TransformersServe

    model_dir = embedded_model_path()
    pairs = load_pairs(args.data, limit=args.pairs).pairs
    protocol = get_protocol(args.protocol)
    params = SamplingParams(max_new_tokens=args.max_new_tokens)
    out = Path(args.out or tempfile.mkdtemp(prefix="judgerl-consistency-"))
    timings: dict[str, float] = {}
    with TransformersServe(model_dir) as server:
        backends = {
            "openai": OpenAIBackend(server.model, base_url=server.base_url, max_concurrency=4, timeout_s=300),
            "hf_unbatched": HFBackend(str(model_dir), batch_size=1),
            "hf_batched": HFBackend(str(model_dir), batch_size=16),
        }
        for name, backend in backends.items():
            t0 = time.perf_counter()
            run_eval(Judge(protocol, backend, params), pairs, out / name, progress=False, write_report=False,
                     resume=False)
            timings[name] = round(time.perf_counter() - t0, 1)
        usage = backends["openai"].usage.to_dict()

    def records(name: str) -> dict[tuple[str, str], dict[str, Any]]:
        lines = (out / name / "judgments.jsonl").read_text().splitlines()
        return {(r["pair_id"], r["order"]): r for r in map(json.loads, lines)}

    ref = records("openai")
    report: dict[str, Any] = {"pairs": len(pairs), "judgments": len(ref), "protocol": protocol.name,
                              "max_new_tokens": args.max_new_tokens, "seconds": timings, "openai_usage": usage}
    for name in ("hf_unbatched", "hf_batched"):
        other = records(name)
        same_text = sum(ref[k]["raw_output"] == other[k]["raw_output"] for k in ref)
        same_decision = sum(ref[k]["decision"] == other[k]["decision"] for k in ref)
        diffs = [
            {"pair_id": k[0], "order": k[1], "openai": ref[k]["decision"], name: other[k]["decision"],
             "first_divergence_char": next((i for i, (a, b) in enumerate(zip(ref[k]["raw_output"], other[k]["raw_output"]))
                                            if a != b), min(len(ref[k]["raw_output"]), len(other[k]["raw_output"])))}
            for k in ref if ref[k]["decision"] != other[k]["decision"] or ref[k]["raw_output"] != other[k]["raw_output"]
        ]
        report[f"openai_vs_{name}"] = {"same_raw_output": same_text, "same_decision": same_decision, "differences": diffs}
    report["valid_rate_openai"] = sum(r["decision"]["valid"] for r in ref.values()) / len(ref)
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    load = sub.add_parser("load", help="load test the reward server")
    load.add_argument("--clients", type=int, default=32, help="concurrent clients")
    load.add_argument("--requests", type=int, default=2000, help="most requests in total")
    load.add_argument("--duration-s", type=float, default=30.0, help="stop sending after this many seconds")
    load.add_argument("--items", type=int, default=1, help="items per request")
    load.add_argument("--latency-ms", type=float, default=20.0, help="scripted judge: sleep per generation batch")
    load.add_argument("--model", default="scripted", help="'scripted' or a model name for load_backend")
    load.add_argument("--max-new-tokens", type=int, default=16, help="for a real model")
    load.add_argument("--max-batch-size", type=int, default=64)
    load.add_argument("--max-wait-ms", type=float, default=5.0)
    load.add_argument("--max-body-bytes", type=int, default=1_000_000)
    load.add_argument("--max-items", type=int, default=256)
    load.add_argument("--in-process", action="store_true", help="run the server in a thread of this process")
    load.add_argument("--json", help="also write the report here")
    load.set_defaults(fn=cmd_load)
    cons = sub.add_parser("consistency", help="openai backend (transformers serve) vs hf backend decisions")
    cons.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "llmbar" / "natural.json"))
    cons.add_argument("--pairs", type=int, default=6)
    cons.add_argument("--protocol", default="pav")
    cons.add_argument("--max-new-tokens", type=int, default=64)
    cons.add_argument("--out", help="directory for the eval runs (default: a temporary one)")
    cons.add_argument("--json", help="also write the report here")
    cons.set_defaults(fn=cmd_consistency)
    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    raise SystemExit(main())
