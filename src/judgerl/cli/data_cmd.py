"""`judgerl data …`: inspect preference-data files (``build`` is registered by cli/main.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import click
import typer

from judgerl.cli.errors import fail

app = typer.Typer(help="Inspect and build preference data.", no_args_is_help=True)


@app.callback()
def _data() -> None:
    """Inspect and build preference data."""


def parse_field_options(fields: list[str] | None) -> dict[str, str] | None:
    """``["prompt=question", "chosen=good"]`` -> ``{"prompt": "question", "chosen": "good"}``.

    Raises:
        click.BadParameter: an item without ``=`` or with an empty side, or a repeated key.
    """
    if not fields:
        return None
    mapping: dict[str, str] = {}
    for item in fields:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise click.BadParameter(
                f"expected CANONICAL=RECORD_FIELD (e.g. prompt=question), got {item!r}", param_hint="--field"
            )
        if key in mapping:
            raise click.BadParameter(f"'{key}' is mapped twice", param_hint="--field")
        mapping[key] = value
    return mapping


def parse_label_map(items: list[str] | None) -> dict[str, str] | None:
    """``["-1=first", "0=tie"]`` -> ``{"-1": "first", "0": "tie"}`` (the generic format's label map).

    Raises:
        click.BadParameter: an item without ``=``, an empty side, or a repeated label value.
    """
    if not items:
        return None
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.rpartition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise click.BadParameter(f"expected VALUE=first|second|tie, got {item!r}", param_hint="--label-map")
        if key in out:
            raise click.BadParameter(f"label value {key!r} is mapped twice", param_hint="--label-map")
        out[key] = value
    return out


_LABEL_HELP = "With --field label=…: what a label value means, VALUE=first|second|tie (repeatable; unmapped = error)."
_SPLIT_HELP = "Split of a save_to_disk DatasetDict or Hub dataset (default: its only split)."
_CONFIG_HELP = "Configuration of a Hub dataset."

_FORMAT_HELP = (
    "Format name: llmbar, pandalm, judgebench, rmbench, autoj, rewardbench, rewardbench2, helpsteer3, ultrafeedback, "
    "chat-pairs, arena, mtbench-human, ppe, hh-rlhf, generic, judgerl. "
    "Default: detect from the first records."
)
_FIELD_HELP = (
    "Field mapping for the generic format, CANONICAL=RECORD_FIELD, repeatable: prompt=…, chosen=…, "
    "rejected=… (required) or first=…, second=…, label=… with --label-map; id, source, tie, chosen_score, "
    "rejected_score (optional)."
)


def inspect_command(
    path: Annotated[Path, typer.Argument(help="JSON / JSON Lines (optionally gzipped), parquet, CSV, a "
                                         "save_to_disk directory or a Hub dataset name.")],
    format: Annotated[str | None, typer.Option("--format", "-f", help=_FORMAT_HELP)] = None,
    field: Annotated[list[str] | None, typer.Option("--field", help=_FIELD_HELP)] = None,
    label_map: Annotated[list[str] | None, typer.Option("--label-map", help=_LABEL_HELP)] = None,
    split: Annotated[str | None, typer.Option("--split", help=_SPLIT_HELP)] = None,
    config: Annotated[str | None, typer.Option("--config", help=_CONFIG_HELP)] = None,
    skip_invalid: Annotated[
        bool, typer.Option("--skip-invalid", help="Skip and count bad records instead of stopping.")
    ] = False,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Read at most this many pairs.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    show_errors: Annotated[
        int, typer.Option("--show-errors", min=0, help="With --skip-invalid: skip reasons to print.")
    ] = 5,
) -> None:
    """Say which format PATH is and count its records, pairs, ties, identical-response pairs and sources."""
    from judgerl.data import DataFormatError, load_pairs

    field_map = parse_field_options(field)
    try:
        result = load_pairs(path, format=format, field_map=field_map, skip_invalid=skip_invalid, limit=limit,
                            split=split, config=config, label_map=parse_label_map(label_map))
    except (DataFormatError, ValueError, FileNotFoundError, IsADirectoryError) as e:
        fail(e)
    if result.notice and not as_json:
        typer.echo(result.notice, err=True)

    summary = result.summary()
    summary["detected"] = format is None and field_map is None
    if result.notice:
        summary["notice"] = result.notice
    if as_json:
        summary["errors"] = result.errors[:show_errors]
        typer.echo(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    _print_summary(summary, result.errors[:show_errors])


def _print_summary(summary: dict, errors: list[str]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(soft_wrap=True)
    how = "detected" if summary["detected"] else "given"
    identical = summary["identical"]
    note = " (non-tie pairs with the same response twice: no judge can be position-consistent)"
    rows = [
        ("file", escape(summary["path"])),
        ("format", f"{summary['format']} ({how})"),
        ("records", summary["records"]),
        ("pairs", summary["pairs"]),
        ("ties", summary["ties"]),
        ("identical", f"{identical}{note if identical else ''}"),
        ("skipped", summary["skipped"]),
    ]
    for label, value in rows:
        console.print(f"[bold]{label:<10}[/bold]{value}", highlight=False)
    table = Table(title="pairs by source", title_justify="left")
    table.add_column("source")
    table.add_column("pairs", justify="right")
    table.add_column("ties", justify="right")
    table.add_column("identical", justify="right")
    for source, counts in summary["sources"].items():
        table.add_row(
            escape(source) or "(none)", str(counts["pairs"]), str(counts["ties"]), str(counts["identical"])
        )
    console.print(table)
    if errors:
        console.print(f"[bold]first {len(errors)} skipped record(s):[/bold]")
        for message in errors:
            console.print(f"  {message}", highlight=False, markup=False)


app.command("inspect")(inspect_command)
