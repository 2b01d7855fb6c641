"""Generation speed of the hf backend, side by side with peer engines, interleaved and repeated.

One command runs everything (about 60-75 minutes on 2 idle cores; run it ALONE)::

    python bench/bench_generation.py --all --json runs/bench_generation.json

Parts (each can also run on its own):

* ``--workload fixed`` (default): the PaV prompts of ``--n-pairs`` LLMBar pairs in both orders,
  greedy, every completion forced to exactly ``--max-new-tokens`` tokens (EOS suppressed before),
  run by each contender (``bench/genbench_contenders.py``: judgerl continuous, judgerl static =
  the engine before continuous batching, plain transformers ``generate`` one prompt at a time,
  transformers pipeline, transformers continuous batching, OpenVINO and CTranslate2 when
  installed) in a fresh process each, interleaved A B C A B C ... ``--repeats`` times. Prints
  judgments/s, the ratio to the plain ``generate`` loop per round, output equality with it
  (every prompt it ran) and with judgerl, and how close judgerl gets to the end-to-end bound:

  - prefill at the measured GEMM peak: ``2 N_body + 4 n_layers ctx d_attn`` FLOPs per prompt
    token (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", Sec. 2.1; ``N_body``
    leaves out the LM head, which an exact engine runs only on a prompt's last position: ``2
    N_head`` once per prompt), counting only the tokens no exact engine can skip (a token whose
    prefix was already prefilled by an earlier prompt of the workload is free: the size of the
    token trie of the prompts);
  - decode at the roofline (Williams et al. 2009, "Roofline", CACM 52(4)): each step of B rows
    takes max(compute: B x FLOPs/token at the GEMM peak, memory: (weight bytes + B x ctx x KV
    bytes/token) / copy bandwidth);
* ``--load N``: the same with N busy-looping processes started by the bench (a reproducible
  "load of N"); ``--all`` runs judgerl vs the plain loop under a load of 4;
* ``--omp-ab``: judgerl on a small workload with libgomp's default wait policy vs PASSIVE (what
  ``import judgerl`` sets), each in a fresh process, idle and under a load of 4;
* ``--workload llamacpp`` (and ``--all`` given ``--llama-server``): judgerl's fp32 hf backend vs
  llama.cpp's ``llama-server`` on the embedded GGUF, interleaved rounds of the same judge prompts
  through ``run_eval``, with verdict agreement (``bench/genbench_llamacpp.py``). The fixed
  workload's ``llama-server`` contender runs it with ``ignore_eos`` (forced length); both need
  ``--llama-server PATH`` (or ``$LLAMA_SERVER``), else they are skipped;
* ``--workload judge``: a *trained-judge* workload with variable-length outputs: ``--judge-pairs``
  LLMBar pairs x 2 orders end to end through ``run_eval`` (the ``judgerl eval`` path), the
  continuous engine vs the static one (before this change); with ``--int8`` also int8 dynamic
  quantisation, whose verdict agreement with fp32 is reported. Until a trained judge ships
  (``smollm2-135m-judge``), the base model stands in, sampled at T=0.7 with per-sample seeds
  (greedy, it mostly loops until the token limit) and stopping at its answer tag (``</verdict>``)
  or EOS, which gives variable output lengths: the bench says which model ran. All judgments go
  to the backend in one call (``--eval-chunk 0``), so queued prompts can join the decode batch.

The load average is printed around every run; figures from a loaded machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
DEFAULT_DATA = Path(os.environ.get("JUDGERL_SHARED_DATA", REPO.parent / "shared" / "data")) / "llmbar" / "natural.json"
FIXED_CONTENDERS = ["judgerl", "judgerl-static", "hf-loop", "hf-pipeline", "hf-continuous", "openvino", "ctranslate2",
                    "llama-server"]
TRAINED_JUDGE = "smollm2-135m-judge"


def both_order_prompts(path: Path, n: int) -> list[Any]:
    """PaV chat prompts for the first ``n`` pairs of an LLMBar-format file, both orders (AB, BA)."""
    from judgerl.data import load_pairs
    from judgerl.protocols import get_protocol

    pairs = load_pairs(path, limit=n).pairs
    if len(pairs) < n:
        raise SystemExit(f"{path} has only {len(pairs)} pairs, asked for {n}")
    pav = get_protocol("pav")
    return [pav.build(p.prompt, r) for p in pairs for r in ([p.chosen, p.rejected], [p.rejected, p.chosen])]


# ---------------------------------------------------------------- processes


def start_load(n: int) -> list[subprocess.Popen]:
    """Start ``n`` busy-looping processes (a load of ``n``); stop them with :func:`stop_load`."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_load(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
        p.wait()


