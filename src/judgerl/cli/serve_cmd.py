"""`judgerl serve` (being written: owned by the serving work)."""


def serve_command() -> None:
    """Serve a judge over HTTP."""
    raise SystemExit("judgerl serve is not available in this build yet")
