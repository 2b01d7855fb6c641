"""The transformers backend: batching, ordering, seeds, stop strings, prefill, token counts.

Fast tests run the real :class:`HFBackend` code on a tiny random Llama (2 layers, hidden 32) with
a byte-level BPE tokenizer built in a temp dir, so they take seconds. Tests marked ``slow`` use
the embedded SmolLM2-135M model (``--runslow``) with at most 16 new tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from judgerl.backends import SamplingParams  # noqa: E402
from judgerl.backends.base import derive_seed, resolve_seeds  # noqa: E402
from judgerl.backends.chat import apply_template, fold_system_prompt, render_chat  # noqa: E402
from judgerl.backends.hf import MIN_SHARED_PREFIX, HFBackend  # noqa: E402
from judgerl.backends.hf_prefix import shared_prefix_len  # noqa: E402
from judgerl.backends.hf_batching import RowSeededSampler, plan_batches  # noqa: E402

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
#: Gemma's template in miniature: no system role, it raises like Gemma's own template does.
NO_SYSTEM = (
    "{% for message in messages %}{% if message['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{{'<start_of_turn>' + message['role'] + '\n' + message['content'] + '<end_of_turn>\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
)
CORPUS = [
    "Which response is better? Response A answers the question; response B does not.",
    "The verdict is A because the answer is correct and concise.",
    "def add(a, b):\n    return a + b\nprint(add(2, 3))",
    "Think step by step, then give the final answer in a verdict tag.",
] * 20


def build_tiny_model(directory: Path) -> Path:
    """Save a tiny random Llama + byte-level BPE tokenizer with a ChatML template to ``directory``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(CORPUS, trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<|im_start|>", eos_token="<|im_end|>", pad_token="<|im_end|>"
    )
    tok.chat_template = CHATML
    tok.save_pretrained(directory)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
        initializer_range=0.3,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The tiny model's ops are so small that a second OpenMP thread only adds sync cost
    (and on a loaded machine, a lot of it); restore the thread count afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def tiny(tiny_dir: Path) -> HFBackend:
    return HFBackend(str(tiny_dir), batch_size=3, device="cpu")


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


PROMPTS = [
    user("Which response is better?"),
    user("The verdict is A because the answer is correct and concise. " * 4),
    user("def add(a, b):"),
    user("Think step by step, then give the final answer in a verdict tag. " * 2),
    user("print(add(2, 3))"),
]


# ---------------------------------------------------------------- pure helpers (no model)


def test_plan_batches_covers_every_index_once_longest_first() -> None:
    lengths = [5, 50, 7, 30, 1, 12, 40]
    batches = plan_batches(lengths, batch_size=3, max_batch_tokens=10_000, max_new_tokens=8)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)
    assert [len(b) for b in batches] == [3, 3, 1]


def test_plan_batches_token_budget_bounds_rows_and_keeps_oversized_prompt_alone() -> None:
    lengths = [1000, 100, 100, 100, 100, 10, 10]
    batches = plan_batches(lengths, batch_size=16, max_batch_tokens=500, max_new_tokens=20)
    assert batches[0] == [0]  # 1020 positions > budget, but it still runs, alone
    for b in batches:
        if len(b) > 1:
            assert len(b) * (max(lengths[i] for i in b) + 20) <= 500
    assert sorted(i for b in batches for i in b) == list(range(7))


def testshared_prefix_len() -> None:
    assert shared_prefix_len([[1, 2, 3], [1, 2, 4], [1, 2]]) == 2
    assert shared_prefix_len([[1, 2], [1, 2]]) == 2
    assert shared_prefix_len([[1], [2]]) == 0
    assert shared_prefix_len([]) == 0


def test_plan_batches_empty() -> None:
    assert plan_batches([], batch_size=4, max_batch_tokens=100, max_new_tokens=4) == []


