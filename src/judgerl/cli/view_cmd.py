"""`judgerl view RUN_DIR [RUN_DIR ...]`: write a self-contained HTML viewer of runs (see judgerl.view and
docs/viewer.md), optionally served on 127.0.0.1."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import List, Optional

import typer


def view_command(
    runs: List[Path] = typer.Argument(..., help="Run directories: eval (judgments.jsonl), arena, audit "
                                      "(audit.jsonl) or policy study (curves.jsonl). Two eval runs are also "
                                      "compared, disagreements first."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="The HTML file to write (default: "
                                       "RUN_DIR/view.html for one run, ./judgerl-view.html for several)."),
    data: Optional[Path] = typer.Option(None, "--data", "-d", help="Preference-data file to show the eval "
                                        "pairs' texts from (default: the one named in each run.json)."),
    serve: bool = typer.Option(False, "--serve", help="Also serve the page on http://127.0.0.1:PORT/ until "
                               "Ctrl-C (the file works without it, from file://)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port of --serve (0: any free port)."),
) -> None:
    """Write a static HTML page to browse runs: metrics with CIs, filterable judgments, leaderboards, audits."""
    from judgerl.view import serve_page, write_page

    target = out if out is not None else (runs[0] / "view.html" if len(runs) == 1 else Path("judgerl-view.html"))
    with warnings.catch_warnings(record=True) as caught:  # e.g. a torn last line: one line each, no source
        warnings.simplefilter("always")
        page = write_page(list(runs), target, data=data)
    for w in caught:
        typer.echo(f"warning: {w.message}", err=True)
    typer.echo(f"wrote {page} ({page.stat().st_size / 1e6:.1f} MB); open {page.resolve().as_uri()}")
    if not serve:
        return
    server = serve_page(page.resolve(), port)
    typer.echo(f"serving http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
