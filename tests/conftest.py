"""Shared fixtures and the ``slow`` marker gate.

Slow tests (embedded model, training) run when ``--runslow`` is given or ``JUDGERL_RUNSLOW=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("JUDGERL_SHARED_DATA", REPO.parent / "shared" / "data"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow") or os.environ.get("JUDGERL_RUNSLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: pass --runslow or set JUDGERL_RUNSLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (real public datasets); tests needing it fail loudly if it is missing."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data not found at {SHARED_DATA}; set JUDGERL_SHARED_DATA")
    return SHARED_DATA


@pytest.fixture(scope="session")
def embedded_model_dir() -> Path:
    """The embedded SmolLM2-135M model converted to safetensors (cached across runs)."""
    from judgerl.backends.embedded import embedded_model_path

    return embedded_model_path()


@pytest.fixture(scope="session")
def embedded_backend(embedded_model_dir: Path):
    """One shared HF backend on the embedded model (loading it once per test session)."""
    from judgerl.backends.hf import HFBackend

    return HFBackend(str(embedded_model_dir), batch_size=16)


@pytest.fixture(scope="module")
def bwrap():
    """A bubblewrap sandbox with one warm worker and a 3 s limit, per test module (the red-team rows); skipped
    where bubblewrap is not usable. Modules that need other settings define their own ``bwrap``."""
    from judgerl.tools import bwrap_available, get_sandbox

    if not bwrap_available():
        pytest.skip("bubblewrap is not usable here")
    with get_sandbox("bwrap", pool_size=1, timeout_s=3.0) as sandbox:
        yield sandbox
