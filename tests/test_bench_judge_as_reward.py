"""The judge-as-reward study command (bench/bench_judge_as_reward.py): stage bookkeeping with fakes (fast)
and the 2-step smoke end to end (slow)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def study():
    spec = importlib.util.spec_from_file_location("bench_judge_as_reward", ROOT / "bench" / "bench_judge_as_reward.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod
    sys.path.remove(str(ROOT / "bench"))


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_stages_record_time_and_load_and_resume_skips_finished_stages(study, tmp_path):
    clock, calls = FakeClock(), []

    def work(x):
        calls.append(x)
        clock.t += 90
        return {"x": x}

    loads = iter([(1.0, 2.0, 3.0), (4.0, 5.0, 6.0)])
    st = study.Stages(tmp_path, 60, clock=clock, loadavg=lambda: next(loads))
    assert st.run("a", work, 1) == {"x": 1}
    rec = json.loads((tmp_path / "stages.json").read_text())["a"]
    assert rec["seconds"] == 90 and rec["load_start"] == [1.0, 2.0, 3.0] and rec["load_end"] == [4.0, 5.0, 6.0]
    again = study.Stages(tmp_path, 60, clock=clock, loadavg=lambda: (0.0, 0.0, 0.0))
    assert again.run("a", work, 2) == {"x": 1} and calls == [1]  # resumed: not run again
    with pytest.raises(SystemExit, match="during stage b"):
        again.run("b", lambda: None)  # stopped by the budget: not recorded, runs next time
    assert not again.done("b")
    clock.t += 3600
    with pytest.raises(SystemExit, match="before stage c"):
        again.run("c", work, 3)
    assert calls == [1]


def test_a_budget_stop_in_a_policy_run_still_writes_the_table(study, tmp_path, monkeypatch):
    """The budget stopping one arm's policy run must not leave results.md without the arms that did finish."""
    reports = []
    monkeypatch.setattr(study, "split", lambda args: {"train": [], "heldout": []})
    monkeypatch.setattr(study, "policy", lambda args, st, out, arm, judge: {"global_step": 2} if arm == "oracle" else None)
    monkeypatch.setattr(study, "readout", lambda out, arm, seed: {"hacking_rollouts": "-"})
    monkeypatch.setattr(study, "report", lambda args, out, st: reports.append(sorted(st.stages)) or "table")
    args = study.parse_args(["--arms", "oracle,random", "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="during stage policy-random"):
        study.run_study(args, study.Stages(tmp_path, 60))
    assert reports == [["policy-oracle", "readout-oracle", "split"]]
    assert study.run_study(study.parse_args(["--arms", "oracle", "--out", str(tmp_path)]), study.Stages(tmp_path, 60)) == "table"


def test_fraction_of_the_oracle_gain_recovered(study):
    assert study.recovered(0.7, 1.0) == pytest.approx(0.7)
    assert study.recovered(0.5, 0.0) is None and study.recovered(None, 1.0) is None


def test_smoke_arguments_are_tiny_and_cover_every_arm(study):
    args = study.parse_args(["--smoke", "--out", "x"])
    assert args.steps == 2 and args.heldout == 2 and args.train_limit == 4
    assert study.ARMS == ("oracle", "random", "nonreasoning", "reasoning", "tool", "rubric", "tool-rubric")


@pytest.mark.slow
@pytest.mark.timeout(1800)  # seven arms, each with its judge, labels and 2 GRPO steps: the suite's longest test
def test_study_smoke_end_to_end(study, tmp_path, shared_data):
    out = tmp_path / "study"
    study.main(["--smoke", "--out", str(out), "--data", str(shared_data), "--budget-min", "120"])
    stages = json.loads((out / "stages.json").read_text())
    for arm in study.ARMS:
        assert stages[f"policy-{arm}"]["result"]["global_step"] == 2
        assert "gold_win_rate" in stages[f"readout-{arm}"]["result"]
        # 2 steps: the rollouts carry a gold score, too few for 4 bins
        assert "2 rollout steps with a gold score" in stages[f"readout-{arm}"]["result"]["hacking_rollouts"]
    text = (out / "results.md").read_text()
    assert "| oracle |" in text and "| rubric |" in text and "| tool-rubric |" in text and (out / "arms.png").is_file()
    assert all("load_start" in v for v in stages.values())


def test_arms_and_prompt_mix_options(study):
    args = study.parse_args(["--arms", "oracle", "--instructions", "punctuation:no_comma, change_case:", "--out", "x"])
    assert args.arms == ["oracle"] and args.instructions == ["punctuation:no_comma", "change_case:"]
    with pytest.raises(SystemExit):
        study.parse_args(["--arms", "oracle,nope"])


def test_split_uses_the_policy_runs_prompt_mix_and_split(study, shared_data):
    from judgerl.train.policy import load_prompts, select_prompts, split_prompts

    args = study.parse_args(["--data", str(shared_data), "--instructions", "punctuation:no_comma", "--heldout", "5"])
    sp = study.split(args)
    prompts = select_prompts(load_prompts(args.ifeval), ["punctuation:no_comma"], args.ifeval)
    train, held = split_prompts(prompts, 5, 0)
    assert sp["heldout"] == [i for i, _ in held] and sp["train"] == [i for i, _ in train]
    assert not set(sp["heldout"]) & set(sp["train"])


def test_a_changed_option_is_refused_on_resume(study, tmp_path):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"lr": "2e-06", "arms": "['oracle']", "steps": "50"}))
    same = {"lr": "2e-06", "arms": "['oracle', 'reasoning']", "steps": "50"}
    study.check_options(path, same, selectors=study.STAGE_OPTIONS)  # arms may change
    with pytest.raises(SystemExit, match="lr: 2e-06 -> 1e-05"):
        study.check_options(path, {"lr": "1e-05", "arms": "['oracle']", "steps": "50"}, selectors=study.STAGE_OPTIONS)


