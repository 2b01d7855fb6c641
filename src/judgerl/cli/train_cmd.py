"""`judgerl train` (being written: owned by the training work)."""


def train_command() -> None:
    """Train a judge with RL."""
    raise SystemExit("judgerl train is not available in this build yet")