#: OpenMP settings of the A/B: name -> environment (``passive`` is what ``import judgerl`` sets).
OMP_ARMS: dict[str, dict[str, str]] = {
    "default": {"JUDGERL_OMP_POLICY": "keep"},  # libgomp's own: spin ~300k iterations, then sleep
    "passive": {},  # OMP_WAIT_POLICY=PASSIVE set by `import judgerl`: sleep at once
    "spin10k": {"JUDGERL_OMP_POLICY": "keep", "GOMP_SPINCOUNT": "10000"},  # a short spin, then sleep
}


def run_worker(spec: dict[str, Any], omp: str = "passive") -> dict[str, Any]:
    """Run one contender in a fresh process with the OpenMP setting ``omp`` (a key of
    :data:`OMP_ARMS`). Returns its result with the load averages added."""
    env = dict(os.environ)
    for k in ("OMP_WAIT_POLICY", "JUDGERL_OMP_POLICY", "GOMP_SPINCOUNT"):
        env.pop(k, None)
    env.update(OMP_ARMS[omp])
    before = os.getloadavg()
    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], env=env,
                          capture_output=True, text=True)
    after = os.getloadavg()
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail) or f"exit {proc.returncode}", "load_before": before, "load_after": after}
    out = json.loads(lines[-1])
    out.update(load_before=before, load_after=after)
    return out


def worker_main(spec: dict[str, Any]) -> int:
    """Inside a fresh process: run ``spec["kind"]`` and print its result as one JSON line."""
    import judgerl  # noqa: F401  (applies the OpenMP policy before torch)
    from judgerl.backends.runtime import omp_policy

    kind = spec["kind"]
    if kind == "roofline":
        from genbench_bound import roofline_worker

        res = roofline_worker(spec)
    elif kind == "judge":
        res = judge_worker(spec)
    else:
        from genbench_contenders import CONTENDERS, NotInstalled

        from judgerl.backends.models import resolve_hf_path

        fn = CONTENDERS[kind][0]
        prompts = both_order_prompts(Path(spec["data"]), spec["n_pairs"])[: spec["n_prompts"]]
        try:
            res = fn(resolve_hf_path(spec["model"]), prompts, spec["max_new"], spec["min_new"], spec["batch_size"])
        except NotInstalled as e:
            res = {"skipped": str(e)}
    res["omp"] = omp_policy() + (f", GOMP_SPINCOUNT={os.environ['GOMP_SPINCOUNT']}"
                                 if "GOMP_SPINCOUNT" in os.environ else "")
    print(json.dumps(res))
    return 0


# ---------------------------------------------------------------- judge workload


def judge_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """``run_eval`` of ``n_pairs`` x 2 orders with one engine; returns seconds and the records."""
    import tempfile

    from judgerl.backends import SamplingParams
    from judgerl.backends.hf import HFBackend
    from judgerl.backends.models import resolve_hf_path
    from judgerl.data import load_pairs
    from judgerl.eval import run_eval
    from judgerl.judge import Judge
    from judgerl.protocols import get_protocol

    pairs = load_pairs(Path(spec["data"]), limit=spec["n_pairs"]).pairs
    if spec["engine"] == "llama-server":  # genbench_llamacpp.LlamaCppPeer (its own server, openai/ client)
        from genbench_contenders import llama_backend

        backend = llama_backend(resolve_hf_path(spec["model"]), both_order_prompts(Path(spec["data"]),
                                spec["n_pairs"]), spec["max_new"], spec["batch_size"])
    else:
        backend = HFBackend(resolve_hf_path(spec["model"]), batch_size=spec["batch_size"], engine=spec["engine"],
                            dtype=spec.get("dtype"))
        backend.name = spec["model"]
    params = SamplingParams(max_new_tokens=spec["max_new"], temperature=spec["temperature"], stop=tuple(spec["stop"]))
    judge = Judge(get_protocol("pav"), backend, params, seed=0, force_answer=spec.get("force_answer", False))
    backend.generate([judge.build("Hi?", ["a", "b"])], SamplingParams(max_new_tokens=WARMUP))
    if isinstance(backend, HFBackend):
        backend.clear_prefix_cache()
    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        summary = run_eval(judge, pairs, out, progress=False, batch_size=spec["eval_chunk"] or 2 * len(pairs),
                           write_report=False)
        secs = time.perf_counter() - t
        recs = [json.loads(x) for x in (Path(out) / "judgments.jsonl").read_text().splitlines()]
    recs.sort(key=lambda r: (r["pair_id"], r.get("order", "")))
    engine = backend.describe()
    if not isinstance(backend, HFBackend):
        backend.close()
    return {"seconds": secs, "texts": [r["raw_output"] for r in recs], "tokens": [r["completion_tokens"] for r in recs],
            "verdicts": [r["decision"].get("verdict") for r in recs], "accuracy": summary["accuracy"],
            "forced": sum(bool(r.get("forced_answer")) for r in recs), "engine": engine}