def test_derived_seeds_depend_on_their_parts_only() -> None:
    assert derive_seed(1, "pair-3", "AB", 0) == derive_seed(1, "pair-3", "AB", 0)
    assert len({derive_seed(1, "p", 0), derive_seed(2, "p", 0), derive_seed(1, "q", 0), derive_seed(1, "p", 1)}) == 4
    assert 0 <= derive_seed("x") < 2**63
    greedy = SamplingParams(temperature=0.0)
    assert resolve_seeds(["a", "b"], greedy, None) is None
    sampled = SamplingParams(temperature=0.7, seed=3)
    assert resolve_seeds(["a", "b"], sampled, [5, 6]) == [5, 6]
    auto = resolve_seeds(["a", "a", "b"], sampled, None)
    assert auto == resolve_seeds(["a", "a", "b"], sampled, None) and len(set(auto)) == 3
    with pytest.raises(ValueError, match="2 seeds for 3 prompts"):
        resolve_seeds(["a", "b", "c"], sampled, [1, 2])
    with pytest.raises(ValueError, match=r"seeds\[0\]"):
        resolve_seeds(["a"], sampled, [-1])


def test_row_seeded_sampler_returns_one_hot_and_respects_top_p() -> None:
    scores = torch.tensor([[10.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    gens = [torch.Generator().manual_seed(s) for s in (1, 2)]
    out = RowSeededSampler(gens, temperature=1.0, top_p=0.5)(None, scores)
    assert out.shape == scores.shape
    assert (out == 0).sum(dim=1).tolist() == [1, 1]
    assert torch.isinf(out).sum().item() == 6
    assert out[0].argmax().item() == 0  # p(token 0) > 0.99 > top_p: only token 0 survives


def test_row_seeded_sampler_rows_are_independent() -> None:
    scores = torch.zeros(3, 50)
    first = RowSeededSampler([torch.Generator().manual_seed(s) for s in (7, 8, 9)], 1.0, 1.0)(None, scores)
    alone = RowSeededSampler([torch.Generator().manual_seed(8)], 1.0, 1.0)(None, scores[:1])
    assert first[1].argmax() == alone[0].argmax()


def test_row_seeded_sampler_rejects_greedy_and_row_mismatch() -> None:
    with pytest.raises(ValueError, match="temperature"):
        RowSeededSampler([], temperature=0.0, top_p=1.0)
    with pytest.raises(ValueError, match="2 rows but 1 generators"):
        RowSeededSampler([torch.Generator()], 1.0, 1.0)(None, torch.zeros(2, 5))


# ---------------------------------------------------------------- rendering


def test_render_chat_opens_a_new_assistant_turn(tiny: HFBackend) -> None:
    text = tiny.render(user("hi"))
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_render_chat_continues_a_trailing_assistant_message(tiny: HFBackend) -> None:
    text = tiny.render(user("hi") + [{"role": "assistant", "content": "<think>I will"}])
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>I will"
    assert not text.endswith("<|im_end|>\n")


def test_render_chat_without_template_and_bad_message() -> None:
    class NoTemplate:
        chat_template = None

    text = render_chat(NoTemplate(), [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}])
    assert text == "user: x\n\nassistant: y"
    with pytest.raises(ValueError, match="message 1 needs 'role' and 'content'"):
        render_chat(NoTemplate(), [{"role": "user", "content": "x"}, {"text": "y"}])


def _no_system_tokenizer():
    """A local tokenizer (no hub) whose chat template raises on a system message."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>")),
                                  unk_token="<unk>")
    tok.chat_template = NO_SYSTEM
    return tok


def test_template_without_system_role_gets_the_system_prompt_in_the_first_user_turn() -> None:
    """Issue 22: a Gemma-style template raised TemplateError and `judgerl eval` exited 1."""
    from jinja2 import TemplateError

    tok = _no_system_tokenizer()
    msgs = [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Which is better?"}]
    with pytest.raises(TemplateError, match="System role not supported"):
        tok.apply_chat_template(msgs, tokenize=False)
    text = render_chat(tok, msgs + [{"role": "assistant", "content": "<think>"}])
    assert text == "<start_of_turn>user\nYou are a judge.\n\nWhich is better?<end_of_turn>\n<start_of_turn>model\n<think>"
    assert render_chat(tok, msgs[1:]) == "<start_of_turn>user\nWhich is better?<end_of_turn>\n<start_of_turn>model\n"
    # A template error with no system message to fold is the template's own: it propagates.
    tok.chat_template = "{{ raise_exception('broken template') }}"
    with pytest.raises(TemplateError, match="broken template"):
        apply_template(tok, msgs[1:], tokenize=False)


def test_fold_system_prompt_rows() -> None:
    sys_ = {"role": "system", "content": "S"}
    assert fold_system_prompt([sys_, {"role": "user", "content": "u"}]) == [{"role": "user", "content": "S\n\nu"}]
    assert fold_system_prompt([sys_, sys_, {"role": "user", "content": "u"}, {"role": "user", "content": "v"}]) == [
        {"role": "user", "content": "S\n\nS\n\nu"}, {"role": "user", "content": "v"}]
    assert fold_system_prompt([sys_, {"role": "assistant", "content": "a"}]) == [
        {"role": "user", "content": "S"}, {"role": "assistant", "content": "a"}]
    assert fold_system_prompt([{"role": "user", "content": "u"}]) == [{"role": "user", "content": "u"}]


def test_hf_backend_generates_with_a_template_without_system_role(tiny_dir: Path, tmp_path: Path) -> None:
    import shutil

    from transformers import AutoTokenizer

    gemma_like = tmp_path / "no-system"
    shutil.copytree(tiny_dir, gemma_like)
    tok = AutoTokenizer.from_pretrained(gemma_like)
    tok.chat_template = NO_SYSTEM
    tok.save_pretrained(gemma_like)
    backend = HFBackend(str(gemma_like), batch_size=2, device="cpu")
    prompt = [{"role": "system", "content": "Judge."}, {"role": "user", "content": "Which response is better?"}]
    [out] = backend.generate([prompt], SamplingParams(max_new_tokens=3, temperature=0.0))
    assert out.finish_reason in ("stop", "length") and out.prompt_tokens > 0


# ---------------------------------------------------------------- generation on the tiny model


def test_constructor_validates_arguments(tiny_dir: Path) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        HFBackend(str(tiny_dir), batch_size=0)
    with pytest.raises(ValueError, match="max_batch_tokens"):
        HFBackend(str(tiny_dir), max_batch_tokens=0)
    with pytest.raises(ValueError, match="unknown dtype 'float8'"):
        HFBackend(str(tiny_dir), dtype="float8")


def test_empty_prompt_list(tiny: HFBackend) -> None:
    assert tiny.generate([], SamplingParams(max_new_tokens=4)) == []


def test_greedy_is_deterministic_and_order_preserved_after_length_sort(tiny_dir: Path, tiny: HFBackend) -> None:
    params = SamplingParams(max_new_tokens=12)
    batched = tiny.generate(PROMPTS, params)
    assert batched == tiny.generate(PROMPTS, params)
    single = HFBackend(str(tiny_dir), batch_size=1, device="cpu")
    one_by_one = [single.generate([p], params)[0] for p in PROMPTS]
    assert [c.text for c in batched] == [c.text for c in one_by_one]
    assert [c.prompt_tokens for c in batched] == [c.prompt_tokens for c in one_by_one]


def test_static_and_dynamic_cache_and_padded_prefill_agree(tiny_dir: Path, tiny: HFBackend) -> None:
    # the static engine's variants (dynamic cache, padded prefill) against the continuous engine
    dynamic = HFBackend(str(tiny_dir), batch_size=3, device="cpu", static_cache=False, engine="static")
    padded = HFBackend(str(tiny_dir), batch_size=3, device="cpu", row_prefill=False, engine="static")
    params = SamplingParams(max_new_tokens=10)
    assert tiny.engine == "continuous" and dynamic.engine == "static"
    expected = [c.text for c in tiny.generate(PROMPTS, params)]
    assert [c.text for c in dynamic.generate(PROMPTS, params)] == expected
    assert [c.text for c in padded.generate(PROMPTS, params)] == expected


def test_shared_prefix_reuse_matches_padded_and_single(tiny_dir: Path, tiny: HFBackend) -> None:
    system = {"role": "system", "content": "Think step by step, then give the final answer in a verdict tag. " * 3}
    prompts = [[system, *p] for p in PROMPTS]
    texts = [tiny.render(p) for p in prompts]
    ids = [tiny.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    assert shared_prefix_len(ids) >= MIN_SHARED_PREFIX  # the shared-prefix path really runs
    params = SamplingParams(max_new_tokens=8)
    expected = [c.text for c in HFBackend(str(tiny_dir), batch_size=1, device="cpu").generate(prompts, params)]
    assert [c.text for c in tiny.generate(prompts, params)] == expected
    padded = HFBackend(str(tiny_dir), batch_size=3, device="cpu", row_prefill=False, engine="static")
    assert [c.text for c in padded.generate(prompts, params)] == expected
    shared = HFBackend(str(tiny_dir), batch_size=3, device="cpu", engine="static")
    assert [c.text for c in shared.generate(prompts, params)] == expected


def test_token_counts_and_length_finish(tiny: HFBackend) -> None:
    out = tiny.generate(PROMPTS, SamplingParams(max_new_tokens=7), min_new_tokens=7)
    for prompt, c in zip(PROMPTS, out):
        expected_prompt = len(tiny.tokenizer(tiny.render(prompt), add_special_tokens=False)["input_ids"])
        assert c.prompt_tokens == expected_prompt
        assert c.completion_tokens == 7
        assert c.finish_reason == "length"


def test_prefill_continuation_counts_the_prefix_as_prompt(tiny: HFBackend) -> None:
    prefix = "<think>The verdict is"
    plain, cont = tiny.generate(
        [user("Which response is better?"), user("Which response is better?") + [{"role": "assistant", "content": prefix}]],
        SamplingParams(max_new_tokens=5),
        min_new_tokens=5,
    )
    n_prefix = len(tiny.tokenizer(prefix, add_special_tokens=False)["input_ids"])
    assert cont.prompt_tokens == plain.prompt_tokens + n_prefix
    assert not cont.text.startswith(prefix)  # only the continuation comes back


def test_eos_cutting_and_finish_reason(tiny: HFBackend) -> None:
    eos = tiny.tokenizer.eos_token_id
    ids = tiny.tokenizer("The verdict is A", add_special_tokens=False)["input_ids"]
    c = tiny._completion(ids + [eos, eos, eos], 11, ())
    assert (c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason) == ("The verdict is A", 11, len(ids), "stop")
    c = tiny._completion(ids, 11, ())
    assert (c.completion_tokens, c.finish_reason) == (len(ids), "length")


def test_stop_string_cuts_text_and_sets_finish_reason(tiny: HFBackend) -> None:
    params = SamplingParams(max_new_tokens=24)
    base = tiny.generate(PROMPTS[:3], params, min_new_tokens=24)
    stops = []
    for c in base:
        # a short ASCII-letter substring from the middle of the greedy output
        k = next((i for i in range(len(c.text) // 3, len(c.text) - 1) if c.text[i : i + 2].isalpha()), None)
        stops.append(c.text[k : k + 2] if k is not None else None)
    for prompt, c, stop in zip(PROMPTS[:3], base, stops):
        if stop is None:
            continue
        got = tiny.generate([prompt], SamplingParams(max_new_tokens=24, stop=(stop,)), min_new_tokens=24)[0]
        assert got.text == c.text[: c.text.find(stop)]
        assert got.finish_reason == "stop"
        assert got.completion_tokens <= c.completion_tokens
    assert any(s is not None for s in stops)


def test_seeded_sampling_is_reproducible_per_prompt_whatever_the_batch(tiny: HFBackend) -> None:
    params = SamplingParams(max_new_tokens=10, temperature=1.0, seed=123)
    full = tiny.generate(PROMPTS, params)
    assert full == tiny.generate(PROMPTS, params)
    # a different batch composition and order: the same prompt gives the same sample
    subset = tiny.generate([PROMPTS[3], PROMPTS[0]], params)
    assert [c.text for c in subset] == [full[3].text, full[0].text]
    other_seed = tiny.generate(PROMPTS, SamplingParams(max_new_tokens=10, temperature=1.0, seed=124))
    assert [c.text for c in other_seed] != [c.text for c in full]


def test_repeated_prompt_gets_distinct_samples(tiny: HFBackend) -> None:
    params = SamplingParams(max_new_tokens=10, temperature=1.0, seed=5)
    out = tiny.generate([PROMPTS[0]] * 4, params)
    assert len({c.text for c in out}) > 1
    assert out[0] == tiny.generate([PROMPTS[0]], params)[0]


def test_top_p_tiny_mass_is_greedy(tiny: HFBackend) -> None:
    greedy = tiny.generate(PROMPTS[:2], SamplingParams(max_new_tokens=8), min_new_tokens=8)
    nucleus = tiny.generate(
        PROMPTS[:2], SamplingParams(max_new_tokens=8, temperature=1.0, top_p=1e-6, seed=1), min_new_tokens=8
    )
    assert [c.text for c in nucleus] == [c.text for c in greedy]


def test_explicit_per_prompt_seeds_make_rows_independent_of_batch(tiny_dir: Path, tiny: HFBackend) -> None:
    params = SamplingParams(max_new_tokens=10, temperature=1.0)
    seeds = [11 + i for i in range(len(PROMPTS))]
    full = tiny.generate(PROMPTS, params, seeds=seeds)
    one = HFBackend(str(tiny_dir), batch_size=1, device="cpu")
    assert [c.text for c in one.generate(PROMPTS, params, seeds=seeds)] == [c.text for c in full]
    # the same prompt with the same seed, alone: the same text
    assert tiny.generate([PROMPTS[1]], params, seeds=[seeds[1]])[0].text == full[1].text


def test_on_result_reports_every_row_once_with_the_returned_completion(tiny: HFBackend) -> None:
    seen: dict[int, object] = {}

    def record(i: int, c: object) -> None:
        assert i not in seen
        seen[i] = c

    out = tiny.generate(PROMPTS, SamplingParams(max_new_tokens=12), on_result=record)
    assert [seen[i] for i in range(len(PROMPTS))] == out


def test_prompt_too_long_is_refused_not_generated(tiny_dir: Path) -> None:
    small = HFBackend(str(tiny_dir), batch_size=4, device="cpu", context_length=40)
    long_prompt = [{"role": "user", "content": " ".join(["verdict"] * 60)}]
    out = small.generate([PROMPTS[0], long_prompt], SamplingParams(max_new_tokens=8))
    assert out[0].finish_reason in ("stop", "length")
    bad = out[1]
    assert bad.finish_reason == "prompt_too_long" and bad.text == "" and bad.completion_tokens == 0
    assert f"+ max_new_tokens 8 = {bad.prompt_tokens + 8} > context 40" in bad.error


def test_small_token_budget_still_generates_everything(tiny_dir: Path, tiny: HFBackend) -> None:
    tight = HFBackend(str(tiny_dir), batch_size=8, device="cpu", max_batch_tokens=64)
    params = SamplingParams(max_new_tokens=6)
    assert [c.text for c in tight.generate(PROMPTS, params)] == [c.text for c in tiny.generate(PROMPTS, params)]


# ---------------------------------------------------------------- the embedded model (slow)


@pytest.mark.slow
def test_embedded_greedy_batched_equals_one_at_a_time(embedded_backend: HFBackend) -> None:
    prompts = [user("What is 2 + 2?"), user("Name a primary colour."), user("Say hello in French.")]
    params = SamplingParams(max_new_tokens=12)
    batched = embedded_backend.generate(prompts, params)
    assert batched == embedded_backend.generate(prompts, params)
    single = [embedded_backend.generate([p], params)[0] for p in prompts]
    assert [c.text for c in batched] == [c.text for c in single]
    assert all(c.completion_tokens <= 12 and c.text for c in batched)


@pytest.mark.slow
def test_embedded_seeded_sampling_and_stop(embedded_backend: HFBackend) -> None:
    prompts = [user("Count from 1 to 20, separated by commas."), user("Write a haiku about rain.")]
    params = SamplingParams(max_new_tokens=12, temperature=0.8, seed=7)
    first = embedded_backend.generate(prompts, params)
    assert embedded_backend.generate(prompts[::-1], params)[::-1] == first
    full = embedded_backend.generate(prompts[:1], SamplingParams(max_new_tokens=16))[0]
    assert "3" in full.text  # greedy: "1. 1\n2. 2\n3. 3\n4"
    stopped = embedded_backend.generate(prompts[:1], SamplingParams(max_new_tokens=16, stop=("3",)))[0]
    assert stopped.text == full.text[: full.text.find("3")]
    assert stopped.completion_tokens < full.completion_tokens
    assert stopped.finish_reason == "stop"
    assert stopped.text.startswith("1")


@pytest.mark.slow
def test_embedded_prefill_continues_the_assistant_message(embedded_backend: HFBackend) -> None:
    prompt = user("Which is larger, 3 or 7? Answer inside <verdict></verdict>.")
    out = embedded_backend.generate([prompt + [{"role": "assistant", "content": "<verdict>"}]], SamplingParams(max_new_tokens=6))[0]
    assert out.text and not out.text.startswith("<verdict>")
