"""Start-up and wrap-up cost of ``judgerl eval``: a one-judgment eval as a whole process vs a plain
transformers script doing the same generation, interleaved and repeated.

::

    python bench/bench_startup.py --rounds 3

Each round runs two fresh processes, one after the other:

* ``judgerl``: ``judgerl eval --model MODEL --data DATA --limit 1 --max-new-tokens 1 --force-answer
  --out TMP --overwrite`` through :func:`judgerl.cli.main.main`, in a driver that first imports
  torch + transformers (timed), then times ``HFBackend.__init__`` (model load) and every
  ``HFBackend.generate`` call (generation: both orders, plus the forced answer);
* ``plain``: imports torch + transformers, loads the same model with ``AutoModelForCausalLM`` and
  generates one greedy token for each of the same judge prompts (both orders) with ``generate``.

For each it prints the whole-process wall time (measured by this script: interpreter start and exit
included), import torch+transformers, model load, generation, and the rest = wall - import - load -
generation: for ``judgerl`` that is judgerl's own fixed cost (CLI, data loading, prompt building,
metrics, report, plot, audit, interpreter start/exit), for ``plain`` the interpreter's start and exit.
Target (issue 27): judgerl's rest <= 1.5 s, i.e. its wall minus generation <= import + model load +
1.5 s. The load average is printed around every run: on a shared machine the figures are under load.

The same two processes also time a small eval as a user sees it (issue 27's second target: whole
processes, each with its own imports and model load)::

    python bench/bench_startup.py --pairs 4 --max-new-tokens 64 --batch-size 16 --no-force-answer --rounds 3
    python bench/bench_startup.py --pairs 100 --max-new-tokens 64 --batch-size 16 --no-force-answer --rounds 1

``judgerl eval --limit PAIRS --max-new-tokens N --model-arg batch_size=B`` against the plain script
running greedy ``generate`` (up to N new tokens, ending at EOS as the eval does) on the same 2 x PAIRS
prompts one at a time, as a harness's loop does; the printed speed-up is plain wall / judgerl wall
(targets: >= 3x on 4 pairs, >= 6x on 100 pairs), with the new tokens each side generated.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("JUDGERL_SHARED_DATA", REPO.parent / "shared" / "data")) / "llmbar" / "natural.json"
TARGET_REST_S = 1.5
#: Whole-process speed-up targets of issue 27 (plain loop wall / judgerl wall), by number of pairs.
TARGET_SPEEDUP = {4: 3.0, 100: 6.0}


def _judgerl_child(spec: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    import torch  # noqa: F401
    import transformers  # noqa: F401

    t_import = time.perf_counter() - t0
    from judgerl.backends import hf

    timing = {"load_s": 0.0, "generate_s": 0.0}
    init, generate = hf.HFBackend.__init__, hf.HFBackend.generate

    def timed_init(self: Any, *a: Any, **k: Any) -> None:
        t = time.perf_counter()
        init(self, *a, **k)
        timing["load_s"] += time.perf_counter() - t

    def timed_generate(self: Any, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return generate(self, *a, **k)
        finally:
            timing["generate_s"] += time.perf_counter() - t

    hf.HFBackend.__init__ = timed_init  # type: ignore[method-assign]
    hf.HFBackend.generate = timed_generate  # type: ignore[method-assign]
    # parts of the wrap-up (inside "rest"): metrics with their intervals, the audit, the plot
    import judgerl.audit.judged as judged
    import judgerl.eval.report as report
    import judgerl.eval.runner as runner

    def timed(owner: Any, name: str, key: str) -> None:
        fn = getattr(owner, name)

        def wrapper(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                timing[key] = timing.get(key, 0.0) + time.perf_counter() - t

        setattr(owner, name, wrapper)

    timed(runner, "compute_metrics", "metrics_s")
    timed(judged, "audit_pairs", "audit_s")
    timed(report, "plot_accuracy_by_source", "plot_s")
    from judgerl.cli.main import main

    argv = ["eval", "--model", spec["model"], "--data", spec["data"], "--limit", str(spec["pairs"]),
            "--max-new-tokens", str(spec["max_new_tokens"]), "--model-arg", f"batch_size={spec['batch_size']}",
            "--out", spec["out"], "--overwrite", "--no-progress"] + (["--force-answer"] if spec["force_answer"] else [])
    sys.argv = ["judgerl", *argv]
    rc = main()  # as the console script calls it (argv None: the command's exit path)
    if rc != 0:
        raise SystemExit(f"judgerl eval exited {rc}")
    with open(Path(spec["out"]) / "judgments.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    timing["new_tokens"] = sum(r.get("completion_tokens") or 0 for r in rows)
    return {"import_s": t_import, **timing, "in_process_s": time.perf_counter() - t0, "end_time": time.time()}


def _plain_child(spec: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    import torch
    import transformers  # noqa: F401
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t1 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(spec["model_path"])
    model = AutoModelForCausalLM.from_pretrained(spec["model_path"], dtype=torch.float32)
    model.eval()
    t2 = time.perf_counter()
    new_tokens = 0
    with torch.inference_mode():
        for messages in spec["prompts"]:
            enc = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
            out = model.generate(**enc, max_new_tokens=spec["max_new_tokens"], do_sample=False,
                                 pad_token_id=tok.eos_token_id)
            new_tokens += int(out.shape[1] - enc["input_ids"].shape[1])
    t3 = time.perf_counter()
    return {"import_s": t1 - t0, "load_s": t2 - t1, "generate_s": t3 - t2, "in_process_s": t3 - t0,
            "new_tokens": new_tokens, "end_time": time.time()}


def _spawn(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        spec_path, out_path = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
        load0 = os.getloadavg()[0]
        t0, start_time = time.perf_counter(), time.time()
        proc = subprocess.run([sys.executable, __file__, "--child", kind, str(spec_path), str(out_path)],
                              env=env, capture_output=True, text=True)
        wall, end_time = time.perf_counter() - t0, time.time()
        if proc.returncode != 0:
            raise SystemExit(f"{kind} child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        res = json.loads(out_path.read_text(encoding="utf-8"))
    res.update(kind=kind, wall_s=wall, load_before=load0, load_after=os.getloadavg()[0])
    res["rest_s"] = wall - res["import_s"] - res["load_s"] - res["generate_s"]
    res["exit_s"] = end_time - res.pop("end_time")  # interpreter shutdown (and the child's last lines)
    res["start_s"] = wall - res["exit_s"] - res["in_process_s"]  # interpreter start, script imports
    return res


def _prompts(model: str, data: str, pairs: int = 1) -> tuple[str, list[list[dict[str, str]]]]:
    """The model directory and the PaV prompts of the first ``pairs`` pairs in both orders (what the eval
    judges)."""
    from judgerl.backends.models import resolve_hf_path
    from judgerl.data import load_pairs
    from judgerl.protocols import get_protocol

    proto = get_protocol("pav")
    prompts = [[dict(m) for m in proto.build(pair.prompt, list(r))]
               for pair in load_pairs(data, limit=pairs).pairs
               for r in ((pair.chosen, pair.rejected), (pair.rejected, pair.chosen))]
    return resolve_hf_path(model), prompts


def _row(r: dict[str, Any]) -> str:
    return (f"{r['kind']:8s} wall {r['wall_s']:6.2f}  import {r['import_s']:5.2f}  load {r['load_s']:5.2f}  "
            f"generate {r['generate_s']:5.2f}  rest {r['rest_s']:5.2f} = start {r['start_s']:4.2f} + exit "
            f"{r['exit_s']:4.2f} + in-process {r['rest_s'] - r['start_s'] - r['exit_s']:4.2f}  "
            f"new tokens {r.get('new_tokens', 0)}  "
            f"(load avg {r['load_before']:.2f} -> {r['load_after']:.2f})")


def main(argv: list[str] | None = None) -> int:
    """Run the interleaved rounds and print the breakdown; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--no-force-answer", action="store_true", help="Run the eval without --force-answer.")
    ap.add_argument("--pairs", type=int, default=1, help="Pairs judged (x 2 orders) by both processes.")
    ap.add_argument("--max-new-tokens", type=int, default=1, help="New tokens per generation, both sides.")
    ap.add_argument("--batch-size", type=int, default=16, help="judgerl's backend batch_size.")
    ap.add_argument("--json", type=Path, help="Also write every run as JSON here.")
    args = ap.parse_args(argv)
    model_path, prompts = _prompts(args.model, args.data, args.pairs)
    runs: list[dict[str, Any]] = []
    print(f"model {args.model} ({model_path}); data {args.data}; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as out:
        spec = {"model": args.model, "data": args.data, "out": out, "force_answer": not args.no_force_answer,
                "model_path": model_path, "prompts": prompts, "pairs": args.pairs,
                "max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size}
        for k in range(args.rounds):
            for kind in ("judgerl", "plain"):
                r = _spawn(kind, spec)
                r["round"] = k
                runs.append(r)
                print(f"round {k}  {_row(r)}", flush=True)
    j = [r for r in runs if r["kind"] == "judgerl"]
    print("judgerl wrap-up inside rest (medians): " + "  ".join(
        f"{k[:-2]} {statistics.median(r.get(k, 0.0) for r in j):.2f}" for k in ("metrics_s", "audit_s", "plot_s")))
    print("\nmedians over rounds:")
    for kind in ("judgerl", "plain"):
        rs = [r for r in runs if r["kind"] == kind]
        med = {f: statistics.median(r[f] for r in rs) for f in ("wall_s", "import_s", "load_s", "generate_s", "rest_s",
                                                             "start_s", "exit_s")}
        print(f"  {kind:8s} " + "  ".join(f"{f[:-2]} {v:.2f}" for f, v in med.items()))
    rest = statistics.median(r["rest_s"] for r in j)
    print(f"judgerl fixed cost beyond import + model load + generation: {rest:.2f} s (target <= {TARGET_REST_S} s: "
          f"{'met' if rest <= TARGET_REST_S else 'NOT met'}); plain script's rest (interpreter start/exit): "
          f"{statistics.median(r['rest_s'] for r in runs if r['kind'] == 'plain'):.2f} s")
    ratios = [p["wall_s"] / j_["wall_s"] for j_, p in zip(j, (r for r in runs if r["kind"] == "plain"))]
    target = TARGET_SPEEDUP.get(args.pairs)
    print(f"whole-process speed-up, plain loop wall / judgerl wall: {statistics.median(ratios):.2f}x (rounds "
          + ", ".join(f"{x:.2f}" for x in ratios) + ")"
          + (f"; target >= {target:g}x: {'met' if statistics.median(ratios) >= target else 'NOT met'}" if target else ""))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        kind, spec_file, out_file = sys.argv[2:]
        child_spec = json.loads(Path(spec_file).read_text(encoding="utf-8"))
        result = (_judgerl_child if kind == "judgerl" else _plain_child)(child_spec)
        Path(out_file).write_text(json.dumps(result), encoding="utf-8")
        raise SystemExit(0)
    raise SystemExit(main())