WARMUP = 4


# ---------------------------------------------------------------- driver


def print_run(name: str, r: dict[str, Any], n_judgments: int | None = None) -> None:
    if "error" in r:
        print(f"  {name:15s} FAILED: {r['error']}")
        return
    if "skipped" in r:
        print(f"  {name:15s} skipped: {r['skipped']}")
        return
    n = n_judgments or len(r["texts"])
    print(f"  {name:15s} {r['seconds']:7.1f} s  {n / r['seconds']:.3f} judgments/s  "
          f"{sum(r['tokens']) / r['seconds']:6.1f} tok/s  load {r['load_before'][0]:.2f}->{r['load_after'][0]:.2f}  "
          f"OMP {r['omp']}")


def fixed_workload(args: argparse.Namespace, contenders: list[str], repeats: int, load: int,
                   label: str) -> dict[str, Any]:
    """Interleaved, repeated runs of the fixed workload; returns per-contender runs and ratios."""
    from genbench_contenders import CONTENDERS, EXACT

    n_prompts = 2 * args.n_pairs
    base = {"model": args.model, "data": str(args.data), "n_pairs": args.n_pairs, "max_new": args.max_new_tokens,
            "min_new": args.max_new_tokens, "batch_size": args.batch_size}
    print(f"\n== fixed workload ({label}): {args.n_pairs} LLMBar pairs x 2 orders = {n_prompts} PaV prompts, "
          f"{args.max_new_tokens} new tokens each (forced), batch {args.batch_size}, {repeats} interleaved rounds; "
          f"one-at-a-time contenders run the first {args.n_single} prompts")
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
    skip: set[str] = set()
    loaders = start_load(load) if load else []
    try:
        for rnd in range(repeats):
            print(f" round {rnd + 1}/{repeats}")
            for c in contenders:
                if c in skip:
                    continue
                single = CONTENDERS[c][1]
                omp = "passive" if c.startswith("judgerl") else args.peer_omp
                r = run_worker({**base, "kind": c, "n_prompts": args.n_single if single else n_prompts}, omp=omp)
                print_run(c, r)
                if "skipped" in r or "error" in r:
                    skip.add(c)
                runs[c].append(r)
    finally:
        stop_load(loaders)
    ok = {c: [r for r in rs if "texts" in r] for c, rs in runs.items()}
    rate = {c: statistics.median(len(r["texts"]) / r["seconds"] for r in rs) for c, rs in ok.items() if rs}
    ref = ok.get("hf-loop", [])
    ours = ok.get("judgerl", [])
    result: dict[str, Any] = {"label": label, "load_procs": load, "rate_judgments_per_s": rate, "equality": {}}
    print(f" summary ({label}): median judgments/s over rounds; equality vs plain generate on the prompts it ran")
    for c, r in rate.items():
        line = f"  {c:15s} {r:.3f} judgments/s"
        if ref and c != "hf-loop":
            a, b = ref[0]["texts"], ok[c][0]["texts"]
            same = sum(x == y for x, y in zip(a, b))
            result["equality"][c] = [same, len(a)]
            line += f"  identical to plain generate {same}/{len(a)}"
            if c not in EXACT:
                line += " (inexact by design)"
        if ours and c != "judgerl":
            same = sum(x == y for x, y in zip(ours[0]["texts"], ok[c][0]["texts"]))
            line += f"  identical to judgerl {same}/{len(ok[c][0]['texts'])}"
        if "hf-loop" in rate:
            line += f"  = {r / rate['hf-loop']:.2f}x plain generate loop"
        print(line)
    if "judgerl" in rate and "hf-loop" in rate:
        rounds = [len(a["texts"]) / a["seconds"] / (len(b["texts"]) / b["seconds"]) for a, b in zip(ours, ref)]
        result["ratio_vs_loop_per_round"] = rounds
        print(f"  judgerl / plain generate loop per round: {', '.join(f'{x:.2f}x' for x in rounds)}")
    exact = [c for c, (same, n) in result["equality"].items() if same == n]
    peers = {c: r for c, r in rate.items() if c in EXACT and c in exact and not c.startswith("judgerl")}
    inexact = sorted(c for c in result["equality"] if c not in exact and not c.startswith("judgerl"))
    if "judgerl" in rate and peers:
        best = max(peers, key=peers.get)
        result["ratio_vs_best_peer"] = [best, rate["judgerl"] / peers[best]]
        print(f"  judgerl / best exact peer engine ({best}): {rate['judgerl'] / peers[best]:.2f}x "
              f"(peers whose outputs differed from plain generate are not valid comparisons: {inexact or 'none'})")
    result["runs"] = {c: [{k: v for k, v in r.items() if k != "texts"} for r in rs] for c, rs in runs.items()}
    return result


