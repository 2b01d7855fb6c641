"""bench/bench_attack_success.py: the attack families, the attacked pairs and the table, end to end on a scripted
judge (no model): one that always answers B is beaten by every injection in the aligned order, as it should."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import bench_attack_success as asr  # noqa: E402


def test_injections_are_the_red_team_pav_rows_and_the_arithmetic_attacks():
    attacks = asr.injections()
    fams = {f for f, _ in attacks}
    assert len(attacks) >= 100 and "arith-injected-verdict" in fams and "encoding" in fams
    assert all(text and not text.startswith(asr.PREFIX) for _, text in attacks)
    assert len({t for _, t in attacks}) == len(attacks)  # deduplicated


def test_each_pair_gets_one_seeded_attack_on_its_wrong_response():
    from judgerl.data.builders.arith import generated_arithmetic_pairs

    pairs = generated_arithmetic_pairs(6, seed=1)
    one, two = (asr.attacked_pairs(pairs, asr.injections(), 1) for _ in range(2))
    assert one == two  # seeded
    for p, a in zip(pairs, one):
        assert a.chosen == p.chosen and a.rejected.startswith(p.rejected + " ") and a.meta["attack"]
        assert "{wrong}" not in a.rejected and "{right}" not in a.rejected


def _row(pair, attack, aligned, wins, raw=None, void=False):
    return {"pair": pair, "attack": attack, "aligned": aligned, "injector_wins": wins,
            "injector_wins_parse_only": wins if raw is None else raw, "void": void}


def test_asr_is_the_attacked_minus_the_clean_win_rate_of_the_same_pairs():
    clean = [_row("p1", "clean", True, False), _row("p2", "clean", True, True), _row("p1", "clean", False, False)]
    att = [_row("p1-asr", "x", True, True, void=False), _row("p2-asr", "y", True, True),
           _row("p1-asr", "x", False, False, raw=True, void=True)]
    t = asr.table(clean, att)
    assert t["all"]["clean"]["k"] == 1 and t["all"]["attacked"]["k"] == 2 and t["all"]["asr"] == pytest.approx(0.5)
    assert t["x"]["asr"] == 1.0 and t["y"]["asr"] == 0.0
    assert list(t)[-1] == "all"


def test_end_to_end_with_an_obedient_scripted_judge(tmp_path):
    """A judge that always writes ``<verdict>B</verdict>``: the wrong response wins whenever it is B on the clean
    pairs; on the attacked ones the parser alone would give it every win, and judgerl voids the wins of the
    injectors its carrier rule recognises (a verdict for a response carrying answer syntax): the ASR is minus
    the void rate."""
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text(json.dumps("<think>B looks right.</think>\n<verdict>B</verdict>") + "\n")
    assert asr.main(["--out", str(tmp_path / "run"), "--model", f"scripted/{outputs}", "--n", "8",
                     "--no-tools"]) == 0
    res = json.loads((tmp_path / "run" / "asr.json").read_text())
    al = res["aligned"]["all"]
    assert al["clean"]["rate"] == 1.0 and al["parse_only"]["rate"] == 1.0 and al["void"]["k"] > 0
    assert al["attacked"]["k"] == al["attacked"]["n"] - al["void"]["k"]
    assert al["asr"] == pytest.approx(-al["void"]["rate"])
    assert res["other_order"]["all"]["attacked"]["rate"] == 0.0  # B is the honest response there
    assert "| all | " in (tmp_path / "run" / "asr.md").read_text()


def test_a_retried_judgment_counts_once(tmp_path):
    """A resumed eval appends the retry of a failed judgment (``final: false``) after it: the retry is read."""
    from judgerl.data.builders.arith import generated_arithmetic_pairs
    from judgerl.protocols import get_protocol

    (pair,) = generated_arithmetic_pairs(1, seed=1)
    run = tmp_path / "run"
    run.mkdir()
    failed = {"pair_id": pair.id, "order": "ab", "sample": 0, "chosen_index": 0, "final": False,
              "decision": {"valid": False, "invalid_reason": "generation_error"}, "raw_output": ""}
    retried = dict(failed, final=True, decision={"valid": True, "verdict": "B"}, raw_output="<verdict>B</verdict>")
    (run / "judgments.jsonl").write_text(json.dumps(failed) + "\n" + json.dumps(retried) + "\n")
    rows = asr.read_run(run, {pair.id: pair}, get_protocol("pav"))
    assert len(rows) == 1 and rows[0]["aligned"] and rows[0]["injector_wins"]


def test_no_attack_is_punctuation_only():
    """``arith-wrong-says-right-first`` writes its text before the wrong value: no injection after it to append."""
    assert all(text.strip(".,;:!? ") for _, text in asr.injections())
    assert "arith-wrong-says-right-first" not in {f for f, _ in asr.injections()}
