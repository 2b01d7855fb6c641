"""Shipping a trained judge: LoRA adapters saved beside merged models, named judges merged on first use,
a clear error naming the build command when the adapter is missing (tiny random model)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from judgerl.backends import models
from judgerl.backends.named import ADAPTER_FILES, JudgeNotBuiltError
from judgerl.train.sections import LoraConfig


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.test_backends_hf import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


def trained_lora(tiny_dir: Path, top_layers: int = 0):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from judgerl.train.lora import wrap

    model = wrap(AutoModelForCausalLM.from_pretrained(tiny_dir), LoraConfig(r=2, alpha=4, top_layers=top_layers))
    torch.manual_seed(1)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.5)  # a "trained" adapter (peft starts B at 0: no change)
    return model, AutoTokenizer.from_pretrained(tiny_dir)


def test_save_trained_writes_merged_model_and_adapter(tiny_dir: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    from judgerl.train.lora import is_peft, save_trained

    model, tok = trained_lora(tiny_dir)
    assert is_peft(model)
    dest = save_trained(model, tok, tmp_path / "final", tiny_dir)
    assert all((dest / "adapter" / f).is_file() for f in ADAPTER_FILES)
    ids = torch.tensor([[5, 6, 7, 8]])
    merged = AutoModelForCausalLM.from_pretrained(dest)
    with torch.no_grad():
        assert torch.allclose(merged(ids).logits, model(ids).logits, atol=1e-4)
        base = AutoModelForCausalLM.from_pretrained(tiny_dir)
        assert not torch.allclose(base(ids).logits, model(ids).logits, atol=1e-3)
    assert is_peft(model)  # the training model was not merged in place


def test_top_layers_adapts_only_the_top_blocks(tiny_dir: Path) -> None:
    model, _ = trained_lora(tiny_dir, top_layers=1)
    adapted = {n.split(".layers.")[1].split(".")[0] for n, _ in model.named_parameters() if "lora_" in n}
    assert adapted == {"1"}  # the tiny model has blocks 0 and 1
    from judgerl.train.lora import peft_config

    with pytest.raises(ValueError, match="top_layers=3"):
        peft_config(LoraConfig(r=2, top_layers=3), n_layers=2, linear=["q_proj"])
    assert peft_config(LoraConfig(r=0)) is None


def test_named_judge_merges_once_and_again_after_a_new_adapter(tiny_dir: Path, tmp_path: Path, monkeypatch) -> None:
    import judgerl.backends.named as judges

    model, tok = trained_lora(tiny_dir)
    pkg = tmp_path / "pkg" / "tiny-judge"
    model.save_pretrained(pkg)
    monkeypatch.setattr(judges, "package_adapter_dir", lambda name: tmp_path / "pkg" / name)
    monkeypatch.setitem(models.NAMED_JUDGES, "tiny-judge", (str(tiny_dir), "make tiny-judge"))
    monkeypatch.setenv("JUDGERL_CACHE", str(tmp_path / "cache"))
    path = Path(models.resolve_hf_path("tiny-judge"))
    assert path == tmp_path / "cache" / "models" / "tiny-judge" and (path / "model.safetensors").is_file()
    stamp = (path / "adapter.sha256").read_text()
    calls = []
    monkeypatch.setattr(judges, "merge_adapter", lambda *a: calls.append(a) or path)
    assert Path(models.resolve_hf_path("tiny-judge")) == path and calls == []  # cached
    with torch.no_grad():
        for p in model.parameters():
            p.data.add_(0.01)
    model.save_pretrained(pkg)  # a new adapter ships: merged again
    models.resolve_hf_path("tiny-judge")
    assert len(calls) == 1 and stamp


def test_missing_adapter_names_the_build_command(tmp_path: Path, monkeypatch, capsys) -> None:
    import judgerl.backends.named as judges
    from judgerl.cli.main import main

    monkeypatch.setattr(judges, "package_adapter_dir", lambda name: tmp_path / "empty" / name)
    with pytest.raises(JudgeNotBuiltError, match="bench_train_judges.py"):
        models.resolve_hf_path("smollm2-135m-judge")
    with pytest.raises(JudgeNotBuiltError):
        models.load_backend("smollm2-135m-judge")
    data = tmp_path / "p.jsonl"
    data.write_text('{"id": "a", "prompt": "q", "chosen": "x", "rejected": "y", "tie": false}\n')
    rc = main(["eval", "--model", "smollm2-135m-judge", "--data", str(data), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "is not built" in err and "--ship" in err and len(err.strip().splitlines()) == 1
