"""bench/bench_generalise.py (issue 23's proof harness) with fakes: stage bookkeeping, the option check,
the mixture stage's builder calls, the report tables, and the recipes it trains validated dry."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from judgerl.data import load_pairs, write_pairs_jsonl
from judgerl.types import PreferencePair

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("bench_generalise", ROOT / "bench" / "bench_generalise.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod
    while str(ROOT / "bench") in sys.path:
        sys.path.remove(str(ROOT / "bench"))


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_stages_record_time_and_load_and_resume_skips_finished_stages(gen, tmp_path):
    clock, calls = FakeClock(), []
    loads = iter([(1.0, 2.0, 3.0), (4.0, 5.0, 6.0)])

    def work(x):
        calls.append(x)
        clock.t += 90
        return {"x": x}

    st = gen.Stages(tmp_path, {"seed": 0}, clock=clock, loadavg=lambda: next(loads))
    assert st.run("eval:base:arith/word", lambda: work(1)) == {"x": 1}
    rec = st.get("eval:base:arith/word")
    assert rec["wall_s"] == 90 and rec["loadavg_before"] == [1.0, 2.0, 3.0] and rec["loadavg_after"] == [4.0, 5.0, 6.0]
    again = gen.Stages(tmp_path, {"seed": 0}, clock=clock, loadavg=lambda: (0.0, 0.0, 0.0))
    assert again.run("eval:base:arith/word", lambda: work(2)) == {"x": 1} and calls == [1]  # skipped
    with pytest.raises(SystemExit, match="stopped"):
        again.run("zero", lambda: (_ for _ in ()).throw(SystemExit("zero: stopped")))
    assert again.get("zero") is None  # a stage that did not finish is not recorded: the next run does it


def test_a_changed_option_is_refused_and_selectors_may_change(gen, tmp_path):
    args = gen.parse_args(["--out", str(tmp_path), "--judges", "base"])
    gen.Stages(tmp_path, vars(args), selectors=gen.SELECTORS)
    other = gen.parse_args(["--out", str(tmp_path), "--judges", "base,distill", "--runs", "distill", "--domains", "code"])
    gen.Stages(tmp_path, vars(other), selectors=gen.SELECTORS)  # choosing stages is not a change of results
    with pytest.raises(SystemExit, match=r"n_eval: 50 -> 7"):
        gen.Stages(tmp_path, vars(gen.parse_args(["--out", str(tmp_path), "--n-eval", "7"])), selectors=gen.SELECTORS)
    with pytest.raises(SystemExit, match="overrides"):
        gen.Stages(tmp_path, vars(gen.parse_args(["--set", "grpo.max_steps=3"])), selectors=gen.SELECTORS)
    with pytest.raises(SystemExit):
        gen.parse_args(["--judges", "basee"])


def _pair(kind: str, split: str, i: int, domain: str, prompt: str | None = None) -> PreferencePair:
    return PreferencePair(id=f"{kind}-{split}-{i}", prompt=prompt or f"{kind} {split} problem {i}", chosen="good",
                          rejected="bad", meta={"domain": domain, "split": split, "problem_key": f"{kind}:{split}:{i}"})


def test_mixture_calls_every_builder_once_per_split_and_writes_disjoint_sets(gen, tmp_path, monkeypatch):
    calls = []
    domains = {"arith-mix": ["arith/word", "arith/prose"], "chat-mix": ["chat", "safety"], "code-pairs": ["code"],
               "if-pairs": ["if"]}

    def fake(kind):
        def build(split, out, args):
            calls.append((kind, split, out))
            n = 5 if split == "train" else 3
            return {"pairs_written": write_pairs_jsonl(
                [_pair(kind, split, i, domains[kind][i % len(domains[kind])]) for i in range(n)], out)}
        return build

    monkeypatch.setattr(gen, "BUILDERS", {k: fake(k) for k in domains})
    args = gen.parse_args(["--out", str(tmp_path), "--n-train", "2", "--n-eval", "1"])
    res = gen.build_mixture(args, tmp_path)
    assert sorted((k, s) for k, s, _ in calls) == sorted((k, s) for k in domains for s in ("train", "held-out"))
    assert len({o for _, _, o in calls}) == 8  # a file per builder and split
    assert res["domains"] == sorted(d for ds in domains.values() for d in ds)
    train = load_pairs(tmp_path / "data" / "train.jsonl").pairs
    assert res["train"]["code"] == 2 and res["train"]["arith/word"] == 2 and len(train) == sum(res["train"].values())
    assert [p.meta["domain"] for p in train[:6]] == sorted(res["train"])[:6]  # interleaved by domain
    held = load_pairs(gen.domain_file(tmp_path, "arith/word")).pairs
    assert len(held) == 1 and held[0].meta["split"] == "held-out"
    assert all(p.meta["split"] == "train" for p in train)


def test_mixture_refuses_overlapping_splits(gen, tmp_path, monkeypatch):
    def build(split, out, args):  # the same prompt in both splits
        return {"pairs_written": write_pairs_jsonl([_pair("code-pairs", split, 0, "code", prompt="def f(): ...")], out)}

    monkeypatch.setattr(gen, "BUILDERS", {"code-pairs": build})
    with pytest.raises(RuntimeError, match="overlap"):
        gen.build_mixture(gen.parse_args(["--out", str(tmp_path)]), tmp_path)


def _record(stage: str, result: dict, wall: float = 60.0) -> dict:
    return {"stage": stage, "result": result, "wall_s": wall, "loadavg_before": [0.1, 0, 0], "loadavg_after": [1.5, 0, 0]}


def _figs(pca: float, valid: float = 1.0, tools: float | None = 0.5) -> dict:
    return {"n_pairs": 50, "valid_format_rate": valid, "accuracy": 0.8, "accuracy_valid_only": 0.8,
            "position_consistent_accuracy": pca, "flip_rate": 0.1, "tool_use_rate": tools}


def test_report_tables_from_fake_summaries(gen, tmp_path):
    rep = sys.modules["generalise_report"]
    zero = {"rounds": [{"round": 0, "rl": {"reward": 0.05}, "sampling": {"valid_rate": 0.0, "correct_rate": 0.4,
                                                                         "tool_use_rate": 0.6, "selected": 30}},
                       {"round": 1, "rl": {"reward": 0.3}, "sampling": {"valid_rate": 0.7, "selected": 80}},
                       {"round": 2, "rl": {"reward": 0.5}, "final_model": "x"}], "stopped_early": False}
    records = [_record("data", {"train": {"code": 64, "chat": 64}, "held_out": {"code": 33, "chat": 50}}),
               _record("zero", zero, wall=6000),
               _record("eval:base:code", _figs(0.0, valid=0.2)), _record("eval:distill:code", _figs(0.9)),
               _record("eval:distill:chat", _figs(0.6, tools=0.05)), _record("eval:zero:arith/word", _figs(0.85))]
    text = rep.tables(records)
    assert "| judge | arith/word | code | chat |" in text  # domains in the order
    assert "| TIR Distill (SFT + GRPO) | – | 0.900 / 1.000 | 0.600 / 1.000 (tools 0.050) |" in text
    assert "| base (TIR prompt, tools) | – | 0.000 / 0.200 | – |" in text
    assert text.index("| base (TIR prompt, tools) |") < text.index("| TIR Distill (SFT + GRPO) |") < text.index("| TIR Zero |")
    assert "| TIR Distill (SFT + GRPO) | 1.000 | 0.800 | 0.800 | 0.900 | 0.100 | 0.500 |" in text  # the code table
    assert "| 0 | 0.050 | 0.000 | – | 0.400 | 0.600 | 30 |" in text and "| 2 |" not in text  # final RL has no sampling
    assert "| code | 64 | 33 |" in text and "| zero | 100.0 | 0.10 -> 1.50 | 3 Zero rounds |" in text
    args = gen.parse_args(["--out", str(tmp_path)])
    path = rep.write_report(records, tmp_path, args)
    md = path.read_text()
    assert md.startswith(rep.START) and md.rstrip().endswith(rep.END) and "python bench/bench_generalise.py --out" in md
    assert (tmp_path / "generalise_pca.png").is_file() and (tmp_path / "generalise_zero_rounds.png").is_file()


@pytest.mark.parametrize("run", ["distill", "zero", "notool"])
@pytest.mark.parametrize("smoke", [False, True])
def test_the_runs_recipes_validate_dry(gen, tmp_path, run, smoke):
    args = gen.parse_args(["--out", str(tmp_path)] + (["--smoke"] if smoke else []))
    config = gen.run_config(run, args, tmp_path)  # load_run_recipe(...): read, overrides, validate; nothing runs
    assert config.data.path == str(tmp_path / "data" / "train.jsonl") and config.resume
    assert config.time_limit_min == args.stage_min and config.lora.top_layers == 0
    if run == "notool":
        assert config.task == "pairwise" and config.distill.teacher == "programmatic"
    else:
        assert config.task == "tir" and config.pairwise().namespace is True
        assert (config.zero.rounds > 0) == (run == "zero") and (config.distill.teacher is None) == (run == "zero")
    if smoke:
        assert config.grpo["max_steps"] == 1 and config.warmup.steps == 2


def test_mix_recipes_are_listed_and_train_every_domain_with_the_namespace():
    from judgerl.train.config import recipe_names
    from judgerl.train.run import load_run_recipe

    assert {"tir-judge-mix", "tir-judge-zero-mix"} <= set(recipe_names())
    mix = load_run_recipe("tir-judge-mix", ["data.path=x.jsonl"])
    zero = load_run_recipe("tir-judge-zero-mix", ["data.path=x.jsonl"])
    for c in (mix, zero):
        assert c.protocol_args == {"namespace": True} and c.rewards.tir == 1.0 and c.tools.max_rounds == 3
    assert mix.distill.teacher == "programmatic" and mix.warmup.steps == 150 and mix.grpo["max_steps"] == 150
    assert zero.zero.rounds == 2 and zero.zero.examples == 128 and zero.tools.force_answer


def test_domains_are_named_as_the_data_stage_spells_them(gen):
    known = ["arith/expression", "arith/word", "chat", "if"]
    assert gen.pick_domains("all", known) == known
    # the held-out file's spelling and an underscore name the same stage (before: a second, differently named stage)
    assert gen.pick_domains("arith-expression, arith_word,chat", known) == ["arith/expression", "arith/word", "chat"]
    with pytest.raises(SystemExit, match="no held-out domain 'nope'.*arith/expression"):
        gen.pick_domains("if,nope", known)
