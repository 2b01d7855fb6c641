"""Chat markup from the policy's own tokenizer (issue 26): Gemma, Mistral, Phi-3, DeepSeek-R1, ChatML and
Llama-3 policies leave no template markers in what the judge reads. Tokenizers are built locally from the
chat templates in tests/fixtures/chat_templates (no hub)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from judgerl.backends import ScriptedBackend
from judgerl.serve.app import ServeConfig, create_app
from judgerl.serve.chat_markup import KNOWN_MARKUPS, load_policy_markup, markup_from_tokenizer
from judgerl.serve.compat import split_query

TEMPLATES = json.loads((Path(__file__).parent / "fixtures" / "chat_templates" / "templates.json").read_text("utf-8"))
QUESTION = "What is 17 * 3? Answer briefly."
ANSWER = "17 * 3 = 51.\n\nSo the answer is **51**."


def make_tokenizer(family: str):
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    spec = TEMPLATES[family]
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]")),
                                  bos_token=spec["bos_token"], eos_token=spec["eos_token"], unk_token="[UNK]")
    tok.chat_template = spec["chat_template"]
    return tok


def openrlhf_texts(tok, history: bool = False) -> tuple[str, str]:
    """(prompt, query) as OpenRLHF builds them: the templated prompt, and it + response + eos."""
    messages = [{"role": "user", "content": QUESTION}]
    if history:
        messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}] + messages
    prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return prompt, prompt + ANSWER + tok.eos_token


@pytest.mark.parametrize("family", sorted(TEMPLATES))
@pytest.mark.parametrize("history", [False, True])
def test_markup_derived_from_the_policy_tokenizer_strips_every_family(family, history):
    tok = make_tokenizer(family)
    markup = markup_from_tokenizer(tok)
    prompt, query = openrlhf_texts(tok, history)
    instruction, response = split_query(query, prompt, markup.end_tokens, (markup,))
    assert instruction == QUESTION
    assert response == ANSWER


@pytest.mark.parametrize("family", sorted(TEMPLATES))
def test_known_markups_are_the_fallback_without_a_tokenizer(family):
    prompt, query = openrlhf_texts(make_tokenizer(family), history=True)
    instruction, response = split_query(query, prompt)
    assert (instruction, response) == (QUESTION, ANSWER)


def test_a_policy_tokenizer_directory_and_its_errors(tmp_path):
    make_tokenizer("gemma").save_pretrained(tmp_path / "gemma")
    markup = load_policy_markup(tmp_path / "gemma")
    assert markup.user_start.strip() == "<start_of_turn>user" and "<end_of_turn>" in markup.end_tokens
    with pytest.raises(ValueError, match="not a directory"):
        load_policy_markup(tmp_path / "missing")
    plain = make_tokenizer("chatml")
    plain.chat_template = None
    with pytest.raises(ValueError, match="no chat template"):
        markup_from_tokenizer(plain)


def test_get_reward_with_a_gemma_policy_markup_judges_plain_text():
    """Through the server: the judge's prompt holds neither Gemma's markers nor its end-of-turn token."""
    seen: list[str] = []

    def judge(messages, params):
        seen.append(messages[-1]["content"])
        return "<score>8</score>"

    tok = make_tokenizer("gemma")
    markup = markup_from_tokenizer(tok)
    config = ServeConfig(chat_markups=(markup,), strip_tokens=markup.end_tokens)
    prompt, query = openrlhf_texts(tok, history=True)
    with TestClient(create_app(ScriptedBackend(judge), "pos", config=config)) as c:
        body = c.post("/get_reward", json={"query": [query], "prompts": [prompt], "labels": [""]}).json()
    assert body["rewards"] == [pytest.approx(0.8)] and body["reasons"] == [None]
    assert QUESTION in seen[0] and ANSWER in seen[0]
    assert "<start_of_turn>" not in seen[0] and "<end_of_turn>" not in seen[0] and "<eos>" not in seen[0]


def test_known_markups_cover_the_named_families():
    assert {m.name for m in KNOWN_MARKUPS} >= {"chatml", "llama-3", "gemma", "mistral", "phi-3", "deepseek-r1"}


SYSTEM = "You are a terse math tutor. Answer in one line."


def system_texts(tok) -> tuple[str, str]:
    """(prompt, query) of an OpenRLHF sample whose conversation opens with a system prompt."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return prompt, prompt + ANSWER + tok.eos_token


#: Families whose fixture template gives the system prompt a turn of its own (gemma and mistral refuse one).
SYSTEM_FAMILIES = ["chatml", "deepseek-r1", "llama-3", "phi-3"]


@pytest.mark.parametrize("family", SYSTEM_FAMILIES)
@pytest.mark.parametrize("derived", [True, False])
def test_openrlhf_system_prompt_is_kept(family, derived):
    """The judge reads the system prompt with the last user turn, from the policy's tokenizer markup and from
    the known families alike; a prompt without one reads as before."""
    tok = make_tokenizer(family)
    markups = (markup_from_tokenizer(tok),) if derived else KNOWN_MARKUPS
    prompt, query = system_texts(tok)
    instruction, response = split_query(query, prompt, markups=markups)
    assert instruction == f"System: {SYSTEM}\n\nUser: {QUESTION}" and response == ANSWER
    prompt, query = openrlhf_texts(tok)
    assert split_query(query, prompt, markups=markups)[0] == QUESTION


def test_llama31_date_header_is_not_a_system_prompt():
    date = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
    head = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
    user = f"<|start_header_id|>user<|end_header_id|>\n\n{QUESTION}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    assert split_query(head + date + "<|eot_id|>" + user + ANSWER, head + date + "<|eot_id|>" + user)[0] == QUESTION
    kept = split_query(head + date + SYSTEM + "<|eot_id|>" + user + ANSWER, head + date + SYSTEM + "<|eot_id|>" + user)
    assert kept[0] == f"System: {SYSTEM}\n\nUser: {QUESTION}"


def test_get_reward_judge_reads_the_policy_system_prompt():
    seen: list[str] = []

    def judge(messages, params):
        seen.append(messages[-1]["content"])
        return "<score>8</score>"

    prompt, query = system_texts(make_tokenizer("chatml"))
    with TestClient(create_app(ScriptedBackend(judge), "pos")) as c:
        body = c.post("/get_reward", json={"query": [query], "prompts": [prompt], "labels": [""]}).json()
    assert body["reasons"] == [None] and SYSTEM in seen[0] and QUESTION in seen[0] and "<|im_start|>" not in seen[0]
