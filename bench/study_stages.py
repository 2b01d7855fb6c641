"""Resumable stage bookkeeping of the judge-as-reward studies (``bench/bench_judge_as_reward.py``,
``bench/bench_policy_reward.py``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable


def log(msg: str) -> None:
    """Print ``msg`` with the wall-clock time (HH:MM:SS), flushed (the study's log is read while it runs)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Stages:
    """Resumable stage bookkeeping: ``stages.json`` holds each finished stage's result, its wall time and the
    load average (1, 5, 15 min) at its start and end; the budget is wall-clock.

    Args:
        out: Study directory. budget_min: Minutes this invocation may run.
        clock, loadavg: Time and load sources (tests pass fakes).
    """

    def __init__(self, out: Path, budget_min: float, *, clock: Callable[[], float] = time.time,
                 loadavg: Callable[[], tuple[float, float, float]] = os.getloadavg) -> None:
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.clock, self.loadavg = clock, loadavg
        self.deadline = clock() + 60 * budget_min
        self.path = self.out / "stages.json"
        self.stages: dict[str, Any] = json.loads(self.path.read_text()) if self.path.is_file() else {}

    def left_min(self) -> float:
        """Minutes of budget left."""
        return max(0.0, (self.deadline - self.clock()) / 60)

    def done(self, name: str) -> bool:
        return name in self.stages

    def result(self, name: str) -> Any:
        return self.stages[name]["result"]

    def forget(self, name: str) -> None:
        """Drop a finished stage's record (it runs again); for a stage whose inputs grew (the agreement table)."""
        self.stages.pop(name, None)

    def run(self, name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` once: a finished stage returns its saved result without running.

        Raises:
            SystemExit: the budget is spent before the stage, or ``fn`` returned None (stopped by the
                budget: the stage is not recorded, the next invocation runs it again).
        """
        if name in self.stages:
            log(f"{name}: done before")
            return self.stages[name]["result"]
        if self.left_min() <= 0.5:
            raise SystemExit(f"budget spent before stage {name}; rerun the same command to continue")
        log(f"{name}: start ({self.left_min():.0f} min of budget left)")
        t0, load0 = self.clock(), [round(x, 2) for x in self.loadavg()]
        result = fn(*args, **kwargs)
        if result is None:
            raise SystemExit(f"budget spent during stage {name}; rerun the same command to continue")
        self.stages[name] = {"result": result, "seconds": round(self.clock() - t0, 1), "load_start": load0,
                             "load_end": [round(x, 2) for x in self.loadavg()]}
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.stages, indent=2, default=str))
        os.replace(tmp, self.path)
        log(f"{name}: done in {self.stages[name]['seconds']:.0f} s")
        return result
