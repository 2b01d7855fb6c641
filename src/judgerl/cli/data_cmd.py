"""`judgerl data …` (being written: owned by the data-loader work)."""

import typer

app = typer.Typer(help="Inspect and build preference data.", no_args_is_help=True)