def bound_report(args: argparse.Namespace, fixed: dict[str, Any]) -> dict[str, Any]:
    roof = run_worker({"kind": "roofline", "model": args.model, "data": str(args.data), "n_pairs": args.n_pairs})
    if "error" in roof:
        print(f" roofline FAILED: {roof['error']}")
        return {}
    n = 2 * args.n_pairs
    from genbench_bound import end_to_end_bound

    bound = end_to_end_bound(roof, n, args.max_new_tokens, args.batch_size)
    batch = min(args.batch_size, n)
    total_tokens = sum(roof["prompt_lengths"][:n])
    free = total_tokens - sum(e - f for f, e in roof["new_positions"][:n])
    print(f"\n== end-to-end bound: peak fp32 GEMM {roof['peak_gflops']:.0f} GFLOP/s, copy {roof['bandwidth_gbs']:.1f} "
          f"GB/s, {roof['params'] / 1e6:.1f}M params; {total_tokens} prompt tokens of which {free} are shared "
          f"prefixes (free)")
    print(f"  ideal: prefill {bound['prefill_s']:.1f} s + decode {bound['decode_s']:.1f} s ({bound['decode_bound']}-"
          f"bound at batch {batch}) = {bound['total_s']:.1f} s for {n} judgments; measured at load "
          f"{roof['load_before'][0]:.2f} (contenders above ran at their own loads: compare on an idle machine)")
    out = {"roofline": {k: v for k, v in roof.items() if k not in ("prompt_lengths", "new_positions")},
           "bound": bound, "fraction_of_bound": {}}
    for c in ("judgerl", "judgerl-static"):
        rate = fixed["rate_judgments_per_s"].get(c)
        if rate:
            frac = bound["total_s"] / (n / rate)
            out["fraction_of_bound"][c] = frac
            print(f"  {c}: {n / rate:.1f} s = {frac:.0%} of the bound")
    return out


def omp_ab(args: argparse.Namespace, repeats: int) -> dict[str, Any]:
    """libgomp default vs PASSIVE vs a short spin, fresh process each, idle and under a load of 4."""
    spec = {"kind": "judgerl", "model": args.model, "data": str(args.data), "n_pairs": 4, "n_prompts": 8,
            "max_new": 32, "min_new": 32, "batch_size": 8}
    print("\n== OpenMP wait policy A/B: judgerl, 4 pairs x 2 orders, 32 new tokens, fresh process per run")
    out: dict[str, Any] = {}
    for load in (0, 4):
        loaders = start_load(load) if load else []
        try:
            secs: dict[str, list[float]] = {arm: [] for arm in OMP_ARMS}
            for _ in range(repeats):
                for omp in OMP_ARMS:
                    r = run_worker(spec, omp=omp)
                    print_run(f"{omp}/load{load}", r)
                    if "seconds" in r:
                        secs[omp].append(r["seconds"])
        finally:
            stop_load(loaders)
        med = {k: statistics.median(v) for k, v in secs.items() if v}
        out[f"load{load}"] = med
        if "default" in med:
            print(f"  load {load}: " + ", ".join(f"{k} {v:.1f} s ({med['default'] / v:.2f}x default)"
                                                 for k, v in med.items()))
    return out


