"""Trainer pieces: TRL's soft overlong penalty (DAPO eq. 13), pair-block sampler, batch merge,
JudgeGRPOConfig; GRPO rows; warm-up targets written by the protocols."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from trl.rewards import get_soft_overlong_punishment

from judgerl.protocols import PaV, PoS, get_protocol
from judgerl.train.trainer import JudgeGRPOConfig, PairBlockRepeatSampler, _merge_rows
from judgerl.types import PreferencePair


@pytest.mark.parametrize(
    "length,expected",
    [(0, 0.0), (12, 0.0), (13, -1 / 4), (14, -2 / 4), (16, -1.0), (17, -1.0), (40, -1.0)],
)
def test_soft_overlong_penalty_eq13(length: int, expected: float) -> None:
    # L_max = 16, L_cache = 4: free up to 12 tokens, linear to -1 at 16, -1 beyond
    # (TRL's implementation, checked against the formula; judgerl no longer keeps its own copy)
    fn = get_soft_overlong_punishment(16, 4)
    assert fn(completion_ids=[[1] * length]) == [pytest.approx(expected)]


def test_judge_grpo_config_carries_the_dapo_defaults(tmp_path: Path) -> None:
    from judgerl.train.config import DapoConfig

    args = JudgeGRPOConfig(output_dir=str(tmp_path), bf16=False, report_to="none")
    assert args.dynamic_sampling == DapoConfig.dynamic_sampling and args.pair_block == 2
    assert args.max_sampling_rounds == DapoConfig.max_sampling_rounds


def test_pair_block_sampler_keeps_pairs_together() -> None:
    data = list(range(12))  # 6 pairs
    s = PairBlockRepeatSampler(data, mini_repeat_count=3, batch_size=4, repeat_count=2, seed=1)
    idx = list(s)
    assert len(idx) == len(s) == 12 // 4 * 4 * 3 * 2
    # one generation batch = 4 distinct rows x 3 generations, repeated twice
    for start in range(0, len(idx), 24):
        batch = idx[start : start + 12]
        assert batch == idx[start + 12 : start + 24]
        rows = batch[::3]
        assert all(batch[i * 3 : i * 3 + 3] == [rows[i]] * 3 for i in range(4))
        for a, b in zip(rows[::2], rows[1::2]):
            assert a % 2 == 0 and b == a + 1  # both orders of a pair, adjacent
    assert sorted(set(idx)) == data


def test_pair_block_sampler_shuffles_and_rejects_odd_batches() -> None:
    a = list(PairBlockRepeatSampler(list(range(40)), 1, batch_size=40, seed=1))
    assert a != list(range(40))
    with pytest.raises(ValueError, match="even"):
        PairBlockRepeatSampler(list(range(8)), 2, batch_size=3)
    with pytest.raises(ValueError, match="multiple of the block"):
        PairBlockRepeatSampler(list(range(7)), 2, batch_size=2)


def test_merge_rows_repads_prompt_left_completion_right() -> None:
    p1 = {
        "prompt_ids": torch.tensor([[5, 6], [7, 8]]),
        "prompt_mask": torch.ones(2, 2, dtype=torch.long),
        "completion_ids": torch.tensor([[1, 2, 3], [4, 0, 0]]),
        "completion_mask": torch.tensor([[1, 1, 1], [1, 0, 0]]),
        "advantages": torch.tensor([0.5, -0.5]),
        "old_per_token_logps": None,
        "num_items_in_batch": torch.tensor(4),
    }
    p2 = {
        "prompt_ids": torch.tensor([[9, 9, 9]]),
        "prompt_mask": torch.ones(1, 3, dtype=torch.long),
        "completion_ids": torch.tensor([[7]]),
        "completion_mask": torch.tensor([[1]]),
        "advantages": torch.tensor([1.0]),
        "old_per_token_logps": None,
        "num_items_in_batch": torch.tensor(1),
    }
    m = _merge_rows([p1, p2], [(0, 1), (1, 0)], pad_token_id=0)
    assert m["prompt_ids"].tolist() == [[0, 7, 8], [9, 9, 9]]
    assert m["prompt_mask"].tolist() == [[0, 1, 1], [1, 1, 1]]
    assert m["completion_ids"].tolist() == [[4, 0, 0], [7, 0, 0]]
    assert m["completion_mask"].tolist() == [[1, 0, 0], [1, 0, 0]]
    assert m["advantages"].tolist() == [-0.5, 1.0]
    assert m["old_per_token_logps"] is None


def pairs(n: int = 3) -> list[PreferencePair]:
    return [
        PreferencePair(id=f"p{i}", prompt=f"What is {i} + 1?", chosen=f"{i} + 1 = {i + 1}", rejected=f"{i} + 1 = {i + 3}",
                       meta={"expression": f"{i} + 1", "value": i + 1, "rationale": f"{i} + 1 = {i + 1}"})
        for i in range(n)
    ]


def test_rows_pairwise_both_orders_adjacent() -> None:
    from judgerl.train.datasets import build_rows

    rows = build_rows(pairs(2), "pairwise", PaV())
    assert [(r["pair_id"], r["order"], r["label"]) for r in rows] == [
        ("p0", 0, "A"), ("p0", 1, "B"), ("p1", 0, "A"), ("p1", 1, "B"),
    ]
    user0, user1 = rows[0]["prompt"][-1]["content"], rows[1]["prompt"][-1]["content"]
    assert user0.index("0 + 1 = 1") < user0.index("0 + 1 = 3")
    assert user1.index("0 + 1 = 3") < user1.index("0 + 1 = 1")


def test_rows_pointwise_multitask_regression_and_ties() -> None:
    from judgerl.train.datasets import build_rows, to_dataset

    ps = pairs(2) + [PreferencePair(id="t", prompt="q", chosen="a", rejected="b", tie=True)]
    pt = build_rows(ps, "pointwise", pointwise=PoS())
    assert [(r["pair_id"], r["role"]) for r in pt] == [("p0", "chosen"), ("p0", "rejected"), ("p1", "chosen"),
                                                       ("p1", "rejected")]
    mt = build_rows(ps, "multitask", PaV(), PoS())
    assert [r["protocol"] for r in mt[:4]] == ["pav", "pav", "pos", "pos"]
    scored = [PreferencePair(id="s", prompt="q", chosen="a", rejected="b", chosen_score=7, rejected_score=12)]
    rg = build_rows(pairs(1) + scored, "regression", pointwise=PoS(max_score=9))
    assert [r["gold_score"] for r in rg] == [9.0, 0.0, 7.0, 9.0]  # verifiable: max/min; given: clipped
    tir = build_rows(pairs(1), "tir", PaV())
    assert "```python" in tir[0]["prompt"][0]["content"]
    ds = to_dataset(mt)
    assert len(ds) == 8 and ds[2]["order"] is None and ds[0]["label"] == "A"
    with pytest.raises(ValueError, match="no usable"):
        build_rows([ps[-1]], "pairwise", PaV())
    with pytest.raises(ValueError, match="needs a pointwise protocol"):
        build_rows(ps, "regression")


def test_warmup_targets_parse_correctly() -> None:
    from judgerl.train.datasets import build_rows
    from judgerl.train.sft import templated_examples, warmup_target

    ps = pairs(2)
    for task, proto in [("pairwise", PaV()), ("pointwise", PoS(max_score=9)), ("tir", PaV())]:
        rows = build_rows(ps, task, proto, proto)
        ex = templated_examples(rows, {p.id: p for p in ps}, proto)
        for r, e in zip(rows, ex):
            d = proto.parse(e.text)
            assert d.valid, e
            if r["label"] is not None:
                assert d.verdict == r["label"]
        if task == "tir":
            assert "```python\nprint(0 + 1)\n```\n```output\n1\n```" in ex[0].text
            # the interpreter output is its own piece (masked from the SFT loss), code is the judge's
            assert ("tool", "```output\n1\n```\n") in ex[0].pieces
            assert ("code", "```python\nprint(0 + 1)\n```\n") in ex[0].pieces
        else:
            assert all(k == "model" for k, _ in ex[0].pieces)
    for name in ("pas", "pavs"):
        d = get_protocol(name).parse(warmup_target(ps[0], get_protocol(name), order=1))
        assert d.valid and d.verdict == "B"
    for mode, expected in (("best", (1,)), ("rank", (1, 0))):
        lw = get_protocol("listwise", mode=mode)
        assert lw.parse(warmup_target(ps[0], lw, order=1), 2).ranking == expected
    # the pointwise scale comes from the protocol object: a 0-9 judge is taught 9, never 10
    assert PoS(max_score=9).parse(warmup_target(ps[0], PoS(max_score=9), role="chosen")).scores == (9.0,)
    with pytest.raises(ValueError):
        warmup_target(ps[0], PaV(), role="chosen")


def test_arithmetic_pairs_from_gsm8k(shared_data: Path) -> None:
    from judgerl.data.builders.arith import build_arithmetic_pairs

    ps = build_arithmetic_pairs(shared_data / "gsm8k" / "test.jsonl", limit=50, ops="+-")
    assert len(ps) == 50
    for p in ps:
        a, op, b = p.meta["expression"].split()
        value = int(a) + int(b) if op == "+" else int(a) - int(b)
        assert p.chosen.endswith(f"= {value}") and p.meta["value"] == value
        assert p.meta["wrong"] != value and p.rejected.endswith(f"= {p.meta['wrong']}")
    assert len({p.meta["expression"] for p in ps}) == 50


def test_arithmetic_pairs_bad_line(tmp_path: Path) -> None:
    from judgerl.data.builders.arith import build_arithmetic_pairs

    f = tmp_path / "g.jsonl"
    f.write_text('{"answer": "2+2 = <<2+2=4>>4"}\nnot json\n')
    with pytest.raises(ValueError, match="g.jsonl:2"):
        build_arithmetic_pairs(f)


def test_metrics_logger_and_plot(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from judgerl.train.callbacks import MetricsLogger, TimeLimit, read_metrics

    cb = MetricsLogger(tmp_path, "grpo")
    for step in (1, 2):
        state = SimpleNamespace(is_world_process_zero=True, global_step=step)
        cb.on_log(None, state, None, logs={"reward": 0.1 * step, "judge/pairwise_accuracy": 0.5, "rewards/x/std": 1})
    cb.on_train_end(None, SimpleNamespace(is_world_process_zero=True), None)
    recs = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in recs] == [1, 2] and recs[1]["reward"] == pytest.approx(0.2)
    assert (tmp_path / "curves_grpo.png").stat().st_size > 1000
    control = SimpleNamespace(should_training_stop=False, should_save=False)
    TimeLimit(0).on_step_end(None, None, control)
    assert control.should_training_stop and control.should_save


class WordTokenizer:
    """A stand-in tokenizer: one id per whitespace-separated word (ids = word lengths)."""

    eos_token_id = 99

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict:
        return {"input_ids": [len(w) for w in text.split()]}


def test_trajectory_ids_masks_tool_tokens_and_appends_eos() -> None:
    from judgerl.train.rollout import trajectory_ids
    from judgerl.types import Segment, Trajectory

    t = Trajectory(
        segments=(
            Segment("model", "let me check ", 0, 3),
            Segment("code", "print(1) ", 3, 4),
            Segment("tool", "out put ", 4, 6),
            Segment("model", "<verdict>A</verdict>", 6, 7),
        ),
        tool_calls=1,
    )
    ids, mask = trajectory_ids(WordTokenizer(), t, max_len=20)
    assert ids == [3, 2, 5, 8, 3, 3, 20, 99]
    assert mask == [1, 1, 1, 1, 0, 0, 1, 1]
    ids, mask = trajectory_ids(WordTokenizer(), t, max_len=5)  # cut: no EOS, TRL sees it truncated
    assert ids == [3, 2, 5, 8, 3] and mask == [1, 1, 1, 1, 0]
    long = Trajectory(segments=(Segment("model", "a b", 0, 2),), finish_reason="length")
    assert trajectory_ids(WordTokenizer(), long, 10)[0] == [1, 1]
    empty = Trajectory(segments=())
    assert trajectory_ids(WordTokenizer(), empty, 10) == ([99], [1])


def test_pair_locality_check_deals_batches_like_accelerate() -> None:
    from judgerl.train.trainer import check_pair_locality

    keys = [(f"p{i // 2}", "pav") for i in range(16)]  # 8 pairs, both orders adjacent
    # 2 processes, 2 generations: 4 rows per process = 2 prompts = 1 whole pair each
    ok = PairBlockRepeatSampler(keys, mini_repeat_count=2, batch_size=4, seed=0)
    check_pair_locality(keys, ok, per_process_rows=4, num_processes=2, block=2)
    # 2 rows per process = 1 prompt: the two orders of a pair go to different processes
    split = PairBlockRepeatSampler(keys, mini_repeat_count=2, batch_size=2, seed=0)
    with pytest.raises(ValueError, match="split across processes: process 0 holds 1 of its 2 rows"):
        check_pair_locality(keys, split, per_process_rows=2, num_processes=2, block=2)
    # a dataset whose partners are not adjacent fails even on one process
    shuffled = [keys[i] for i in (0, 2, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)]
    with pytest.raises(ValueError, match="split across processes"):
        check_pair_locality(shuffled, PairBlockRepeatSampler(shuffled, 1, batch_size=2, shuffle=False), 2, 1, 2)
    check_pair_locality(keys, split, per_process_rows=2, num_processes=2, block=1)  # block 1: no pairs to keep
