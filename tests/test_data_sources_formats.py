"""Every format read from JSON Lines, parquet and a `datasets` directory (Dataset and DatasetDict
save_to_disk) gives the same pairs, labels included (issue 26: "every format above reads from JSONL, parquet
and a datasets directory; 0 silent label inversions"). Hand-made records in each upstream schema; the
parquet and save_to_disk fixtures are written by the test itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets")

from judgerl.data import load_pairs  # noqa: E402


def msgs(*turns: tuple[str, str]) -> list[dict]:
    return [{"role": r, "content": c} for r, c in turns]


def battle(qid: str, winner: str, a: str, b: str, **extra) -> dict:
    return {"question_id": qid, "model_a": "m1", "model_b": "m2", "winner": winner,
            "conversation_a": msgs(("user", f"Q {qid}"), ("assistant", a)),
            "conversation_b": msgs(("user", f"Q {qid}"), ("assistant", b)), **extra}


def hs3(pref: int, k: int) -> dict:
    return {"domain": "general", "language": "english",
            "context": msgs(("system", "Be kind."), ("user", f"Q{k}"), ("assistant", "a"), ("user", "more")),
            "response1": f"first {k}", "response2": f"second {k}", "overall_preference": pref,
            "individual_preference": [{"score": pref, "reasoning": "r"}]}


def completions(*rated: tuple[str, float]) -> list[dict]:
    return [{"model": f"m{k}", "response": text, "fine-grained_score": s, "overall_score": 2 * s,
             "annotations": {"helpfulness": {"Rating": str(int(s))}}} for k, (text, s) in enumerate(rated)]


def ppe_k(qid: str, flags: list[bool], **extra) -> dict:
    row = {"question_id": qid, "prompt": f"Q {qid}", "model_name": "m", "scores": flags}
    row.update({f"response_{k + 1}": f"{qid} answer {k}" for k in range(len(flags))})
    return row | extra


# (format name passed to load_pairs or None = detected, load options, rows, expected (chosen, tie) per pair)
CASES = {
    "rewardbench": (None, {}, [{"id": 1, "prompt": "P", "chosen": "good", "rejected": "bad", "chosen_model": "a",
                                "rejected_model": "b", "subset": "hep-go"}], [("good", False)]),
    "rewardbench2": (None, {}, [
        {"id": "1", "prompt": "P", "chosen": ["c"], "rejected": ["r0", "r1", "r2"], "num_correct": 1,
         "num_incorrect": 3, "total_completions": 4, "models": ["a", "b", "c", "d"], "subset": "Math",
         "additional_metadata": {"x": 1}},
        {"id": "tied:2", "prompt": "T", "chosen": ["4", "four"], "rejected": ["5", "6", "7"], "num_correct": 2,
         "num_incorrect": 3, "total_completions": 5, "models": [], "subset": "Ties",
         "additional_metadata": {"x": 2}}],
        [("c", False)] * 3 + [("4", False), ("four", False), ("4", False)]),
    "rmbench": (None, {}, [{"id": "7", "prompt": "P", "chosen": ["c0", "c1", "c2"], "rejected": ["r0", "r1", "r2"],
                            "domain": "safety-refuse"}], [(f"c{i}", False) for i in range(3) for _ in range(3)]),
    "judgebench": (None, {}, [{"pair_id": f"p{k}", "original_id": "o", "source": "livebench-math",
                               "question": "Q", "response_model": "m", "response_A": "A", "response_B": "B",
                               "label": label} for k, label in enumerate(["A>B", "B>A"])],
                   [("A", False), ("B", False)]),
    "helpsteer3": (None, {}, [hs3(p, k) for k, p in enumerate([-3, -1, 0, 1, 3])],
                   [("first 0", False), ("first 1", False), ("first 2", True), ("second 3", False),
                    ("second 4", False)]),
    "ultrafeedback-binarized": (None, {}, [
        {"prompt": "Hi?", "prompt_id": "abc", "chosen": msgs(("user", "Hi?"), ("assistant", "Hello!")),
         "rejected": msgs(("user", "Hi?"), ("assistant", "Go away.")), "messages": msgs(("user", "Hi?")),
         "score_chosen": 8.0, "score_rejected": 3.0}], [("Hello!", False)]),
    "ultrafeedback-raw": (None, {}, [
        {"source": "evol", "instruction": "Explain X.", "models": ["m0", "m1", "m2"], "correct_answers": [],
         "incorrect_answers": [], "completions": completions(("low", 2.0), ("high", 4.5), ("also low", 2.0))}],
        [("high", False), ("low", True), ("high", False)]),
    "chat-pairs": (None, {}, [{"chosen": msgs(("user", "2+2?"), ("assistant", "4"), ("user", "x3?"),
                                              ("assistant", "12")),
                               "rejected": msgs(("user", "2+2?"), ("assistant", "4"), ("user", "x3?"),
                                                ("assistant", "7")), "source": "sky"}], [("12", False)]),
    "arena": (None, {}, [battle("q1", w, "A", "B", anony=True, language="English", tstamp=1.0, turn=1)
                         for w in ("model_a", "model_b", "tie", "tie (bothbad)")],
              [("A", False), ("B", False), ("A", True), ("A", True)]),
    "mtbench-human": (None, {}, [battle("81", w, "A", "B", judge="expert_1", turn=1) for w in ("model_b", "model_a")],
                      [("B", False), ("A", False)]),
    "ppe": ("ppe", {}, [{"question_id": f"q{k}", "model_a": "m1", "model_b": "m2", "winner": w, "prompt": "Q",
                         "response_1": "one", "response_2": "two", "language": "English"}
                        for k, w in enumerate(["model_b", "model_a", "tie"])],
            [("two", False), ("one", False), ("one", True)]),
    "ppe-arena-layout": ("ppe", {}, [battle("q1", "model_b", "A", "B"), battle("q2", "model_a", "A", "B")],
                         [("B", False), ("A", False)]),
    # q1's null answer_index is no MMLU-Pro marker (a parquet row has every column, None where a record lacks it)
    "ppe-correctness": (None, {}, [ppe_k("q1", [True, False, False], answer_index=None),
                                   ppe_k("q2", [False, True, True], answer_index=1)],
                        [("q1 answer 0", False), ("q1 answer 0", False), ("q2 answer 1", False),
                         ("q2 answer 2", False)]),
    "generic-label-map": ("generic", {
        "field_map": {"prompt": "question", "first": "a", "second": "b", "label": "pref"},
        "label_map": {"-1": "first", "0": "tie", "1": "second"}},
        [{"question": "Q", "a": f"a{k}", "b": f"b{k}", "pref": p} for k, p in enumerate([1, -1, 0])],
        [("b0", False), ("a1", False), ("a2", True)]),
    "llmbar": (None, {}, [{"input": "I", "output_1": "o1", "output_2": "o2", "label": lab} for lab in (2, 1)],
               [("o2", False), ("o1", False)]),
    "autoj": (None, {}, [{"scenario": "s", "label": lab, "prompt": "P", "response 1": "r1", "response 2": "r2"}
                         for lab in (1, 0, 2)], [("r2", False), ("r1", False), ("r1", True)]),
    "hh-rlhf": (None, {}, [{"chosen": "\n\nHuman: Hi\n\nAssistant: Hello",
                            "rejected": "\n\nHuman: Hi\n\nAssistant: Go"}], [("Hello", False)]),
}


def _pairs(result) -> list[dict]:
    """Pairs without their ids (records without an id get one from the file / directory name)."""
    return [{k: v for k, v in p.to_dict().items() if k != "id"} for p in result.pairs]


@pytest.mark.parametrize("name", list(CASES))
def test_jsonl_parquet_and_datasets_directories_give_the_same_pairs(tmp_path: Path, name: str) -> None:
    fmt, options, rows, expected = CASES[name]
    jsonl = tmp_path / "bench.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ds = datasets.Dataset.from_list(rows)
    ds.to_parquet(str(tmp_path / "bench.parquet"))
    ds.save_to_disk(str(tmp_path / "saved" / "bench"))  # every source named "bench": the stem some formats use
    datasets.DatasetDict({"test": ds}).save_to_disk(str(tmp_path / "saved_dict" / "bench"))
    base = load_pairs(jsonl, format=fmt, **options)
    if name == "ppe-correctness":
        assert [p.source for p in base.pairs] == ["ppe-correctness/bench"] * 2 + ["ppe-correctness/mmlu_pro"] * 2
    assert [(p.chosen, p.tie) for p in base.pairs] == expected  # the labels, read the way the dataset means them
    for source in ("bench.parquet", "saved/bench", "saved_dict/bench"):
        got = load_pairs(tmp_path / source, format=fmt, **options)
        assert got.format == base.format, source
        assert _pairs(got) == _pairs(base), source
