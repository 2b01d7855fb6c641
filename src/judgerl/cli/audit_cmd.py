"""`judgerl audit FILE`: flag reward hacking (policy refusals, fabricated policies, fake end markers,
self-evaluations, master keys) in policy outputs; see judgerl.audit and docs/audit.md."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

_FIELD_HELP = (
    "Field mapping CANONICAL=RECORD_FIELD (repeatable; dotted paths allowed): response=… (default 'response'), "
    "prompt=…, id=…, step=…, e.g. --field response=output --field step=meta.step."
)


def audit_command(
    path: Annotated[Path, typer.Argument(help="JSON / JSON Lines file of responses (optionally gzipped): "
                                              "response, and optionally id, prompt, step.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output directory (audit.jsonl, summary.json, "
                                                                  "report.md, audit_rates.png). Default: "
                                                                  "<file stem>_audit.")] = None,
    field: Annotated[list[str] | None, typer.Option("--field", help=_FIELD_HELP)] = None,
    master_key: Annotated[list[str] | None, typer.Option("--master-key", help="Extra master-key response to "
                                                                              "flag (repeatable), added to the "
                                                                              "defaults.")] = None,
    no_default_master_keys: Annotated[bool, typer.Option("--no-default-master-keys", help="Use only the "
                                                         "--master-key values (empty and punctuation-only "
                                                         "responses are still flagged).")] = False,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Skip and count bad records instead of "
                                               "stopping.")] = False,
) -> None:
    """Audit policy responses for reward hacking: one flags list per response, rates per kind and per step."""
    from judgerl.audit import DEFAULT_CONFIG, AuditConfig, audit_records, load_audit_records, write_audit
    from judgerl.cli.data_cmd import parse_field_options
    from judgerl.data.formats.base import dataset_stem

    fmap = parse_field_options(field)
    records, errors = load_audit_records(path, fmap, skip_invalid=skip_invalid)
    if errors:
        typer.echo(f"skipped {len(errors)} invalid records in {path} (first: {errors[0]})", err=True)
    if not records:
        raise ValueError(f"{path}: no records to audit")
    config = AuditConfig(master_keys=()) if no_default_master_keys else DEFAULT_CONFIG
    config = config.with_master_keys(master_key or [])
    results, report = audit_records(records, config)
    out_dir = out if out is not None else Path(f"{dataset_stem(path)}_audit")
    info = {"input": str(path), "field_map": fmap or {}, "n_skipped_records": len(errors),
            "extra_master_keys": list(master_key or []), "default_master_keys": not no_default_master_keys}
    paths = write_audit(out_dir, records, results, report, info=info)
    typer.echo(f"audited {report.n} responses; flagged (any kind): {report.counts['any']} "
               f"({100 * report.rates['any']:.1f}%)")
    for kind in report.kinds:
        typer.echo(f"  {kind:<18} {report.counts[kind]:>6}  {100 * report.rates[kind]:5.1f}%")
    if report.by_step:
        typer.echo(f"  per-step rates for {len(report.by_step)} steps in {paths['summary']}")
    typer.echo(f"wrote {paths['audit']}, {paths['summary']}, {paths['report']}, {paths['plot']}")
