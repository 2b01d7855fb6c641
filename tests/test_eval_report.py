"""report.md and the per-source accuracy plot."""

from __future__ import annotations

from judgerl.eval import compute_metrics, format_report, write_report


def _records():
    recs = []
    for i, src in enumerate(["alpha", "beta", "beta", "gamma"]):
        for order, ci in (("AB", 0), ("BA", 1)):
            verdict = "A" if (order == "AB" or i % 2) else None
            decision = ({"valid": True, "verdict": verdict} if verdict else
                        {"valid": False, "invalid_reason": "missing_final_answer"})
            recs.append({"pair_id": f"p{i}", "source": src, "kind": "pairwise", "order": order, "sample": 0,
                         "order_index": ci, "chosen_index": ci, "decision": decision, "gold_tie": False,
                         "trajectory": {"tool_calls": 1, "tool_errors": i % 2}})
    recs += [{"pair_id": "t", "source": "alpha", "kind": "pairwise", "order": o, "sample": 0, "order_index": k,
              "chosen_index": k, "decision": {"valid": True, "verdict": "A"}, "gold_tie": True}
             for k, o in enumerate(("AB", "BA"))]
    return recs


def test_report_has_tables_for_every_section(tmp_path):
    summary = compute_metrics(_records())
    summary["config"] = {"model": "scripted", "protocol": {"name": "pav"}, "samples": 1, "seed": 0}
    summary["timing"] = {"elapsed_s": 1.5, "judgments_this_run": 8, "judgments_resumed": 0, "judgments_per_s": 5.3}
    text = format_report(summary)
    for heading in ("## Overall", "## By source", "## Invalid outputs", "## Pairs labelled as ties",
                    "## Tool use", "## Timing"):
        assert heading in text, heading
    assert "| accuracy |" in text and "| alpha |" in text and "| missing_final_answer | 2 |" in text
    path = write_report(summary, tmp_path)
    assert path.read_text() == text
    png = tmp_path / "accuracy_by_source.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_without_sources_or_accuracy(tmp_path):
    summary = compute_metrics([])
    write_report(summary, tmp_path)
    assert (tmp_path / "accuracy_by_source.png").is_file()
    assert "## By source" not in (tmp_path / "report.md").read_text()