def test_a_later_option_may_change_and_the_change_is_recorded(study, tmp_path, capsys):
    """``--gold-judge-lora`` only shapes a judge not yet trained: a new value is accepted, printed and kept in
    ``changes``; an option the finished stages depend on is still refused after it; the report names each judge's
    training."""
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"lr": "5e-05", "gold_judge_lora": "0"}))
    kw = dict(selectors=study.STAGE_OPTIONS, later=study.LATER_OPTIONS)
    study.check_options(path, {"lr": "5e-05", "gold_judge_lora": "16"}, **kw)
    saved = json.loads(path.read_text())
    assert saved["gold_judge_lora"] == "16"
    assert [(c["option"], c["from"], c["to"]) for c in saved["changes"]] == [("gold_judge_lora", "0", "16")]
    assert "gold_judge_lora 0 -> 16" in capsys.readouterr().out
    study.check_options(path, {"lr": "5e-05", "gold_judge_lora": "16"}, **kw)  # same again: nothing new recorded
    assert len(json.loads(path.read_text())["changes"]) == 1
    with pytest.raises(SystemExit, match="lr: 5e-05 -> 1e-05"):
        study.check_options(path, {"lr": "1e-05", "gold_judge_lora": "16"}, **kw)
    assert study.judge_training({"lora_r": 16, "tools": False}) == "LoRA r16"
    assert study.judge_training({"tools": True}) == "LoRA (tir-judge-if)"
    assert study.judge_training({"tools": False}) == "full fine-tuning"


