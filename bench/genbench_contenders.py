"""Contenders of ``bench/bench_generation.py``: each loads one generation engine, warms it up and
times greedy generation of the same chat prompts with the same new-token budget.

Each runs in its own fresh process (``bench_generation.py --worker``), so every contender starts
with the same memory, the OpenMP wait policy can differ per run (libgomp reads it once, when it
starts) and a peer engine's threads cannot slow the next contender. A contender returns the texts
(for the output-equality check), the seconds of the timed part (model loading and warm-up
excluded), the tokens, the OpenMP policy in force and the load average around the run.

Peer engines are optional: a contender whose package (or, for ``llama-server``, binary) is missing raises
:class:`NotInstalled` and the driver prints a note instead of a figure.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

WARMUP_TOKENS = 4


class NotInstalled(RuntimeError):
    """The contender's optional package is missing (the message says which)."""


def _gen_config(tok: Any, max_new: int, min_new: int) -> Any:
    from transformers import GenerationConfig

    return GenerationConfig(max_new_tokens=max_new, min_new_tokens=min_new or None, do_sample=False,
                            pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
                            eos_token_id=tok.eos_token_id, disable_compile=True)


def _load_plain(model_dir: str) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    return model, tok


def _render(tok: Any, prompts: list[Any]) -> list[list[int]]:
    from judgerl.backends.chat import render_chat

    return [tok(render_chat(tok, p), add_special_tokens=False)["input_ids"] for p in prompts]


def judgerl_contender(engine: str, dtype: str | None = None) -> Callable[..., dict[str, Any]]:
    """``HFBackend.generate`` on all prompts in one call (continuous or static engine), prefix
    cache emptied first so the run starts cold."""

    def run(model_dir: str, prompts: list[Any], max_new: int, min_new: int, batch_size: int) -> dict[str, Any]:
        from judgerl.backends import SamplingParams
        from judgerl.backends.hf import HFBackend

        b = HFBackend(model_dir, batch_size=batch_size, engine=engine, dtype=dtype)
        b.generate(prompts[:1], SamplingParams(max_new_tokens=WARMUP_TOKENS))
        b.clear_prefix_cache()
        params = SamplingParams(max_new_tokens=max_new)
        t = time.perf_counter()
        outs = b.generate(prompts, params, min_new_tokens=min_new)
        secs = time.perf_counter() - t
        stats = getattr(b.last_stats, "__dict__", None) if engine != "static" else None
        return {"seconds": secs, "texts": [c.text for c in outs], "tokens": [c.completion_tokens for c in outs],
                "engine": b.describe(), "stats": stats}

    return run


def hf_loop(model_dir: str, prompts: list[Any], max_new: int, min_new: int, batch_size: int) -> dict[str, Any]:
    """Plain transformers ``model.generate`` one prompt at a time (how harnesses judge on CPU)."""
    import torch

    model, tok = _load_plain(model_dir)
    ids = _render(tok, prompts)
    cfg = _gen_config(tok, max_new, min_new)
    with torch.inference_mode():
        model.generate(torch.tensor([ids[0]]), generation_config=_gen_config(tok, WARMUP_TOKENS, 0))
        t = time.perf_counter()
        rows = [model.generate(torch.tensor([x]), generation_config=cfg)[0, len(x):].tolist() for x in ids]
        secs = time.perf_counter() - t
    return _decoded(tok, rows, secs, "transformers generate, batch 1, DynamicCache")


def hf_pipeline(model_dir: str, prompts: list[Any], max_new: int, min_new: int, batch_size: int) -> dict[str, Any]:
    """transformers ``pipeline("text-generation", batch_size=...)`` (left padding)."""
    from transformers import pipeline

    from judgerl.backends.chat import render_chat

    model, tok = _load_plain(model_dir)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    pipe = pipeline("text-generation", model=model, tokenizer=tok, device="cpu")
    texts = [render_chat(tok, p) for p in prompts]
    kw = {"generation_config": _gen_config(tok, max_new, min_new), "return_full_text": False,
          "add_special_tokens": False, "batch_size": batch_size}
    pipe(texts[:1], **{**kw, "generation_config": _gen_config(tok, WARMUP_TOKENS, 0)})
    t = time.perf_counter()
    outs = pipe(texts, **kw)
    secs = time.perf_counter() - t
    got = [o[0]["generated_text"] for o in outs]
    return {"seconds": secs, "texts": got, "tokens": [len(tok(g, add_special_tokens=False)["input_ids"]) for g in got],
            "engine": f"transformers pipeline, batch {batch_size}, left padding"}


