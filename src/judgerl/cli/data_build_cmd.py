"""`judgerl data build` (being written: owned by the verifiable-pairs work)."""


def build_command() -> None:
    """Build verifiable preference pairs."""
    raise SystemExit("judgerl data build is not available in this build yet")
