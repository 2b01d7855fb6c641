"""Red team of the continuous engine's decode kernels (judgerl.backends.hf_decode): split / cascade
attention and the blocked LM head must not change greedy or sampled outputs, and the model must be
restored after every call. Tiny random Llama only (seconds)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_backends_hf import PROMPTS, build_tiny_model, user  # noqa: E402
from test_backends_hf_engine import SYSTEM, one_thread, plain_generate  # noqa: E402,F401 (one_thread: autouse)

from judgerl.backends import SamplingParams  # noqa: E402
from judgerl.backends.hf import HFBackend  # noqa: E402
from judgerl.backends.hf_decode import LM_HEAD_BLOCK, SLOT_ATTENTION  # noqa: E402
from judgerl.backends.hf_prefix import shared_prefix_len  # noqa: E402




@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-redteam"))


@pytest.fixture(scope="module")
def big_dir(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Llama with a vocabulary > 2 LM head blocks (added tokens decode as their text)."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    d = tmp_path_factory.mktemp("tiny-bigvocab")
    tok = AutoTokenizer.from_pretrained(str(tiny_dir))
    tok.add_tokens([f"<x{i}>" for i in range(2 * LM_HEAD_BLOCK + 100)])
    tok.save_pretrained(d)
    cfg = LlamaConfig.from_pretrained(str(tiny_dir))
    cfg.vocab_size = len(tok)
    torch.manual_seed(1)
    LlamaForCausalLM(cfg).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def ref(tiny_dir: Path) -> HFBackend:
    return HFBackend(str(tiny_dir), device="cpu", engine="static", batch_size=1)


def mk(d: Path, **kw) -> HFBackend:
    return HFBackend(str(d), device="cpu", **{"batch_size": 3, **kw})


_memo: dict = {}


def expected(r: HFBackend, prompt, n: int, min_new: int = 0) -> str:
    key = (r.name, repr(prompt), n, min_new)
    if key not in _memo:
        _memo[key] = plain_generate(r, prompt, n, min_new)
    return _memo[key]


def assert_restored(b: HFBackend, impl: str = "sdpa") -> None:
    assert b.model.config._attn_implementation == impl
    assert "forward" not in vars(b.model.get_output_embeddings())


P = [SYSTEM, *user("Is 2 + 2 = 4?")]
LONG = user("The verdict is A because the answer is correct and concise. " * 12)
STEM = "Which response is better? Response A answers the question; response B does not. "
SETS = {
    "one": [P],
    "identical": [P, P, P],
    "prefix_of_other": [user(STEM) + [{"role": "assistant", "content": "The verdict"}],
                        user(STEM) + [{"role": "assistant", "content": "The verdict is A because the answer"}]],
    "length_spread": [user("hi"), LONG, user("def add(a, b):"), [SYSTEM, *LONG], user("x")],
    "shared_system": [[SYSTEM, *p] for p in PROMPTS],
    "mixed": PROMPTS + [[SYSTEM, *p] for p in PROMPTS[:3]] + [P, P],
}


# ---------------------------------------------------------------- claim 1: greedy == plain generate


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7])
@pytest.mark.parametrize("name", list(SETS))
def test_greedy_equals_plain_generate(tiny_dir: Path, ref: HFBackend, name: str, batch_size: int) -> None:
    prompts = SETS[name]
    b = mk(tiny_dir, batch_size=batch_size)
    out = b.generate(prompts, SamplingParams(max_new_tokens=10))
    assert [c.text for c in out] == [expected(ref, p, 10) for p in prompts]
    assert_restored(b)
    if name in ("identical", "shared_system"):
        assert b.last_stats.shared_prefix >= 32
    if name == "shared_system" and batch_size > 1:
        assert b.last_stats.shared_steps > 0  # the cascade path really ran


def prompts_sharing(b: HFBackend, k: int) -> list:
    """Three prompts whose token ids share exactly ``k`` leading tokens (diverging at token k)."""
    base = "Think step by step, then give the final answer in a verdict tag. " * 3
    for tails in (("Alpha beta.", "Zulu yankee.", "Alpha gamma delta epsilon."), ("1 2", "9 9", "1 3 5 7")):
        for cut in range(len(base)):
            ps = [user(base[:cut] + t) for t in tails]
            ids = [b.tokenizer(b.render(p), add_special_tokens=False)["input_ids"] for p in ps]
            if shared_prefix_len(ids) == k:
                return ps
    pytest.fail(f"no prompts sharing exactly {k} tokens")


@pytest.mark.parametrize("cache_bytes", [1 << 30, 0])
@pytest.mark.parametrize("k", [31, 32, 33])
def test_shared_prefix_threshold(tiny_dir: Path, ref: HFBackend, k: int, cache_bytes: int) -> None:
    b = mk(tiny_dir, batch_size=3, prefix_cache_bytes=cache_bytes)
    prompts = prompts_sharing(b, k)
    out = b.generate(prompts, SamplingParams(max_new_tokens=10))
    assert [c.text for c in out] == [expected(ref, p, 10) for p in prompts]
    assert b.last_stats.shared_prefix == (k if k >= 32 else 0)
    if k < 32:
        assert b.last_stats.shared_steps == 0
    elif cache_bytes:
        assert b.last_stats.shared_steps > 0  # prefix KV copied from the cache: bitwise equal
    assert_restored(b)


# ---------------------------------------------------------------- rows finishing at different times


FINISH = [(1, 0, ()), (2, 0, ()), (6, 6, ()), (24, 0, ()), (12, 0, ("e",)), (12, 0, (" ", "a")),
          (16, 16, ("verdict", "t"))]


@pytest.mark.parametrize("batch_size", [2, 7])
@pytest.mark.parametrize("max_new,min_new,stop", FINISH)
def test_ragged_finishes_equal_static_and_plain(tiny_dir: Path, ref: HFBackend, max_new: int, min_new: int,
                                                stop: tuple, batch_size: int) -> None:
    prompts = SETS["length_spread"] + SETS["shared_system"]
    params = SamplingParams(max_new_tokens=max_new, stop=stop)
    b = mk(tiny_dir, batch_size=batch_size)
    out = b.generate(prompts, params, min_new_tokens=min_new)
    static = mk(tiny_dir, batch_size=batch_size, engine="static").generate(prompts, params, min_new_tokens=min_new)
    assert out == static
    if not stop:
        assert [c.text for c in out] == [expected(ref, p, max_new, min_new) for p in prompts]
    assert_restored(b)


# ---------------------------------------------------------------- prefix cache budgets and reuse


@pytest.mark.parametrize("cache_bytes", [0, 1, 30_000, 120_000, 1 << 30])
def test_cache_budgets_and_two_successive_calls(tiny_dir: Path, ref: HFBackend, cache_bytes: int) -> None:
    b = mk(tiny_dir, batch_size=2, prefix_cache_bytes=cache_bytes)
    first, second = SETS["mixed"], SETS["shared_system"][::-1] + [P]
    for prompts in (first, second, first):
        out = b.generate(prompts, SamplingParams(max_new_tokens=10))
        assert [c.text for c in out] == [expected(ref, p, 10) for p in prompts]
        assert b.prefix_cache.bytes <= cache_bytes
        assert_restored(b)
    if cache_bytes <= 1:
        assert b.last_stats.reused_tokens == 0
    if cache_bytes == 1 << 30:
        assert b.last_stats.reused_tokens > 0


# ---------------------------------------------------------------- claim 2: sampling independent of the batch


SAMPLING = [(1.0, 1.0), (0.7, 0.9), (1.5, 0.5)]


@pytest.mark.parametrize("temperature,top_p", SAMPLING)
def test_sampled_row_does_not_depend_on_other_rows(tiny_dir: Path, temperature: float, top_p: float) -> None:
    params = SamplingParams(max_new_tokens=12, temperature=temperature, top_p=top_p)
    target, seed = [SYSTEM, *user("Is 3 + 3 = 6?")], 123
    alone = mk(tiny_dir, batch_size=1).generate([target], params, seeds=[seed])[0]
    others = SETS["shared_system"] + [LONG, user("x")]
    for batch_size in (1, 2, 3, 7):
        for pos in (0, 3, len(others)):
            prompts = others[:pos] + [target] + others[pos:]
            seeds = [7 + i for i in range(len(prompts))]
            seeds[pos] = seed
            out = mk(tiny_dir, batch_size=batch_size).generate(prompts, params, seeds=seeds)
            assert out[pos] == alone, (batch_size, pos)
    static = mk(tiny_dir, batch_size=1, engine="static").generate([target], params, seeds=[seed])[0]
    assert alone == static


def test_identical_prompts_same_seed_sample_the_same(tiny_dir: Path) -> None:
    params = SamplingParams(max_new_tokens=12, temperature=1.0)
    b = mk(tiny_dir, batch_size=3)
    out = b.generate([P, P, P, P], params, seeds=[5, 5, 6, 5])
    assert out[0] == out[1] == out[3]
    assert out[0] == mk(tiny_dir, batch_size=1).generate([P], params, seeds=[5])[0]
    assert out[2] == mk(tiny_dir, batch_size=1).generate([P], params, seeds=[6])[0]


# ---------------------------------------------------------------- claim 3: restored after exceptions


class Abort(BaseException):
    pass


@pytest.mark.parametrize("where", ["decode_forward", "decode_base_exception", "on_result_decode",
                                   "on_result_admit"])
def test_restored_after_exception(tiny_dir: Path, ref: HFBackend, where: str) -> None:
    b = mk(tiny_dir, batch_size=2)
    prompts = SETS["shared_system"]
    inner = b.model.model.forward
    exc = Abort if where == "decode_base_exception" else RuntimeError

    def failing(*a, **k):
        if k.get("judgerl_plan") is not None:
            raise exc("boom")
        return inner(*a, **k)

    def on_result(i, c):
        raise RuntimeError("boom")

    max_new = 1 if where == "on_result_admit" else 8
    if where.startswith("decode"):
        b.model.model.forward = failing
    try:
        with pytest.raises(exc, match="boom"):
            b.generate(prompts, SamplingParams(max_new_tokens=max_new),
                       on_result=on_result if where.startswith("on_result") else None)
    finally:
        vars(b.model.model).pop("forward", None)
    assert_restored(b)
    out = b.generate(prompts, SamplingParams(max_new_tokens=10))
    assert [c.text for c in out] == [expected(ref, p, 10) for p in prompts]
    assert b.last_stats.shared_steps > 0
    assert_restored(b)


# ---------------------------------------------------------------- state during the call (spied from on_result)


def spy(b: HFBackend, prompts, max_new: int = 8):
    seen = []

    def on_result(i, c):
        head = b.model.get_output_embeddings()
        seen.append((b.model.config._attn_implementation, "forward" in vars(head)))

    out = b.generate(prompts, SamplingParams(max_new_tokens=max_new), on_result=on_result)
    return out, set(seen)


def test_fp32_sdpa_call_uses_both_kernels(tiny_dir: Path) -> None:
    b = mk(tiny_dir)
    _, seen = spy(b, SETS["shared_system"])
    assert seen == {(SLOT_ATTENTION, True)}
    assert_restored(b)


def test_eager_model_never_takes_the_split_path(tiny_dir: Path, ref: HFBackend) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_dir), attn_implementation="eager").eval()
    b = HFBackend.from_loaded(model, ref.tokenizer, batch_size=3)
    assert b.engine == "continuous"
    prompts = SETS["shared_system"] + [[SYSTEM, *LONG]]
    out, seen = spy(b, prompts, 10)
    assert {impl for impl, _ in seen} == {"eager"}
    assert b.last_stats.shared_prefix >= 32 and b.last_stats.shared_steps == 0
    assert_restored(b, "eager")
    assert [c.text for c in out] == [plain_generate(b, p, 10) for p in prompts]


def test_int8_head_is_not_blocked(tiny_dir: Path) -> None:
    q = mk(tiny_dir, dtype="int8")
    out, seen = spy(q, SETS["shared_system"], 6)
    assert seen == {(SLOT_ATTENTION, False)}  # attention still split, the quantised head left alone
    assert all(c.finish_reason == "stop" or c.completion_tokens == 6 for c in out)
    assert "forward" not in vars(q.model.get_output_embeddings())
    assert q.model.config._attn_implementation == "sdpa"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_cascade_runs(tiny_dir: Path, dtype: str) -> None:
    """Half-precision CPU models (a supported dtype) through the cascade (prefix part merged via
    float32 log-sum-exps): the call must not fail and must keep the model's dtype path intact."""
    b = mk(tiny_dir, dtype=dtype)
    prompts = SETS["shared_system"]
    out = b.generate(prompts, SamplingParams(max_new_tokens=6), min_new_tokens=6)
    assert [c.completion_tokens for c in out] == [6] * len(prompts)
    assert b.last_stats.shared_steps > 0
    assert_restored(b)
    static = mk(tiny_dir, dtype=dtype, engine="static").generate(prompts, SamplingParams(max_new_tokens=6),
                                                                 min_new_tokens=6)
    assert [c.completion_tokens for c in static] == [6] * len(prompts)