def hf_continuous(model_dir: str, prompts: list[Any], max_new: int, min_new: int, batch_size: int) -> dict[str, Any]:
    """transformers' own continuous batching (``model.generate_batch``, paged sdpa cache)."""
    model, tok = _load_plain(model_dir)
    ids = _render(tok, prompts)
    cfg = _gen_config(tok, max_new, min_new)
    model.generate_batch(ids[:1], generation_config=_gen_config(tok, WARMUP_TOKENS, 0))
    t = time.perf_counter()
    res = model.generate_batch(ids, generation_config=cfg)
    secs = time.perf_counter() - t
    rows = [r.generated_tokens for r in res.values()]
    if len(rows) != len(ids):
        raise RuntimeError(f"generate_batch returned {len(rows)} of {len(ids)} results")
    return _decoded(tok, rows, secs, "transformers generate_batch (continuous batching)")


def openvino(model_dir: str, prompts: list[Any], max_new: int, min_new: int, batch_size: int) -> dict[str, Any]:
    """OpenVINO fp32 through optimum-intel (``OVModelForCausalLM``), one prompt at a time."""
    try:
        from optimum.intel import OVModelForCausalLM
    except ImportError as e:
        raise NotInstalled("optimum-intel[openvino] is not installed") from e
    import torch
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = OVModelForCausalLM.from_pretrained(model_dir, export=True, ov_config={"INFERENCE_PRECISION_HINT": "f32"})
    ids = _render(tok, prompts)
    cfg = _gen_config(tok, max_new, min_new)
    model.generate(torch.tensor([ids[0]]), generation_config=_gen_config(tok, WARMUP_TOKENS, 0))
    t = time.perf_counter()
    rows = [model.generate(torch.tensor([x]), generation_config=cfg)[0, len(x):].tolist() for x in ids]
    secs = time.perf_counter() - t
    return _decoded(tok, rows, secs, "OpenVINO fp32 (optimum-intel), batch 1")


def ctranslate2(model_dir: str, prompts: list[Any], max_new: int, min_new: int, batch_size: int) -> dict[str, Any]:
    """CTranslate2 float32 ``Generator.generate_batch`` (its own batching)."""
    try:
        import ctranslate2 as ct2
        from ctranslate2.converters import TransformersConverter
    except ImportError as e:
        raise NotInstalled("ctranslate2 is not installed") from e
    import tempfile

    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    out_dir = tempfile.mkdtemp(prefix="ct2-")
    TransformersConverter(model_dir).convert(out_dir, quantization="float32", force=True)
    gen = ct2.Generator(out_dir, device="cpu", compute_type="float32", intra_threads=os.cpu_count() or 0)
    ids = _render(tok, prompts)
    toks = [tok.convert_ids_to_tokens(x) for x in ids]
    kw = {"max_length": max_new, "min_length": min_new, "include_prompt_in_result": False,
          "max_batch_size": batch_size, "sampling_topk": 1}
    gen.generate_batch(toks[:1], **{**kw, "max_length": WARMUP_TOKENS, "min_length": 0})
    t = time.perf_counter()
    res = gen.generate_batch(toks, **kw)
    secs = time.perf_counter() - t
    return _decoded(tok, [r.sequences_ids[0] for r in res], secs, "CTranslate2 float32")


