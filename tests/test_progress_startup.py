"""Start-up and wrap-up cost of `judgerl eval` (issue 27): what the command's exit skips, and that
the report's plot does not import pyplot."""

from __future__ import annotations

import gc
import subprocess
import sys

from judgerl.cli.main import main


def test_gc_freeze_only_as_the_command(monkeypatch) -> None:
    before = gc.get_freeze_count()
    assert main(["--help"]) == 0
    assert gc.get_freeze_count() == before  # called with argv (tests, scripts): nothing frozen
    monkeypatch.setattr(sys, "argv", ["judgerl", "--help"])
    try:
        assert main() == 0
        assert gc.get_freeze_count() > before  # the console script's exit skips the last collections
    finally:
        gc.unfreeze()


def test_report_plot_without_pyplot(tmp_path) -> None:
    code = (
        "import sys, json\n"
        "from judgerl.eval.report import write_report\n"
        "s = {'accuracy': 0.5, 'accuracy_ci': [0.1, 0.9], 'by_source': {'a': {'accuracy': 0.5, 'n_pairs': 2}}}\n"
        f"write_report(s, {str(tmp_path)!r})\n"
        "print('matplotlib.pyplot' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert (tmp_path / "accuracy_by_source.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
