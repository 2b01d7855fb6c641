"""The hf backend's continuous-batching engine and prefix KV cache (issue 13).

Fast tests run on the tiny random Llama of ``test_backends_hf`` (seconds); ``slow`` tests use the
embedded SmolLM2-135M on real LLMBar PaV prompts with at most 16 new tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_backends_hf import PROMPTS, build_tiny_model, user  # noqa: E402

from judgerl.backends import SamplingParams  # noqa: E402
from judgerl.backends.chat import continue_prompt  # noqa: E402
from judgerl.backends.hf import HFBackend  # noqa: E402
from judgerl.backends.hf_engine import continuous_supported  # noqa: E402
from judgerl.backends.hf_prefix import PrefixKVCache, common_prefix_len, kv_bytes  # noqa: E402

SYSTEM = {"role": "system", "content": "Think step by step, then give the final answer in a verdict tag. " * 3}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-engine"))


def backend(tiny_dir: Path, **kw) -> HFBackend:
    return HFBackend(str(tiny_dir), device="cpu", **{"batch_size": 3, **kw})


def plain_generate(b: HFBackend, prompt, max_new: int, min_new: int = 0) -> str:
    """The reference: transformers generate on one prompt, fp32, greedy, no judgerl code."""
    ids = b.tokenizer(b.render(prompt), add_special_tokens=False, return_tensors="pt")
    with torch.inference_mode():
        out = b.model.generate(**ids, max_new_tokens=max_new, min_new_tokens=min_new or None, do_sample=False,
                               pad_token_id=b.tokenizer.pad_token_id)
    row = out[0, ids["input_ids"].shape[1]:].tolist()
    eos = {b.tokenizer.eos_token_id, b.tokenizer.pad_token_id}
    n = next((j for j, t in enumerate(row) if t in eos), len(row))
    return b.tokenizer.decode(row[:n], skip_special_tokens=True)


def kv(n: int, heads: int = 2, dim: int = 4, layers: int = 2, fill: float = 0.0):
    return [(torch.full((1, heads, n, dim), fill + i), torch.full((1, heads, n, dim), -fill - i)) for i in range(layers)]


# ---------------------------------------------------------------- prefix cache (no model)


def test_prefix_cache_longest_prefix_and_limit() -> None:
    c = PrefixKVCache(max_bytes=1 << 20, min_tokens=2)
    assert c.lookup([1, 2, 3]) == (0, [])
    assert c.insert([1, 2, 3, 4, 5], kv(5, fill=1.0))
    assert c.insert([1, 2, 9, 9], kv(4, fill=2.0))
    n, got = c.lookup([1, 2, 3, 4, 7, 7])
    assert n == 4 and got[0][0].shape == (1, 2, 4, 4) and float(got[0][0][0, 0, 0, 0]) == 1.0
    n, got = c.lookup([1, 2, 9, 9, 9])
    assert n == 4 and float(got[0][0][0, 0, 0, 0]) == 2.0
    assert c.lookup([1, 2, 3, 4, 5], limit=3)[0] == 3  # a prompt always keeps >= 1 token to run
    assert c.lookup([7, 7, 7])[0] == 0
    assert c.lookup([1, 5])[0] == 0  # 1 shared token < min_tokens


def test_prefix_cache_subsumes_prefixes_and_skips_covered() -> None:
    c = PrefixKVCache(max_bytes=1 << 20, min_tokens=1)
    assert c.insert([1, 2, 3], kv(3))
    assert c.insert([1, 2, 3, 4, 5], kv(5))  # extends the first: the first is dropped
    assert len(c) == 1 and c.bytes == kv_bytes(kv(5))
    assert not c.insert([1, 2, 3, 4], kv(4))  # covered by the stored longer sequence
    assert len(c) == 1


def test_prefix_cache_byte_budget_evicts_least_recently_used() -> None:
    one = kv_bytes(kv(10))
    c = PrefixKVCache(max_bytes=2 * one, min_tokens=1)
    c.insert(list(range(10)), kv(10))
    c.insert(list(range(100, 110)), kv(10))
    c.lookup(list(range(10)))  # touch the first: the second is now least recently used
    c.insert(list(range(200, 210)), kv(10))
    assert c.bytes <= 2 * one and len(c) == 2
    assert c.lookup(list(range(10)))[0] == 10
    assert c.lookup(list(range(100, 110)))[0] == 0
    assert not c.insert(list(range(1000, 1030)), kv(30))  # larger than the whole budget
    off = PrefixKVCache(max_bytes=0)
    assert not off.insert(list(range(40)), kv(40)) and off.lookup(list(range(40)))[0] == 0
    with pytest.raises(ValueError, match="max_bytes"):
        PrefixKVCache(max_bytes=-1)


def test_prefix_cache_empties_when_weights_change_in_place() -> None:
    model = torch.nn.Linear(2, 2)
    c = PrefixKVCache(max_bytes=1 << 20, min_tokens=1)
    c.check_weights(model)
    c.insert([1, 2, 3], kv(3))
    c.check_weights(model)
    assert len(c) == 1  # same weights: kept
    with torch.no_grad():
        model.weight.add_(1.0)  # an optimizer step
    c.check_weights(model)
    assert len(c) == 0


def test_common_prefix_len_arrays() -> None:
    import numpy as np

    a = np.array([1, 2, 3]), np.array([1, 2, 4, 5])
    assert common_prefix_len(*a) == 2
    assert common_prefix_len(np.array([], dtype=np.int64), np.array([1])) == 0
    assert common_prefix_len(np.array([1, 2]), np.array([1, 2, 3])) == 2


# ---------------------------------------------------------------- engine on the tiny model


def test_engine_choice_and_validation(tiny_dir: Path) -> None:
    b = backend(tiny_dir)
    assert b.engine == "continuous" and continuous_supported(b.model) is None
    assert "engine continuous" in b.describe()
    assert backend(tiny_dir, engine="static").engine == "static"
    with pytest.raises(ValueError, match="unknown engine 'turbo'"):
        backend(tiny_dir, engine="turbo")
    with pytest.raises(ValueError, match="int8.*CPU only"):
        HFBackend(str(tiny_dir), device="cuda", dtype="int8")
    with pytest.raises(ValueError, match="prefix cache max_bytes"):
        backend(tiny_dir, prefix_cache_bytes=-5)


def test_continuous_supported_names_the_reason() -> None:
    class Cfg:
        _attn_implementation = "flash_attention_2"
        num_hidden_layers = 2

    class M:
        config = Cfg()

    assert "flash_attention_2" in continuous_supported(M())
    Cfg._attn_implementation = "sdpa"
    Cfg.layer_types = ["full_attention", "sliding_attention"]
    assert "sliding_attention" in continuous_supported(M())
    Cfg.layer_types = None
    Cfg.sliding_window = 4096
    assert "sliding" in continuous_supported(M())


@pytest.mark.parametrize("batch_size", [1, 2, 5])
def test_greedy_equals_plain_generate_at_any_batch_size(tiny_dir: Path, batch_size: int) -> None:
    prompts = PROMPTS + [[SYSTEM, *p] for p in PROMPTS]  # shared system prefix: reuse inside the call
    b = backend(tiny_dir, batch_size=batch_size)
    out = b.generate(prompts, SamplingParams(max_new_tokens=12))
    assert [c.text for c in out] == [plain_generate(b, p, 12) for p in prompts]
    assert b.last_stats.reused_tokens > 0


def test_continuous_equals_static_with_min_tokens_eos_and_sampling(tiny_dir: Path) -> None:
    cont, static = backend(tiny_dir, batch_size=2), backend(tiny_dir, batch_size=2, engine="static")
    for params, min_new in [(SamplingParams(max_new_tokens=9), 9), (SamplingParams(max_new_tokens=14), 0),
                            (SamplingParams(max_new_tokens=10, temperature=1.0, top_p=0.9), 0)]:
        seeds = [5 + i for i in range(len(PROMPTS))] if params.temperature else None
        a = cont.generate(PROMPTS, params, seeds=seeds, min_new_tokens=min_new)
        b = static.generate(PROMPTS, params, seeds=seeds, min_new_tokens=min_new)
        assert a == b


def test_rows_that_finish_early_leave_and_queued_rows_join(tiny_dir: Path) -> None:
    b = backend(tiny_dir, batch_size=2)
    full = b.generate(PROMPTS, SamplingParams(max_new_tokens=16), min_new_tokens=16)
    # a stop string cutting some rows early: fewer decode row-tokens than rows x budget
    stop = full[0].text[4:6]
    out = b.generate(PROMPTS, SamplingParams(max_new_tokens=16, stop=(stop,)), min_new_tokens=16)
    for c, f in zip(out, full):
        assert c.text == f.text[: f.text.find(stop)] if stop in f.text else c.text == f.text
    assert b.last_stats.decode_row_tokens < len(PROMPTS) * 15
    seen: list[int] = []
    b.generate(PROMPTS, SamplingParams(max_new_tokens=16, stop=(stop,)), min_new_tokens=16,
               on_result=lambda i, c: seen.append(i))
    assert sorted(seen) == list(range(len(PROMPTS)))


def test_prefix_cache_is_reused_across_calls_and_rounds(tiny_dir: Path) -> None:
    b = backend(tiny_dir)
    params = SamplingParams(max_new_tokens=10)
    first = b.generate([[SYSTEM, *PROMPTS[0]]], params)[0]
    assert b.last_stats.reused_tokens == 0
    again = b.generate([[SYSTEM, *PROMPTS[1]]], params)[0]  # a later call: the system prompt is cached
    assert b.last_stats.reused_tokens >= 16 and again.text == plain_generate(b, [SYSTEM, *PROMPTS[1]], 10)
    # a tool-loop round continues the trajectory: only the new tokens are prefilled
    cont = continue_prompt([SYSTEM, *PROMPTS[0]], first.text + "\n```output\n42\n```\n")
    n_prompt = len(b.tokenizer(b.render(cont), add_special_tokens=False)["input_ids"])
    nxt = b.generate([cont], params)[0]
    assert b.last_stats.reused_tokens >= first.prompt_tokens
    assert b.last_stats.prefill_tokens <= n_prompt - first.prompt_tokens
    assert nxt.text == plain_generate(b, cont, 10)
    b.clear_prefix_cache()
    b.generate([[SYSTEM, *PROMPTS[2]]], params)
    assert b.last_stats.reused_tokens == 0


def test_from_loaded_never_reuses_kv_of_older_weights(tiny_dir: Path) -> None:
    ref = backend(tiny_dir)
    b = HFBackend.from_loaded(ref.model, ref.tokenizer, batch_size=2)
    params = SamplingParams(max_new_tokens=8)
    prompts = [[SYSTEM, *p] for p in PROMPTS[:2]]
    b.generate(prompts, params)
    assert len(b.prefix_cache) > 0
    with torch.no_grad():
        for p in b.model.parameters():
            p.mul_(1.01)  # an optimizer step, in place
    try:
        out = b.generate(prompts, params)
        assert b.last_stats.reused_tokens > 0  # reuse inside the call only, from fresh KV
        assert [c.text for c in out] == [plain_generate(b, p, 8) for p in prompts]
    finally:
        with torch.no_grad():
            for p in b.model.parameters():
                p.div_(1.01)


def test_int8_runs_and_reports_itself(tiny_dir: Path) -> None:
    q = backend(tiny_dir, dtype="int8")
    assert q.dtype == "int8" and "int8" in q.describe()
    assert any("quantized.dynamic" in type(m).__module__ for m in q.model.modules())
    out = q.generate(PROMPTS[:2], SamplingParams(max_new_tokens=6), min_new_tokens=6)
    assert [c.completion_tokens for c in out] == [6, 6]


# ---------------------------------------------------------------- red team


def test_hostile_prompts_stop_strings_and_tiny_inputs(tiny_dir: Path) -> None:
    b = backend(tiny_dir, batch_size=2)
    params = SamplingParams(max_new_tokens=8, stop=("verdict", ""))
    prompts = [
        user("verdict verdict </verdict> <verdict>A</verdict>"),  # the stop string inside the prompt
        user(""),  # empty content
        user("x") + [{"role": "assistant", "content": ""}],  # continuing an empty assistant message
        user("\x00\ufffd" * 50 + "🙂" * 30),  # odd bytes, multi-byte characters
    ]
    out = b.generate(prompts, params)
    ref = backend(tiny_dir, batch_size=1, engine="static").generate(prompts, params)
    assert out == ref
    for c in out:
        assert "verdict" not in c.text and c.finish_reason in ("stop", "length")


def test_prompt_too_long_and_tight_token_budget(tiny_dir: Path) -> None:
    b = backend(tiny_dir, batch_size=4, context_length=40, max_batch_tokens=50)
    long_prompt = user(" ".join(["verdict"] * 60))
    out = b.generate([PROMPTS[0], long_prompt, PROMPTS[2]], SamplingParams(max_new_tokens=8))
    assert out[1].finish_reason == "prompt_too_long" and out[1].completion_tokens == 0
    assert [out[0].text, out[2].text] == [plain_generate(b, PROMPTS[0], 8), plain_generate(b, PROMPTS[2], 8)]


# ---------------------------------------------------------------- the embedded model (slow)


@pytest.mark.slow
def test_embedded_pav_greedy_equals_plain_generate_both_orders(embedded_model_dir: Path, shared_data: Path) -> None:
    """Real LLMBar PaV prompts in both orders (the question is a shared prefix): the continuous
    engine with prefix reuse gives exactly plain transformers generate's greedy text."""
    from judgerl.data import load_pairs
    from judgerl.protocols import get_protocol

    pairs = load_pairs(shared_data / "llmbar" / "natural.json", limit=2).pairs
    pav = get_protocol("pav")
    prompts = [pav.build(p.prompt, r) for p in pairs for r in ([p.chosen, p.rejected], [p.rejected, p.chosen])]
    b = HFBackend(str(embedded_model_dir), batch_size=3)
    out = b.generate(prompts, SamplingParams(max_new_tokens=16), min_new_tokens=16)
    assert b.last_stats.reused_tokens > 100  # instructions + the question of the second order
    assert [c.text for c in out] == [plain_generate(b, p, 16, 16) for p in prompts]