def llama_backend(model_dir: str, prompts: list[Any], max_new: int, parallel: int, **openai_kwargs: Any) -> Any:
    """:class:`genbench_llamacpp.LlamaCppPeer` on the embedded GGUF (the file ``model_dir`` was converted
    from): ``llama-server`` from ``$LLAMA_SERVER`` (``--llama-server``), ``$LLAMA_PARALLEL`` slots
    (``--llama-parallel``; default ``parallel``), ``$LLAMA_THREADS`` threads (default 2), each slot's context the longest prompt + ``max_new`` +
    64 tokens (room for a forced answer), rounded up to 256.

    Raises:
        NotInstalled: no ``llama-server`` given, or ``model_dir`` is not the embedded model.
    """
    from judgerl.backends.embedded import embedded_model_path

    server = os.environ.get("LLAMA_SERVER")
    if not server:
        raise NotInstalled("no llama-server binary: pass --llama-server PATH (or set LLAMA_SERVER)")
    if os.path.realpath(model_dir) != os.path.realpath(embedded_model_path()):
        raise NotInstalled(f"llama-server runs the embedded GGUF only, not {model_dir}")
    from transformers import AutoTokenizer

    from genbench_llamacpp import LlamaCppPeer

    longest = max(len(x) for x in _render(AutoTokenizer.from_pretrained(model_dir), prompts))
    ctx = -(-(longest + max_new + 64) // 256) * 256
    parallel = int(os.environ.get("LLAMA_PARALLEL", parallel))
    return LlamaCppPeer("embedded", server, parallel=parallel, threads=int(os.environ.get("LLAMA_THREADS", "2")),
                           slot_context=ctx, **openai_kwargs)


def llama_server(model_dir: str, prompts: list[Any], max_new: int, min_new: int, batch_size: int) -> dict[str, Any]:
    """llama.cpp's ``llama-server`` (Q4_1 GGUF, its own kernels), parallel slots (default ``batch_size``) with
    continuous batching, through judgerl's ``openai/`` client (:func:`llama_backend`); a forced
    length (``min_new == max_new``) is llama.cpp's ``ignore_eos``. Server start and a warm-up
    request are not timed (as model loading is not for the others)."""
    if min_new not in (0, max_new):
        raise ValueError(f"llama-server can force the full length only (min_new 0 or {max_new}, got {min_new})")
    from judgerl.backends import SamplingParams

    b = llama_backend(model_dir, prompts, max_new, batch_size, extra_body={"ignore_eos": True} if min_new else None)
    try:
        b.generate(prompts[:1], SamplingParams(max_new_tokens=WARMUP_TOKENS))
        t = time.perf_counter()
        outs = b.generate(prompts, SamplingParams(max_new_tokens=max_new))
        secs = time.perf_counter() - t
    finally:
        b.close()
    bad = [c.error for c in outs if c.error]
    if bad:
        raise RuntimeError(f"llama-server: {len(bad)} requests failed, first: {bad[0]}")
    return {"seconds": secs, "texts": [c.text for c in outs], "tokens": [c.completion_tokens for c in outs],
            "engine": b.describe()}


def _decoded(tok: Any, rows: list[list[int]], secs: float, engine: str) -> dict[str, Any]:
    eos = {tok.eos_token_id, tok.pad_token_id} - {None}
    texts, counts = [], []
    for row in rows:
        n = next((j for j, t in enumerate(row) if t in eos), len(row))
        texts.append(tok.decode(row[:n], skip_special_tokens=True))
        counts.append(n)
    return {"seconds": secs, "texts": texts, "tokens": counts, "engine": engine}


#: name -> (function, runs on the one-at-a-time subset only, what it is)
CONTENDERS: dict[str, tuple[Callable[..., dict[str, Any]], bool, str]] = {
    "judgerl": (judgerl_contender("continuous"), False, "judgerl hf backend, continuous batching + prefix cache"),
    "judgerl-static": (judgerl_contender("static"), False, "judgerl hf backend before this change (engine='static')"),
    "judgerl-int8": (judgerl_contender("continuous", "int8"), False, "judgerl, int8 dynamic quantisation (inexact)"),
    "hf-loop": (hf_loop, True, "plain transformers generate, one prompt at a time"),
    "hf-pipeline": (hf_pipeline, False, "transformers text-generation pipeline, batched"),
    "hf-continuous": (hf_continuous, False, "transformers generate_batch (continuous batching)"),
    "openvino": (openvino, True, "OpenVINO fp32 via optimum-intel, one prompt at a time"),
    "ctranslate2": (ctranslate2, False, "CTranslate2 float32, batched"),
    "llama-server": (llama_server, False, "llama.cpp llama-server, Q4_1 GGUF, parallel slots (inexact)"),
}

#: Contenders that must reproduce plain transformers generate exactly (fp32).
EXACT = ("judgerl", "judgerl-static", "hf-loop", "hf-pipeline", "hf-continuous", "openvino", "ctranslate2")