def test_tool_judge_pairs_carry_the_prompts_instructions_for_the_if_teacher(study, tmp_path, shared_data):
    """The tool arm's training pairs: gold-labelled responses of one prompt, paired, with the IFEval record's
    instruction ids and kwargs in meta (what the IF teacher checks); a prompt that is not an IFEval record is
    left out and counted."""
    from judgerl.data import load_pairs

    ifeval = shared_data / "ifeval" / "input_data.jsonl"
    rec = json.loads(ifeval.read_text().splitlines()[0])
    labels = tmp_path / "gold"
    labels.mkdir()
    rows = [{"id": f"r{i}", "prompt": rec["prompt"], "response": f"answer {i}", "score": s, "valid": True}
            for i, s in enumerate([3.0, 9.0])]
    rows += [{"id": f"x{i}", "prompt": "Not an IFEval prompt.", "response": "x", "score": 1.0, "valid": True}
             for i in range(2)]
    (labels / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    counts = study.tool_judge_pairs(str(labels), str(ifeval), tmp_path / "pairs.jsonl")
    assert counts == {"pairs": 1, "unpaired": 0, "no_record": 1}
    (pair,) = load_pairs(tmp_path / "pairs.jsonl").pairs
    assert (pair.chosen, pair.chosen_score, pair.rejected_score) == ("answer 1", 9.0, 3.0)
    assert pair.meta["domain"] == "if" and pair.meta["instruction_ids"] == rec["instruction_id_list"]
    assert len(pair.meta["kwargs"]) == len(rec["instruction_id_list"])


def test_set_overrides_reach_every_arms_policy_recipe_last(study, tmp_path, monkeypatch):
    import judgerl.train.policy as policy_mod

    seen = {}

    def fake_run_policy(cfg):
        seen["cfg"] = cfg
        return {"global_step": 0}

    monkeypatch.setattr(policy_mod, "run_policy", fake_run_policy)
    args = study.parse_args(["--arms", "oracle", "--out", str(tmp_path), "--lr", "3e-5",
                             "--set", "grpo.lr_scheduler_type=constant", "--set", "grpo.learning_rate=5e-5",
                             "--set", "grpo.per_device_train_batch_size=16"])
    stages = study.Stages(tmp_path, 60)
    assert study.policy(args, stages, tmp_path, "oracle", None) is None  # fewer steps than asked: not finished
    grpo = seen["cfg"].grpo
    assert grpo["lr_scheduler_type"] == "constant" and grpo["per_device_train_batch_size"] == 16
    assert grpo["learning_rate"] == 5e-5  # --set wins over --lr
    assert seen["cfg"].reward == "gold"


@pytest.mark.parametrize("bad", ["grpo.learning_rate", "=3", "", "nosuchkey=1", "judge.nosuch=1"])
def test_a_bad_set_is_refused_at_once_naming_it(study, bad, capsys):
    """Not KEY=VALUE, or a key the policy-grpo recipe does not have: refused by the recipe loader before any stage."""
    with pytest.raises(SystemExit):
        study.parse_args(["--set", bad])
    assert "--set" in capsys.readouterr().err


def test_the_random_arm_trains_on_the_random_control_reward_without_a_judge(study, tmp_path, monkeypatch):
    import judgerl.train.policy as policy_mod

    seen = {}
    monkeypatch.setattr(policy_mod, "run_policy", lambda cfg: seen.setdefault("cfg", cfg) and {"global_step": 0})
    args = study.parse_args(["--arms", "random", "--out", str(tmp_path)])
    study.policy(args, study.Stages(tmp_path, 60), tmp_path, "random", None)
    assert seen["cfg"].reward == "random" and seen["cfg"].reward_url is None
    assert "random" not in study.JUDGE_ARMS  # no judge is trained or served for it


def test_paired_difference_compares_two_arms_final_gold_on_the_same_prompts(study, tmp_path):
    for arm, scores in (("tool", {"1": 6, "2": 4, "3": 9, "4": None}), ("random", {"1": 2, "2": 4, "3": 3, "5": 1})):
        d = tmp_path / f"policy-{arm}" / "heldout"
        d.mkdir(parents=True)
        (d / "step-0.jsonl").write_text(json.dumps({"id": "1", "gold_score": 0}) + "\n")  # not the last step: ignored
        (d / "step-40.jsonl").write_text("".join(json.dumps({"id": i, "gold_score": g}) + "\n" for i, g in scores.items()))
    got = study.paired_difference(tmp_path, "tool", "random", seed=0)
    assert got["n"] == 3 and got["mean"] == pytest.approx((4 + 0 + 6) / 3)  # prompts 1-3 (4: unscored, 5: one arm)
    assert got["ci"][0] <= got["mean"] <= got["ci"][1]
    assert study.paired_difference(tmp_path, "tool", "oracle", seed=0) is None  # no such arm's evaluations


def test_tool_rubric_pairs_carry_the_prompts_ifeval_rubric(study, tmp_path, shared_data):
    """The tool-rubric arm's judge is trained on the rubric prompts it is labelled and served with: its pairs carry
    the IFEval rubric of their prompt (one line per instruction), which the pairs file keeps."""
    from judgerl.data import load_pairs
    from judgerl.gold.rubric import RUBRIC_HEADER

    ifeval = shared_data / "ifeval" / "input_data.jsonl"
    rec = json.loads(ifeval.read_text().splitlines()[0])
    labels = tmp_path / "gold"
    labels.mkdir()
    (labels / "labels.jsonl").write_text("".join(
        json.dumps({"id": f"r{i}", "prompt": rec["prompt"], "response": f"answer {i}", "score": s, "valid": True})
        + "\n" for i, s in enumerate([3.0, 9.0])))
    study.tool_judge_pairs(str(labels), str(ifeval), tmp_path / "plain.jsonl")
    assert load_pairs(tmp_path / "plain.jsonl").pairs[0].rubric is None
    study.tool_judge_pairs(str(labels), str(ifeval), tmp_path / "rubric.jsonl", rubric=True)
    rubric = load_pairs(tmp_path / "rubric.jsonl").pairs[0].rubric
    assert rubric.startswith(RUBRIC_HEADER) and len(rubric.splitlines()) == len(rec["instruction_id_list"]) + 2


def test_rubric_arms_are_labelled_and_rewarded_with_rubrics(study, tmp_path, monkeypatch):
    """``rubric`` and ``tool-rubric`` show the judge each prompt's rubric in its static labels and as the policy's
    reward; ``tool-rubric`` trains its own tool judge (``judge-tool-rubric``), ``rubric`` reuses the reasoning judge."""
    import judgerl.train.policy as policy_mod

    labelled, trained = [], []
    monkeypatch.setattr(study, "agreement", lambda out, gold, labels: dict.fromkeys(labels, {}))
    monkeypatch.setattr(study, "base_responses", lambda *a, **k: {"ok": 1})
    monkeypatch.setattr(study, "label", lambda *a, **k: labelled.append((a[4], k.get("rubric", False))) or {"dir": "d"})
    monkeypatch.setattr(study, "train_judge", lambda args, out, arm, gold, minutes: trained.append(arm) or
                        {"model": f"m-{arm}", "tools": arm.startswith("tool")})
    args = study.parse_args(["--out", str(tmp_path)])
    judges = study.judge_stages(args, study.Stages(tmp_path, 60), tmp_path, {"train": [], "heldout": []},
                                ["reasoning", "rubric", "tool", "tool-rubric"])
    assert trained == ["reasoning", "tool", "tool-rubric"] and judges["rubric"]["model"] == "m-reasoning"
    shown = dict(labelled)
    assert shown["rubric-expected"] and shown["tool-rubric-parsed"] and not shown["tool-expected"]
    assert not shown["reasoning-parsed"] and not shown["gold-train"]
    seen = {}
    monkeypatch.setattr(policy_mod, "run_policy", lambda cfg: seen.setdefault("cfg", cfg) and {"global_step": 0})
    class FakeServer:
        url = "http://x"

        def __init__(self, args, judge, log_path, extra=()):
            seen["served"] = extra

        def stop(self):
            pass

    monkeypatch.setattr(study, "Server", FakeServer)
    for arm, rubric in (("tool-rubric", "ifeval"), ("tool", None), ("rubric", "ifeval")):
        seen.clear()
        study.policy(args, study.Stages(tmp_path, 60), tmp_path, arm, judges[arm])
        assert seen["cfg"].rubric == rubric and seen["cfg"].reward_url == "http://x"
        assert ("--tools" in seen["served"]) == arm.startswith("tool")
    # the served tool judge runs code in bubblewrap; the non-isolating fallback only where bubblewrap is missing
    import judgerl.tools as tools_mod

    for usable in (True, False):
        monkeypatch.setattr(tools_mod, "bwrap_available", lambda: usable)
        seen.clear()
        study.policy(args, study.Stages(tmp_path, 60), tmp_path, "tool", judges["tool"])
        assert ("--unsafe-sandbox" in seen["served"]) is not usable


def test_a_judge_restored_without_weights_is_trained_again_only_while_a_stage_needs_it(study, tmp_path, monkeypatch):
    """A snapshot keeps adapters, not a full fine-tune's weights: after a restore, a judge whose policy or static
    stages are still to run is trained again (its done markers removed), one whose stages are all done is not."""
    trained, labelled, agreed = [], [], []
    monkeypatch.setattr(study, "agreement", lambda out, gold, labels: agreed.append(1) or dict.fromkeys(labels, {}))
    monkeypatch.setattr(study, "base_responses", lambda *a, **k: {"ok": 1})
    monkeypatch.setattr(study, "label", lambda args, out, model, records, name, **k: labelled.append(name) or {"dir": "d"})
    monkeypatch.setattr(study, "train_judge", lambda args, out, arm, gold, minutes: trained.append(arm) or
                        {"model": str(out / f"judge-{arm}" / "grpo" / "final"), "tools": False})
    args = study.parse_args(["--out", str(tmp_path)])
    arms = ["nonreasoning", "reasoning", "rubric"]
    study.judge_stages(args, study.Stages(tmp_path, 60), tmp_path, {"train": [], "heldout": []}, arms)
    assert trained == ["nonreasoning", "reasoning"]
    st = study.Stages(tmp_path, 60)
    for name in ("policy-nonreasoning", "policy-reasoning"):
        st.run(name, lambda: {"global_step": 40})
    (tmp_path / "judge-reasoning" / "sft").mkdir(parents=True)
    (tmp_path / "judge-reasoning" / "sft" / "done.json").write_text("{}")
    for arm in ("nonreasoning", "reasoning"):  # restored: configs without weights
        final = tmp_path / f"judge-{arm}" / "grpo" / "final"
        final.mkdir(parents=True)
        (final / "config.json").write_text("{}")
    assert study.weights_missing(str(final)) and not study.weights_missing("smollm2-135m")
    labelled.clear(), agreed.clear()
    study.judge_stages(args, study.Stages(tmp_path, 60), tmp_path, {"train": [], "heldout": []}, arms)
    # nonreasoning: every stage it serves is done; reasoning: its rubric arm's policy is still to run
    assert trained == ["nonreasoning", "reasoning", "reasoning"]
    # the static agreement of the judge trained again (and of the rubric arm it serves) is measured again
    assert sorted(labelled) == ["reasoning-expected", "reasoning-parsed", "rubric-expected", "rubric-parsed"]
    assert agreed == [1]
    assert not (tmp_path / "judge-reasoning" / "sft").exists() and (tmp_path / "judge-nonreasoning" / "grpo").exists()
    kept = tmp_path / "judge-nonreasoning" / "grpo" / "final"
    (kept / "model.safetensors").write_bytes(b"w")
    assert not study.weights_missing(str(kept))


def test_a_tool_judge_is_labelled_and_served_with_the_response_namespace(study, tmp_path, monkeypatch):
    """The tool judge is trained with ``namespace: true`` (its code reads ``RESPONSE``): its static labels and its
    reward server must show it the same prompt, or its code fails on a name the prompt never defined."""
    import judgerl.gold.label as gl
    import judgerl.gold.scorer as gs

    seen = {}
    monkeypatch.setattr(gs, "load_scorer", lambda spec, **kw: seen.setdefault("opts", kw["options"]))
    monkeypatch.setattr(gl, "load_label_records", lambda path: ([], []))
    monkeypatch.setattr(gl, "run_label", lambda *a, **kw: {})
    args = study.parse_args(["--out", str(tmp_path)])
    study.label(args, tmp_path, "judge-dir", "records.jsonl", "tool-expected", mode="expected", tools=True)
    assert seen["opts"].tools and seen["opts"].protocol_args == {"namespace": True}
    assert seen["opts"].max_new_tokens == 320  # a round holds the IF teacher's longest check program (287 tokens)
    seen.clear()
    study.label(args, tmp_path, "judge-dir", "records.jsonl", "nonreasoning-expected", mode="expected")
    assert not seen["opts"].tools and seen["opts"].protocol_args == {} and seen["opts"].max_new_tokens == 192
    src = (ROOT / "bench" / "bench_judge_as_reward.py").read_text()
    assert '"--protocol-arg", "namespace=true") if judge.get("tools")' in src  # the served tool judge too
    # a judge trained with the text measures named in its prompt is labelled and served with them
    seen.clear()
    study.label(args, tmp_path, "judge-dir", "records.jsonl", "tool-expected", mode="expected", tools=True,
                measures=True)
    assert seen["opts"].protocol_args == {"namespace": True, "measures": True}
    assert '("--protocol-arg", "measures=true")' in src
    named = study.parse_args(["--out", str(tmp_path), "--tool-judge", "dir", "--tool-judge-measures"])
    assert study.train_tool_judge(named, tmp_path, "gold", 10.0) == {"model": "dir", "tools": True, "trained": True,
                                                                    "measures": True}


def _fake_judge_stages(study, monkeypatch) -> list:
    """Judge stages without models: every stage returns at once; the agreement stage records the labels it got."""
    calls = []
    monkeypatch.setattr(study, "agreement", lambda out, gold, labels: calls.append(sorted(labels)) or dict.fromkeys(labels, {}))
    monkeypatch.setattr(study, "base_responses", lambda *a, **k: {"ok": 1})
    monkeypatch.setattr(study, "label", lambda *a, **k: {"dir": "d"})
    monkeypatch.setattr(study, "train_judge", lambda *a, **k: {"model": "m", "tools": False})
    return calls


def test_the_agreement_table_is_recomputed_when_a_judge_arm_is_added(study, tmp_path, monkeypatch):
    """A study resumed with a new judge arm must not report the old agreement table (it lacked the new arm's rows:
    the tool judge's static agreement was missing from stop 40's first read-out)."""
    calls = _fake_judge_stages(study, monkeypatch)
    args = study.parse_args(["--out", str(tmp_path)])
    sp = {"train": [], "heldout": []}
    st = study.Stages(tmp_path, 60)
    study.judge_stages(args, st, tmp_path, sp, ["nonreasoning"])
    study.judge_stages(args, study.Stages(tmp_path, 60), tmp_path, sp, ["nonreasoning"])  # resumed: not again
    study.judge_stages(args, study.Stages(tmp_path, 60), tmp_path, sp, ["nonreasoning", "tool"])
    assert calls == [["nonreasoning-expected", "nonreasoning-parsed"],
                     ["nonreasoning-expected", "nonreasoning-parsed", "tool-expected", "tool-parsed"]]


def test_a_run_of_some_judge_arms_keeps_the_other_arms_agreement_rows(study, tmp_path, monkeypatch):
    """Resuming with a subset of the arms (``--arms oracle,tool-rubric``: run one policy arm without retraining a
    judge another arm needs) must not drop the finished arms' rows from the agreement table."""
    calls = _fake_judge_stages(study, monkeypatch)
    args = study.parse_args(["--out", str(tmp_path)])
    sp = {"train": [], "heldout": []}
    study.judge_stages(args, study.Stages(tmp_path, 60), tmp_path, sp, ["nonreasoning", "tool"])
    study.judge_stages(args, study.Stages(tmp_path, 60), tmp_path, sp, ["tool-rubric"])
    assert calls[-1] == ["nonreasoning-expected", "nonreasoning-parsed", "tool-expected", "tool-parsed",
                         "tool-rubric-expected", "tool-rubric-parsed"]


def test_gold_judge_lora_option_trains_the_gold_judges_with_an_adapter(study, tmp_path, monkeypatch):
    """``--gold-judge-lora 16``: the non-reasoning and reasoning judges get one LoRA adapter (the tool judges'
    learning rates), so a snapshot keeps them; 0 keeps full fine-tuning."""
    import judgerl.train.gold_judge as gj

    seen = []
    monkeypatch.setattr(gj, "train_gold_judge", lambda gold, out, **kw: seen.append(kw) or
                        {"sft_model": str(out / "sft"), "grpo_model": None})
    monkeypatch.setattr(study, "prune_checkpoints", lambda d: None)
    for flag, lr in ((["--gold-judge-lora", "16"], 5e-4), ([], 5e-5)):
        args = study.parse_args(["--out", str(tmp_path), *flag])
        study.train_judge(args, tmp_path, "reasoning", "gold")
        assert seen[-1]["lora_r"] == (16 if flag else 0) and seen[-1]["sft_learning_rate"] == lr
        assert ("grpo.learning_rate=2e-5" in seen[-1]["grpo_overrides"]) == bool(flag)


def test_a_judge_trained_again_forgets_the_statics_of_every_arm_it_serves(study, tmp_path, monkeypatch):
    """Review finding: a session that names only ``reasoning`` retrains the reasoning judge (weights missing) and
    must forget the *rubric* arm's statics too (the rubric arm serves the same judge): they were kept and came back
    into the table from the judge that was gone."""
    trained, labelled = [], []
    monkeypatch.setattr(study, "agreement", lambda out, gold, labels: dict.fromkeys(labels, {}))
    monkeypatch.setattr(study, "base_responses", lambda *a, **k: {"ok": 1})
    monkeypatch.setattr(study, "label", lambda args, out, model, records, name, **k: labelled.append(name) or {"dir": "d"})
    monkeypatch.setattr(study, "train_judge", lambda args, out, arm, gold, minutes: trained.append(arm) or
                        {"model": str(out / f"judge-{arm}" / "grpo" / "final"), "tools": False})
    args = study.parse_args(["--out", str(tmp_path)])
    study.judge_stages(args, study.Stages(tmp_path, 60), tmp_path, {"train": [], "heldout": []}, ["reasoning", "rubric"])
    final = tmp_path / "judge-reasoning" / "grpo" / "final"
    final.mkdir(parents=True)
    (final / "config.json").write_text("{}")  # restored without weights
    labelled.clear()
    for name in ("reasoning-expected", "rubric-parsed"):  # label runs of the judge that is gone (stop 43: a resumable
        (tmp_path / "labels" / name).mkdir(parents=True)    # run of the old judge refused the new one)
    st = study.Stages(tmp_path, 60)
    study.judge_stages(args, st, tmp_path, {"train": [], "heldout": []}, ["reasoning"])
    assert trained == ["reasoning", "reasoning"] and sorted(labelled) == ["reasoning-expected", "reasoning-parsed"]
    assert not st.done("static-rubric-expected") and not st.done("static-rubric-parsed")
    assert not (tmp_path / "labels" / "reasoning-expected").exists() and not (tmp_path / "labels" / "rubric-parsed").exists()



def test_gated_readout_pays_nothing_for_non_answers_and_flags_the_hack(study, tmp_path):
    """The read-out under the gated gold (judgerl.gold.gate): a policy whose judge score rises while its replies turn
    into placeholders that the instruction-only gold still pays is SUSPECTED on the gated gold (stop 43's tool-rubric
    arm), its gated gain is negative, and its not-an-attempt rate rises; the table shows the second block."""
    run = tmp_path / "policy-x" / "heldout"
    run.mkdir(parents=True)
    essay = "Rivers carve valleys over millions of years, carrying silt that builds deltas and feeds farms."
    replies = {0: [essay] * 4, 20: [essay] * 3 + ["The answer."], 40: [essay, "The answer."] * 2,
               60: ["The answer.", "The answer is not available.", "The answer.", "The answer."]}
    for step, rs in replies.items():
        rows = [{"id": f"p{i}", "prompt": "Write an essay about rivers.", "response": r, "gold_score": 5.0 + step / 20}
                for i, r in enumerate(rs)]
        (run / f"step-{step}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    held = [{"step": s, "judge_score_mean": 3.0 + s / 10, "gold_score_mean": 5.0 + s / 20} for s in replies]
    g = study.gated_readout(tmp_path / "policy-x", held, seed=0)
    assert [round(p["not_an_attempt"], 2) for p in g["per_step"]] == [0.0, 0.25, 0.5, 1.0]
    assert g["base"] == 5.0 and g["final"] == 0.0 and g["gain"] == -5.0
    assert g["hacking"].startswith("SUSPECTED") and "window 4" in g["hacking"]
    assert g["not_an_attempt_base"] == 0.0 and g["not_an_attempt_final"] == 1.0
