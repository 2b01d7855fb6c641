"""One error style and exit-code convention for every ``judgerl`` command.

Every command ends a failure the same way: one line ``judgerl: error: <message>`` on stderr (a usage error
also prints the command's usage line first, as click does), and the exit code says what kind of failure it
was:

====  ===================================================================================================
code  meaning
====  ===================================================================================================
0     success
1     a runtime failure: the input was fine but the work failed (a model or generation failure, a server
      that failed, training that broke)
2     a usage or input error: a bad option or option value, a missing / unreadable / malformed data file,
      a run directory whose saved configuration differs
130   interrupted (Ctrl-C); finished work is kept for resuming
====  ===================================================================================================

Commands call :func:`fail` (``code=USAGE_ERROR`` by default); :func:`judgerl.cli.main.main` turns errors
no command caught into the same line: click usage errors and judgerl's input errors (``ValueError``,
``OSError``, ``ImportError``) exit 2, anything else exits 1 (``JUDGERL_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

#: The prefix of every error line.
PREFIX = "judgerl: error: "
#: Exit code of a runtime failure.
RUNTIME_ERROR = 1
#: Exit code of a usage or input error.
USAGE_ERROR = 2
#: Exit code of an interrupted command.
INTERRUPTED = 130


def error_line(message: object) -> str:
    """``judgerl: error: <message>`` (the message's own lines kept)."""
    return f"{PREFIX}{message}"


def print_error(message: object) -> None:
    """Write :func:`error_line` to stderr."""
    print(error_line(message), file=sys.stderr, flush=True)


def fail(message: object, code: int = USAGE_ERROR) -> NoReturn:
    """End the command: :func:`error_line` on stderr, exit ``code`` (default :data:`USAGE_ERROR`; give
    :data:`RUNTIME_ERROR` for a failure that is not the input's fault)."""
    print_error(message)
    raise SystemExit(code)


def interrupted(out: object, what: str = "judgments") -> NoReturn:
    """End a resumable command stopped by Ctrl-C: say where its finished ``what`` are kept (``out``) and
    exit :data:`INTERRUPTED` (call it from ``except KeyboardInterrupt``)."""
    print(f"\ninterrupted: finished {what} are saved in {out}; run the same command to resume", file=sys.stderr,
          flush=True)
    raise SystemExit(INTERRUPTED) from None


def show_click_error(e: Any) -> int:
    """Print a click exception in judgerl's style and return its exit code: a usage error (bad option,
    missing argument, ``typer.BadParameter``) shows the usage line and the help hint, then the error line,
    and exits 2; any other ``click.ClickException`` exits with its own code."""
    ctx = getattr(e, "ctx", None)
    if ctx is not None and getattr(e, "exit_code", None) == USAGE_ERROR:
        print(ctx.get_usage(), file=sys.stderr)
        if ctx.command.get_help_option(ctx) is not None:
            print(f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.", file=sys.stderr)
    print_error(e.format_message())
    return int(e.exit_code)


__all__ = ["INTERRUPTED", "PREFIX", "RUNTIME_ERROR", "USAGE_ERROR", "error_line", "fail", "interrupted",
           "print_error", "show_click_error"]
