"""The ``judgerl`` command. Each sub-command lives in its own module under judgerl.cli."""

from __future__ import annotations

import gc
import os
import sys
from typing import Sequence

import typer

app = typer.Typer(
    name="judgerl",
    help="Build, train with RL, evaluate and serve reasoning LLM judges.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    # Sub-command modules only import heavy libraries inside their functions, so `judgerl --help`
    # stays fast.
    from judgerl.cli import arena_cmd, audit_cmd, data_build_cmd, data_cmd, eval_cmd, probe_cmd, serve_cmd, train_cmd

    app.command("eval")(eval_cmd.eval_command)
    data_cmd.app.command("build")(data_build_cmd.build_command)
    app.add_typer(data_cmd.app, name="data")
    app.command("train")(train_cmd.train_command)
    app.command("serve")(serve_cmd.serve_command)
    app.command("audit")(audit_cmd.audit_command)
    app.command("probe")(probe_cmd.probe_command)
    app.command("arena")(arena_cmd.arena_command)
    from judgerl.cli import label_cmd

    app.command("label")(label_cmd.label_command)
    app.command("agree")(label_cmd.agree_command)
    from judgerl.cli import view_cmd

    app.command("view")(view_cmd.view_command)
    from judgerl.cli import export_cmd

    app.command("export")(export_cmd.export_command)


_register()

# typer >= 0.2x raises usage errors (missing argument, bad option, typer.BadParameter) from its
# own vendored copy of click, which is not a subclass of click.ClickException.
try:
    from typer._click.exceptions import ClickException as _TyperClickException

    _VENDORED_CLICK_ERRORS: tuple[type[Exception], ...] = (_TyperClickException,)
except ImportError:  # typer using the real click package
    _VENDORED_CLICK_ERRORS = ()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: sys.argv[1:]) and return the exit code.

    Run as the ``judgerl`` command (``argv`` None), the objects alive at the end are moved to the
    garbage collector's permanent generation (:func:`gc.freeze`), so the interpreter's shutdown
    skips its collection passes over torch's and transformers' object graphs: ~1 s of every command
    on 2 cores (``bench/bench_startup.py``). Objects are still released by reference counting and
    atexit handlers still run; every file judgerl writes is closed before this point.
    """
    try:
        return _run(argv)
    finally:
        if argv is None:
            gc.freeze()


def _run(argv: Sequence[str] | None) -> int:
    try:
        rv = app(args=list(argv) if argv is not None else sys.argv[1:], standalone_mode=False)
    except SystemExit as e:  # typer/click exit paths
        return int(e.code or 0)
    except typer.Exit as e:
        return int(e.exit_code)
    except Exception as e:  # click usage errors and our own clear errors: one convention (judgerl.cli.errors)
        import click

        from judgerl.cli.errors import INTERRUPTED, RUNTIME_ERROR, USAGE_ERROR, print_error, show_click_error

        if isinstance(e, (click.exceptions.ClickException, *_VENDORED_CLICK_ERRORS)):
            return show_click_error(e)
        if isinstance(e, click.exceptions.Abort):
            return INTERRUPTED
        if os.environ.get("JUDGERL_DEBUG") == "1":  # the full traceback instead of one line
            raise
        # Bad input (a missing or unreadable file, a malformed record, a bad option value) ends in one
        # clear line, exit 2; judgerl's own errors already name the file, line and field. Anything else is a
        # runtime failure: one line naming the exception, exit 1.
        if isinstance(e, (ValueError, OSError, ImportError)):
            print_error(e)
            return USAGE_ERROR
        print_error(f"{type(e).__name__}: {e} (JUDGERL_DEBUG=1 shows the traceback)")
        return RUNTIME_ERROR
    # With standalone_mode=False click returns the exit code of typer.Exit instead of raising it.
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
