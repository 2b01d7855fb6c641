"""`judgerl eval` (being written: owned by the eval-runner work)."""


def eval_command() -> None:
    """Evaluate a judge on preference data."""
    raise SystemExit("judgerl eval is not available in this build yet")