# ---------------------------------------------------------------- LM head wider than one block


@pytest.mark.parametrize("batch_size", [1, 2, 7])
def test_big_vocab_blocked_head_greedy_and_sampled(big_dir: Path, batch_size: int) -> None:
    b = mk(big_dir, batch_size=batch_size)
    assert b.model.get_output_embeddings().weight.shape[0] > 2 * LM_HEAD_BLOCK
    prompts = SETS["length_spread"] + SETS["shared_system"]
    out, seen = spy(b, prompts, 10)
    assert (SLOT_ATTENTION, True) in seen
    ref_b = mk(big_dir, batch_size=1, engine="static")
    assert [c.text for c in out] == [expected(ref_b, p, 10) for p in prompts]
    assert any("<x" in c.text for c in out)  # ids past the first blocks were produced
    params = SamplingParams(max_new_tokens=10, temperature=1.0, top_p=0.95)
    seeds = list(range(len(prompts)))
    assert b.generate(prompts, params, seeds=seeds) == ref_b.generate(prompts, params, seeds=seeds)
    assert_restored(b)


# ---------------------------------------------------------------- threads and shared models


def test_two_threads_on_one_backend(tiny_dir: Path, ref: HFBackend) -> None:
    b = mk(tiny_dir, batch_size=2)
    sets = [SETS["shared_system"], SETS["length_spread"][::-1], SETS["mixed"]]
    results: list = [None] * len(sets)
    errors: list = []

    def run(i: int) -> None:
        try:
            results[i] = [c.text for c in b.generate(sets[i], SamplingParams(max_new_tokens=10))]
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(sets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors and all(not t.is_alive() for t in threads)
    for i, prompts in enumerate(sets):
        assert results[i] == [expected(ref, p, 10) for p in prompts]
    assert_restored(b)


def test_preexisting_instance_forward_on_head_survives(tiny_dir: Path, ref: HFBackend) -> None:
    """A wrapper already set as the head's instance ``forward`` (what accelerate's hooks do) must be
    there again after the call."""
    b = mk(tiny_dir)
    head = b.model.get_output_embeddings()
    calls = {"n": 0}

    def wrapper(x):
        calls["n"] += 1
        return type(head).forward(head, x)

    head.forward = wrapper
    try:
        out = b.generate(SETS["shared_system"], SamplingParams(max_new_tokens=6))
        assert [c.text for c in out] == [expected(ref, p, 6) for p in SETS["shared_system"]]
        assert vars(head).get("forward") is wrapper
    finally:
        vars(head).pop("forward", None)


def test_nested_call_on_second_backend_sharing_the_model(tiny_dir: Path, ref: HFBackend) -> None:
    """Two backends over one model (``from_loaded``); the second generates from the first's
    ``on_result`` (the same overlap two threads produce): both correct, model restored."""
    a = mk(tiny_dir, batch_size=2)
    b2 = HFBackend.from_loaded(a.model, a.tokenizer, batch_size=2)
    inner: list = []

    def on_result(i, c):
        if not inner:
            inner.append(b2.generate(SETS["length_spread"], SamplingParams(max_new_tokens=6)))

    out = a.generate(SETS["shared_system"], SamplingParams(max_new_tokens=8), on_result=on_result)
    assert [c.text for c in out] == [expected(ref, p, 8) for p in SETS["shared_system"]]
    assert [c.text for c in inner[0]] == [expected(ref, p, 6) for p in SETS["length_spread"]]
    assert_restored(a)
