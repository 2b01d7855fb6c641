"""GRPO rollouts on merged LoRA weights (``lora.merge_for_rollout``): the same greedy generations as the
unmerged adapter, the base weights restored bit for bit afterwards (also after an exception), gradients
on the LoRA parameters only, and the hooks in the trainer and the TIR rollout (tiny random Llama)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from judgerl.train.lora import merged_for_generation
from judgerl.train.sections import LoraConfig


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.test_backends_hf import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture()
def policy(tiny_dir: Path):
    """A peft model with a nonzero random adapter (peft starts B at 0, where merging changes nothing)."""
    from transformers import AutoModelForCausalLM

    from judgerl.train.lora import wrap

    model = wrap(AutoModelForCausalLM.from_pretrained(tiny_dir), LoraConfig(r=4, alpha=8))
    torch.manual_seed(1)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.5)
    model.train()
    return model


def lora_layers(model):
    from peft.tuners.tuners_utils import BaseTunerLayer

    return [m for m in model.modules() if isinstance(m, BaseTunerLayer)]


def base_state(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" not in n}


def assert_restored(model, before: dict[str, torch.Tensor]) -> None:
    assert not any(m.merged for m in lora_layers(model))
    now = {n: p for n, p in model.named_parameters() if "lora_" not in n}
    assert now.keys() == before.keys()
    assert all(torch.equal(now[n], before[n]) for n in before)  # bit for bit, no merge/unmerge drift


def assert_trains_lora_only(model) -> None:
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    model.zero_grad()
    model(input_ids=ids, labels=ids).loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    lora = {n: g for n, g in grads.items() if "lora_" in n}
    assert lora and all(g is not None for g in lora.values())
    assert any(float(g.abs().sum()) > 0 for n, g in lora.items() if "lora_A" in n)
    assert all(g is None for n, g in grads.items() if "lora_" not in n)


def greedy(model, ids: torch.Tensor, n: int = 12) -> torch.Tensor:
    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                              do_sample=False, pad_token_id=0)


def test_merged_generation_equals_unmerged_and_skips_the_adapter_path(policy) -> None:
    ids = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12]])
    model = policy.eval()
    with torch.no_grad():
        logits = model(input_ids=ids).logits
        with model.disable_adapter():
            base_logits = model(input_ids=ids).logits
    assert (logits - base_logits).abs().max() > 1e-2  # the adapter matters
    unmerged = greedy(model, ids)
    calls = []
    hook = lora_layers(model)[0].lora_A["default"].register_forward_hook(lambda *a: calls.append(1))
    try:
        with merged_for_generation(model) as m:
            assert m is model and all(layer.merged for layer in lora_layers(model))
            with torch.no_grad():
                merged_logits = model(input_ids=ids).logits
            merged = greedy(model, ids)
        assert calls == []  # the merged forward never ran the LoRA matmuls
    finally:
        hook.remove()
    torch.testing.assert_close(merged_logits, logits, rtol=0, atol=1e-5)
    assert torch.equal(merged, unmerged)


def test_adapter_unmerged_after_generation_and_training_flows_to_lora_only(policy) -> None:
    before = base_state(policy)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        logits = policy(input_ids=ids).logits
    with merged_for_generation(policy):
        greedy(policy, ids, 4)
    assert_restored(policy, before)
    with torch.no_grad():
        assert torch.equal(policy(input_ids=ids).logits, logits)
    assert_trains_lora_only(policy)


def test_restored_after_an_exception_during_generation(policy) -> None:
    before = base_state(policy)
    with pytest.raises(RuntimeError, match="boom"):
        with merged_for_generation(policy):
            greedy(policy, torch.tensor([[5, 6]]), 2)
            raise RuntimeError("boom")
    assert_restored(policy, before)
    assert_trains_lora_only(policy)


def test_nested_merge_refused_and_plain_models_pass_through(policy, tiny_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    before = base_state(policy)
    with merged_for_generation(policy):
        with pytest.raises(RuntimeError, match="already merged"):
            with merged_for_generation(policy):
                pass
    assert_restored(policy, before)
    plain = AutoModelForCausalLM.from_pretrained(tiny_dir)
    with merged_for_generation(plain) as m:
        assert m is plain


def test_trainer_generation_runs_merged_only_when_asked(policy, monkeypatch) -> None:
    from trl import GRPOTrainer

    from judgerl.train.trainer import JudgeGRPOTrainer

    seen = []

    def fake_generate(self, *args, **kwargs):
        seen.append(any(m.merged for m in lora_layers(policy)))
        if kwargs.get("fail"):
            raise ValueError("generation failed")
        return "ids", None

    monkeypatch.setattr(GRPOTrainer, "_generate_single_turn", fake_generate)
    trainer = JudgeGRPOTrainer.__new__(JudgeGRPOTrainer)
    trainer.model, trainer.use_vllm = policy, False
    trainer.accelerator = SimpleNamespace(unwrap_model=lambda m: m)
    before = base_state(policy)
    for merge, expect in ((False, False), (True, True)):
        trainer.merge_for_rollout = merge
        assert trainer._generate_single_turn([[1, 2]], None, {}, 2) == ("ids", None)
        assert seen[-1] is expect
    with pytest.raises(ValueError, match="generation failed"):
        trainer._generate_single_turn([[1, 2]], None, {}, 2, fail=True)
    assert seen[-1] is True
    assert_restored(policy, before)
    trainer.use_vllm = True  # vLLM gets merged weights from TRL's own weight sync
    trainer._generate_single_turn([[1, 2]], None, {}, 2)
    assert seen[-1] is False


def test_tir_rollout_generates_merged_and_restores_on_error(policy, tiny_dir: Path, monkeypatch) -> None:
    from transformers import AutoTokenizer

    from judgerl.judge.core import Judge
    from judgerl.train import rollout
    from judgerl.train.config import TrainConfig, apply_overrides

    seen = []

    def failing_run(self, requests, on_done=None):
        seen.append(any(m.merged for m in lora_layers(policy)))
        raise RuntimeError("sandbox died")

    monkeypatch.setattr(Judge, "run", failing_run)
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    trainer = SimpleNamespace(
        args=SimpleNamespace(max_completion_length=8, temperature=1.0, top_p=1.0, seed=0),
        accelerator=SimpleNamespace(unwrap_model=lambda m: m, process_index=0), model=policy,
        state=SimpleNamespace(global_step=0), _log_metric=lambda k, v: None)
    before = base_state(policy)
    prompt = [[{"role": "user", "content": "2+2?"}]]
    for merge in (False, True):
        config = apply_overrides(TrainConfig(), ["lora.r=4", f"lora.merge_for_rollout={str(merge).lower()}"])
        fn = rollout.make_tir_rollout(config.pairwise(), config.tools, tokenizer, sandbox=object(),
                                      merge_for_rollout=config.lora.merge_for_rollout)
        with pytest.raises(RuntimeError, match="sandbox died"):
            fn(prompt, trainer)
        assert seen[-1] is merge
        assert_restored(policy, before)
        assert policy.training  # back in train mode for the loss


def test_recipe_option_checked_and_passed_to_the_trainer_config() -> None:
    from judgerl.train.config import RecipeError, apply_overrides, load_recipe
    from judgerl.train.grpo import build_grpo_config

    def grpo_args(c):
        return build_grpo_config(c.grpo, c.dapo, output_dir=c.output_dir, seed=c.seed, weights=list(c.rewards.weights().values()),
                                 merge_for_rollout=c.lora.merge_for_rollout)

    cfg = load_recipe("j1-pav", ["data.path=x", "output_dir=/tmp/judgerl-test-merge"])
    assert grpo_args(cfg).merge_for_rollout is False
    on = apply_overrides(cfg, ["lora.r=4", "lora.merge_for_rollout=true"])
    on.validate()
    assert grpo_args(on).merge_for_rollout is True
    with pytest.raises(RecipeError, match=r"lora.merge_for_rollout needs lora.r > 0"):
        apply_overrides(cfg, ["lora.r=0", "lora.merge_for_rollout=true"]).validate()
    with pytest.raises(RecipeError, match="lora.merge_for_rollout must be true or false"):
        apply_overrides(cfg, ["lora.r=4", "lora.merge_for_rollout=7"]).validate()
