"""Worker process for :class:`judgerl.verify.math.MathVerifier` (``python -m judgerl.verify._mathworker``).

Protocol: one JSON request per stdin line ``{"gold": str, "pred": str}``, one JSON reply per stdout
line ``{"ok": true|false|null}`` or ``{"error": "Type: message"}``. Runs
:func:`judgerl.verify.answers.equivalent` (math-verify's parser + exact sympy comparison) in this
process's main thread, where math-verify's SIGALRM-based timeout (argument: seconds) is valid.
"""

from __future__ import annotations

import json
import sys


def check(gold: str, pred: str, timeout: int) -> bool | None:
    """:func:`judgerl.verify.answers.equivalent` (True / False / None = undecided) for two final
    answers, under math-verify's SIGALRM timeout of ``timeout`` seconds when run in the main thread.

    Raises:
        TimeoutError: the comparison took longer than ``timeout`` seconds.
    """
    import threading

    from math_verify.errors import TimeoutException
    from math_verify.utils import timeout as with_timeout

    from judgerl.verify.answers import equivalent

    if threading.current_thread() is not threading.main_thread():
        return equivalent(gold, pred)  # signals work only in the main thread; the parent's deadline holds
    try:
        return with_timeout(timeout_seconds=timeout)(equivalent)(gold, pred)
    except TimeoutException:  # a BaseException: turn it into an ordinary error reply
        raise TimeoutError(f"comparison took longer than {timeout} s") from None


def main() -> None:  # pragma: no cover - exercised through MathVerifier in a child process
    import logging

    logging.disable(logging.WARNING)  # math-verify logs parse failures; the parent reports results
    timeout = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    from judgerl.verify.mathexpr import to_sympy

    to_sympy("1")  # import sympy and math-verify's LaTeX parser before the first request

    for line in sys.stdin:
        try:
            req = json.loads(line)
            reply = {"ok": check(str(req["gold"]), str(req["pred"]), timeout)}
        except Exception as e:  # an undecided check, not a crash of the worker
            reply = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    main()
