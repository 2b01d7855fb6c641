"""Sandbox speed: latency p50/p99 of a trivial snippet and throughput with concurrent callers.

Compares the warm sandbox pools (``kind="bwrap"`` and ``kind="fallback"``) with a plain
``python -I -S -c`` subprocess per call and with a cold bubblewrap + interpreter per call (what a
sandbox without a warm worker would cost). Targets (issue): p50 <= 10 ms, >= 150 calls/s on 2 cores.

Usage:
    python bench/bench_sandbox.py [--calls 200] [--concurrency 2] [--json out.json]

The CPU may be shared: the 1-minute load average before and after each row is printed with it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from judgerl.tools import bwrap_available, get_sandbox
from judgerl.tools import sandbox as sandbox_mod

SNIPPET = "print(1+1)"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[idx]


def measure(call: Callable[[], str], calls: int, concurrency: int) -> dict:
    """Sequential latency (ms) over ``calls`` calls, then throughput (calls/s) with N threads."""
    for _ in range(3):  # warm-up (starts pool workers)
        if call() != "2\n":
            raise RuntimeError("the benchmark snippet did not print 2")
    load_before = os.getloadavg()[0]
    lat = []
    for _ in range(calls):
        t0 = time.perf_counter()
        call()
        lat.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        outs = list(pool.map(lambda _: call(), range(calls)))
    wall = time.perf_counter() - t0
    if any(o != "2\n" for o in outs):
        raise RuntimeError("a concurrent call returned the wrong output")
    return {
        "p50_ms": statistics.median(lat),
        "p99_ms": _percentile(lat, 99),
        "mean_ms": statistics.fmean(lat),
        "calls_per_s": calls / wall,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }


def plain_python() -> str:
    return subprocess.run([sys.executable, "-I", "-S", "-c", SNIPPET], capture_output=True,
                          text=True, check=False).stdout


def cold_bwrap() -> str:
    args = sandbox_mod._bwrap_args(64 * 1024 * 1024, sandbox_mod._interpreter_paths(),
                                   os.geteuid() == 0)
    return subprocess.run(args + [sandbox_mod._python_executable(), "-I", "-S", "-c", SNIPPET],
                          capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin"}).stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per measurement")
    parser.add_argument("--concurrency", type=int, default=2, help="concurrent caller threads")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    rows: dict[str, dict] = {}
    kinds = (["bwrap"] if bwrap_available() else []) + ["fallback"]
    for kind in kinds:
        with get_sandbox(kind, pool_size=args.concurrency) as sb:
            rows[f"sandbox {kind} (pool={args.concurrency}, {sb.budget})"] = measure(
                lambda sb=sb: sb.run(SNIPPET).stdout, args.calls, args.concurrency)
    rows["plain `python -I -S -c` subprocess"] = measure(plain_python, args.calls, args.concurrency)
    if bwrap_available():
        rows["cold bwrap + python per call"] = measure(cold_bwrap, max(20, args.calls // 4),
                                                       args.concurrency)

    cpus = len(os.sched_getaffinity(0))
    print(f"# sandbox bench: snippet {SNIPPET!r}, {args.calls} calls, {args.concurrency} concurrent "
          f"callers, {cpus} CPUs, uptime load {os.getloadavg()}")
    header = f"{'runner':45s} {'p50 ms':>8s} {'p99 ms':>8s} {'calls/s':>8s} {'load 1m':>12s}"
    print(header)
    print("-" * len(header))
    for name, r in rows.items():
        print(f"{name:45s} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} {r['calls_per_s']:8.1f} "
              f"{r['load_before']:5.2f}->{r['load_after']:<5.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpus": cpus, "calls": args.calls, "concurrency": args.concurrency,
                       "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
