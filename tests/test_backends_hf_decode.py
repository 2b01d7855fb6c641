"""Decode-step kernels of the continuous engine (judgerl.backends.hf_decode, issue 13): the chunk
planner, split (bucketed + shared-prefix) attention against one sdpa call, the shared-prefix check
of the slot cache, and the blocked LM head."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_backends_hf import build_tiny_model  # noqa: E402
from test_backends_hf_engine import SYSTEM, plain_generate, user  # noqa: E402

from judgerl.backends import SamplingParams  # noqa: E402
from judgerl.backends.hf import HFBackend  # noqa: E402
from judgerl.backends.hf_decode import (  # noqa: E402
    LM_HEAD_BLOCK,
    SLOT_ATTENTION,
    DecodePlan,
    chunked_lm_head,
    plan_chunks,
    slot_attention,
    slot_attention_for,
)
from judgerl.backends.hf_engine import SlotKV  # noqa: E402


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-decode"))


# ---------------------------------------------------------------- planner


def _cost(chunks, lengths, shared, overhead):
    return sum(overhead + (e - s) * (w - shared) for s, e, w in chunks)


@pytest.mark.parametrize("seed", range(6))
def test_plan_chunks_covers_rows_and_is_optimal(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 7)
    lengths = [rng.randint(40, 900) for _ in range(n)]
    shared = rng.choice([0, 39])
    column_bytes = 1536
    chunks = plan_chunks(lengths, shared, column_bytes)
    assert [c[0] for c in chunks][0] == 0 and chunks[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    assert all(w == max(lengths[s:e]) + 1 for s, e, w in chunks)
    overhead = 256 * 1024 / column_bytes
    best = min(  # brute force over every set of cut points
        _cost([(s, e, max(lengths[s:e]) + 1) for s, e in zip((0,) + cuts, cuts + (n,))], lengths, shared, overhead)
        for k in range(n) for cuts in itertools.combinations(range(1, n), k))
    assert _cost(chunks, lengths, shared, overhead) == pytest.approx(best)


def test_plan_chunks_edge_cases() -> None:
    assert plan_chunks([], 0, 1536) == []
    assert plan_chunks([5, 5, 5], 0, 1536) == [(0, 3, 6)]  # equal lengths: one call
    # far apart lengths split; a zero column size does not divide by zero
    assert len(plan_chunks([4000, 4000, 10, 10], 0, 1536)) == 2
    assert plan_chunks([7], 3, 0) == [(0, 1, 8)]


# ---------------------------------------------------------------- split attention vs one sdpa call


class _Module:
    num_key_value_groups = 3
    is_causal = True
    layer_idx = 0
    training = False


def _reference(q, k, v, mask, scale):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    return sdpa_attention_forward(_Module(), q, k, v, mask, scaling=scale)[0]


@pytest.mark.parametrize("shared", [0, 17])
def test_split_attention_equals_one_sdpa_call(shared: int) -> None:
    g = torch.Generator().manual_seed(1)
    rows, kv_heads, groups, dim, capacity = 6, 2, 3, 8, 64
    lengths = [50, 20, 49, 33, 18, 60]
    keys = torch.randn(rows, kv_heads, capacity, dim, generator=g)
    values = torch.randn(rows, kv_heads, capacity, dim, generator=g)
    keys[:, :, :shared] = keys[:1, :, :shared]  # the shared prefix holds equal KV in every row
    values[:, :, :shared] = values[:1, :, :shared]
    width = max(lengths) + 1
    q = torch.randn(rows, kv_heads * groups, 1, dim, generator=g)
    pos = torch.tensor(lengths)
    mask = (torch.arange(width)[None, :] <= pos[:, None])[:, None, None, :]
    k, v = keys[:, :, :width], values[:, :, :width]
    additive = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    for chunks in (plan_chunks(lengths, shared, 64), [(0, rows, width)], [(i, i + 1, lengths[i] + 1) for i in range(rows)]):
        plan = DecodePlan(chunks, shared, additive)
        out, _ = slot_attention(_Module(), q, k, v, mask, scaling=dim**-0.5, judgerl_plan=plan)
        ref = _reference(q, k, v, mask, dim**-0.5)
        assert out.shape == ref.shape == (rows, 1, kv_heads * groups, dim)
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)


def test_no_plan_is_exactly_sdpa() -> None:
    g = torch.Generator().manual_seed(2)
    q, k, v = torch.randn(2, 6, 5, 8, generator=g), torch.randn(2, 2, 5, 8, generator=g), torch.randn(2, 2, 5, 8, generator=g)
    out, _ = slot_attention(_Module(), q, k, v, None, scaling=0.3)
    assert torch.equal(out, _reference(q, k, v, None, 0.3))


# ---------------------------------------------------------------- slot cache: shared-prefix check


def _kv(n, fill):
    return [(torch.full((1, 2, n, 4), fill), torch.full((1, 2, n, 4), -fill)) for _ in range(2)]


class _Cfg:
    num_attention_heads = 2
    num_key_value_heads = 2
    head_dim = 4
    hidden_size = 8
    num_hidden_layers = 2


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.config = _Cfg()
        self.w = torch.nn.Parameter(torch.zeros(1))


def test_slot_cache_uses_the_shared_prefix_only_when_every_row_holds_equal_kv() -> None:
    cache = SlotKV(_Model(), slots=3, capacity=16, shared=4)
    cache.put(0, _kv(6, 1.0), 6, active=0)
    cache.put(1, _kv(8, 1.0), 8, active=1)
    _, mask = cache.prepare(2, "cpu")
    assert cache.plan(2, mask).shared == 4
    cache.put(2, _kv(5, 2.0), 5, active=2)  # same tokens, different KV (e.g. recomputed): not shared
    _, mask = cache.prepare(3, "cpu")
    plan = cache.plan(3, mask)
    assert plan.shared == 0 and plan.chunks[0][0] == 0 and plan.chunks[-1][1] == 3
    cache.move(2, 0)  # the odd row moves into slot 0; its flag travels with it
    _, mask = cache.prepare(2, "cpu")
    assert cache.plan(2, mask).shared == 0
    assert cache.plan(2, mask).mask.dtype == torch.float32
    assert bool(torch.isinf(cache.plan(2, mask).mask).any())
    # a row admitted when no verified row is active becomes the reference
    fresh = SlotKV(_Model(), slots=2, capacity=16, shared=4)
    fresh.put(0, _kv(5, 3.0), 5, active=0)
    _, mask = fresh.prepare(1, "cpu")
    assert fresh.plan(1, mask).shared == 4


# ---------------------------------------------------------------- engine: split path on a model


def test_split_attention_is_selected_for_the_call_and_restored(tiny_dir: Path) -> None:
    b = HFBackend(str(tiny_dir), device="cpu", batch_size=3)
    assert b.model.config._attn_implementation == "sdpa" and "split decode attention" in b.describe()
    with slot_attention_for(b.model) as on:
        assert on and b.model.config._attn_implementation == SLOT_ATTENTION
    assert b.model.config._attn_implementation == "sdpa"
    prompts = [[SYSTEM, *user(f"Is {i} + {i} = {2 * i}? Say yes or no." * (1 + i % 3))] for i in range(5)]
    outs = b.generate(prompts, SamplingParams(max_new_tokens=12))
    assert b.model.config._attn_implementation == "sdpa"
    assert b.last_stats.shared_prefix >= 32 and b.last_stats.shared_steps > 0  # the cascade really ran
    assert [o.text for o in outs] == [plain_generate(b, p, 12) for p in prompts]


def test_eager_model_keeps_its_attention(tiny_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_dir), attn_implementation="eager")
    with slot_attention_for(model) as on:
        assert not on and model.config._attn_implementation == "eager"


# ---------------------------------------------------------------- blocked LM head


def test_blocked_lm_head_is_bitwise_equal_and_restored() -> None:
    head = torch.nn.Linear(16, 2 * LM_HEAD_BLOCK + 37, bias=False)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm_head = head

        def get_output_embeddings(self):
            return self.lm_head

    m = M()
    g = torch.Generator().manual_seed(3)
    for shape in ((1, 1, 16), (5, 1, 16), (3, 4, 16)):
        x = torch.randn(*shape, generator=g)
        ref = head(x)
        with torch.inference_mode(), chunked_lm_head(m) as on:
            assert on
            out = m.lm_head(x)
        assert out.shape == ref.shape and torch.equal(out, ref)
    assert "forward" not in vars(head)  # restored: the class method again
    biased = torch.nn.Linear(16, LM_HEAD_BLOCK + 5)
    m.lm_head = biased
    x = torch.randn(4, 16, generator=g)
    with torch.no_grad(), chunked_lm_head(m):
        out = m.lm_head(x)
    torch.testing.assert_close(out, biased(x), rtol=0, atol=1e-6)
    with chunked_lm_head(m):  # grad enabled and the weight trains: plain F.linear, autograd intact
        out = m.lm_head(x)
        out.sum().backward()
    assert biased.weight.grad is not None


def test_blocked_lm_head_leaves_other_heads_alone() -> None:
    class M(torch.nn.Module):
        def __init__(self, head):
            super().__init__()
            self.lm_head = head

        def get_output_embeddings(self):
            return self.lm_head

    seq = torch.nn.Sequential(torch.nn.Linear(4, 4))
    with chunked_lm_head(M(seq)) as on:
        assert not on
    with chunked_lm_head(torch.nn.Module()) as on:  # no get_output_embeddings -> nn.Module has none
        assert not on


def test_model_is_restored_when_a_decode_step_raises(tiny_dir: Path) -> None:
    b = HFBackend(str(tiny_dir), device="cpu", batch_size=2)
    inner = b.model.model.forward
    calls = {"n": 0}

    def failing(*a, **k):
        calls["n"] += 1
        if k.get("judgerl_plan") is not None:  # the first decode step
            raise RuntimeError("boom")
        return inner(*a, **k)

    b.model.model.forward = failing
    try:
        with pytest.raises(RuntimeError, match="boom"):
            b.generate([[SYSTEM, *user("Is 2 + 2 = 4?")]], SamplingParams(max_new_tokens=4))
    finally:
        del b.model.model.forward
    assert calls["n"] >= 2  # prefill ran, then the decode step raised
    assert b.model.config._attn_implementation == "sdpa"
    assert "forward" not in vars(b.model.get_output_embeddings())
    prompt = [SYSTEM, *user("Is 2 + 2 = 4?")]
    assert b.generate([prompt], SamplingParams(max_new_tokens=4))[0].text == plain_generate(b, prompt, 4)


def test_overlapping_calls_on_one_model_restore_only_when_the_last_leaves(tiny_dir: Path) -> None:
    """Two backends over one model whose calls overlap out of order (thread A enters, B enters,
    A leaves, B leaves): the model keeps the split attention and the blocked head until B leaves."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_dir))
    head = model.get_output_embeddings()
    a, b = slot_attention_for(model), slot_attention_for(model)
    ha, hb = chunked_lm_head(model), chunked_lm_head(model)
    assert a.__enter__() and ha.__enter__()
    assert b.__enter__() and hb.__enter__()
    a.__exit__(None, None, None)
    ha.__exit__(None, None, None)
    assert model.config._attn_implementation == SLOT_ATTENTION and "forward" in vars(head)
    b.__exit__(None, None, None)
    hb.__exit__(None, None, None)
    assert model.config._attn_implementation == "sdpa" and "forward" not in vars(head)


def test_half_precision_split_attention_keeps_the_dtype() -> None:
    g = torch.Generator().manual_seed(4)
    q = torch.randn(3, 6, 1, 8, generator=g).to(torch.bfloat16)
    k = torch.randn(3, 2, 20, 8, generator=g).to(torch.bfloat16)
    v = torch.randn(3, 2, 20, 8, generator=g).to(torch.bfloat16)
    k[:, :, :4], v[:, :, :4] = k[:1, :, :4].clone(), v[:1, :, :4].clone()  # the shared columns
    lengths = [19, 12, 15]
    mask = (torch.arange(20)[None, :] <= torch.tensor(lengths)[:, None])[:, None, None, :]
    additive = torch.zeros(mask.shape, dtype=torch.bfloat16).masked_fill(~mask, float("-inf"))
    out, _ = slot_attention(_Module(), q, k, v, mask, scaling=8**-0.5,
                            judgerl_plan=DecodePlan(plan_chunks(lengths, 4, 64), 4, additive))
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), _reference(q, k, v, mask, 8**-0.5).float(), rtol=2e-2, atol=2e-2)