def judge_workload(args: argparse.Namespace, int8: bool) -> dict[str, Any]:
    model, stop, temp, note = args.judge_model, [], 0.0, "a trained judge, greedy"
    if model is None:
        try:
            from judgerl.backends.models import resolve_hf_path

            path = resolve_hf_path(TRAINED_JUDGE)
            if not Path(path).is_dir():
                raise FileNotFoundError(f"{TRAINED_JUDGE} is not a known model name here")
            model = TRAINED_JUDGE
        except Exception as e:  # noqa: BLE001 - any reason the trained judge is unavailable
            model, stop, temp = args.model, ["</verdict>"], 0.7
            note = (f"PROXY: {args.model} (base model) sampled at T=0.7 with per-sample seeds (greedy, it mostly "
                    f"loops until the token limit), stopping at </verdict> or EOS, because {TRAINED_JUDGE} is not "
                    f"available ({str(e).splitlines()[0][:100]})")
    print(f"\n== trained-judge workload: {args.judge_pairs} LLMBar pairs x 2 orders through run_eval (judgerl eval), "
          f"up to {args.judge_max_new_tokens} new tokens, eval chunk {args.eval_chunk or 'all'}, backend batch "
          f"{args.batch_size}; model: {note}")
    spec = {"kind": "judge", "model": model, "data": str(args.data), "n_pairs": args.judge_pairs,
            "max_new": args.judge_max_new_tokens, "stop": stop, "temperature": temp, "batch_size": args.batch_size,
            "eval_chunk": args.eval_chunk}
    res = {}
    for engine in ("continuous", "static"):
        r = run_worker({**spec, "engine": engine, "dtype": None})
        print_run(engine, r)
        res[engine] = r
    out: dict[str, Any] = {"model": model, "note": note}
    c, s = res.get("continuous", {}), res.get("static", {})
    if "texts" in c and "texts" in s:
        same = sum(a == b for a, b in zip(c["texts"], s["texts"]))
        lens = sorted(c["tokens"])
        out.update(continuous_s=c["seconds"], static_s=s["seconds"], speedup=s["seconds"] / c["seconds"],
                   identical=[same, len(c["texts"])])
        print(f"  continuous {c['seconds']:.1f} s vs static (before) {s['seconds']:.1f} s -> "
              f"{s['seconds'] / c['seconds']:.2f}x; identical outputs {same}/{len(c['texts'])}; output tokens "
              f"min {lens[0]} median {lens[len(lens) // 2]} max {lens[-1]}; accuracy {c['accuracy']}")
    if not int8:
        return out
    # int8 vs fp32 verdicts: greedy with answer forcing, so every judgment ends in a verdict
    ispec = {**spec, "temperature": 0.0, "max_new": args.int8_max_new_tokens, "force_answer": True,
             "engine": "continuous"}
    print(f" int8 vs fp32: the same pairs, greedy, {args.int8_max_new_tokens} new tokens then the answer forced "
          f"(--force-answer), so every judgment has a verdict")
    c = run_worker({**ispec, "dtype": None})
    print_run("fp32", c)
    q = run_worker({**ispec, "dtype": "int8"})
    print_run("int8", q)
    if "texts" in q and "texts" in c:
        agree = sum(a == b for a, b in zip(c["verdicts"], q["verdicts"]))
        valid = [(a, b) for a, b in zip(c["verdicts"], q["verdicts"]) if a is not None]
        agree_valid = sum(a == b for a, b in valid)
        out.update(int8_s=q["seconds"], int8_verdict_agreement=agree / len(c["verdicts"]),
                   int8_agreement_where_fp32_valid=[agree_valid, len(valid)])
        print(f"  int8: {q['seconds']:.1f} s ({c['seconds'] / q['seconds']:.2f}x fp32 continuous); verdicts equal to "
              f"fp32 on {agree}/{len(c['verdicts'])} ({agree_valid}/{len(valid)} where fp32 gave a verdict); "
              f"identical texts "
              f"{sum(a == b for a, b in zip(c['texts'], q['texts']))}/{len(c['texts'])}; accuracy "
              f"{q['accuracy']} vs fp32 {c['accuracy']}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="everything: fixed idle (3 rounds) + bound, fixed under a "
                    "load of 4, OpenMP A/B, trained-judge workload with int8")
    ap.add_argument("--workload", choices=("fixed", "judge", "llamacpp"), default="fixed")
    ap.add_argument("--contenders", default=",".join(FIXED_CONTENDERS), help="comma-separated (fixed workload)")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LLMBar-format pairs file")
    ap.add_argument("--n-pairs", type=int, default=16, help="pairs of the fixed workload (x 2 orders)")
    ap.add_argument("--n-single", type=int, default=4, help="prompts run by one-at-a-time contenders")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=32, help="rows decoded together (all batched engines)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--load", type=int, default=0, help="busy processes started during the fixed workload")
    ap.add_argument("--omp-ab", action="store_true")
    ap.add_argument("--peer-omp", choices=sorted(OMP_ARMS), default="passive", help="OpenMP setting of the "
                    "non-judgerl contenders (judgerl always runs with its own PASSIVE); 'default' is how a harness "
                    "that never imports judgerl runs")
    ap.add_argument("--int8", action="store_true", help="judge workload: also int8 and its verdict agreement")
    ap.add_argument("--judge-model", default=None, help=f"default: {TRAINED_JUDGE} when available, else a proxy")
    ap.add_argument("--judge-pairs", type=int, default=100)
    ap.add_argument("--judge-max-new-tokens", type=int, default=256)
    ap.add_argument("--int8-max-new-tokens", type=int, default=64, help="int8 agreement run: tokens before the "
                    "forced answer")
    ap.add_argument("--eval-chunk", type=int, default=0, help="judgments per judge.run call (run_eval batch_size; "
                    "0: all in one call, so queued prompts can join the decode batch)")
    ap.add_argument("--llama-server", default=os.environ.get("LLAMA_SERVER"), help="llama.cpp's llama-server "
                    "binary (default $LLAMA_SERVER): the llama-server contender and --workload llamacpp")
    ap.add_argument("--llama-threads", type=int, default=2, help="llama-server --threads")
    ap.add_argument("--llama-parallel", type=int, default=4, help="llama-server --parallel slots (more slots slow "
                    "its prefill of the judge prompts here: docs/backends.md)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker_main(json.loads(args.worker))
    if args.llama_server:  # the workers read them (genbench_contenders.llama_backend)
        os.environ.update(LLAMA_SERVER=args.llama_server, LLAMA_THREADS=str(args.llama_threads),
                          LLAMA_PARALLEL=str(args.llama_parallel))
    if not 1 <= args.n_single <= 2 * args.n_pairs:
        ap.error("need 1 <= --n-single <= 2 x --n-pairs")
    t0 = time.perf_counter()
    print(f"cpu cores: {os.cpu_count()}  load average: {os.getloadavg()}  workers run with OMP_WAIT_POLICY=PASSIVE "
          f"unless stated (judgerl's default)")
    result: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    contenders = [c for c in args.contenders.split(",") if c]
    if args.all or args.workload == "fixed":
        result["fixed"] = fixed_workload(args, contenders, args.repeats, args.load,
                                         "no added load" if not args.load else f"load {args.load}")
        result["bound"] = bound_report(args, result["fixed"])
    if args.all:
        result["fixed_load4"] = fixed_workload(args, ["judgerl", "hf-loop"], 2, 4, "load 4")
    if args.all or args.omp_ab:
        result["omp_ab"] = omp_ab(args, 2)
    if args.all or args.workload == "judge":
        result["judge"] = judge_workload(args, args.int8 or args.all)
    if args.workload == "llamacpp" or (args.all and args.llama_server):
        from genbench_llamacpp import llama_workload

        result["llamacpp"] = llama_workload(args, run_worker, print_run)
    result["wall_s"] = time.perf_counter() - t0
    print(f"\nwall time {result['wall_s'] / 60:.1f} min; load average now {os.getloadavg()}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
