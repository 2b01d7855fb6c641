"""Worker process for :class:`judgerl.verify.math.MathVerifier` (``python -m judgerl.verify._mathworker``).

Protocol: one JSON request per stdin line ``{"gold": str, "pred": str}``, one JSON reply per stdout
line ``{"ok": true|false|null}`` or ``{"error": "Type: message"}``. Runs math-verify in this
process's main thread, where its SIGALRM-based timeout (argument: seconds) is valid.
"""

from __future__ import annotations

import json
import sys


def check(gold: str, pred: str, timeout: int) -> bool | None:
    """True/False whether ``pred`` equals ``gold``; None when ``gold`` does not parse."""
    from math_verify import parse, verify

    gold_parsed = parse(gold, parsing_timeout=timeout)
    if not gold_parsed:
        return None
    pred_parsed = parse(pred, parsing_timeout=timeout)
    if not pred_parsed:
        return False
    return bool(verify(gold_parsed, pred_parsed, timeout_seconds=timeout))


def main() -> None:  # pragma: no cover - exercised through MathVerifier in a child process
    import logging

    logging.disable(logging.WARNING)  # math-verify logs parse failures; the parent reports results
    timeout = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    import math_verify  # noqa: F401  (import before answering the first request)

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
