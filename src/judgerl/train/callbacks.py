"""Per-step training logs (JSONL) and PNG training curves.

TRL's GRPOTrainer logs, at every ``logging_steps``, the mean and std of every reward function
(``rewards/<name>/mean``), the total ``reward``, completion lengths (``completions/mean_length``,
``completions/clipped_ratio``), ``kl``, ``clip_ratio/*`` and the metrics judgerl's rewards add
through TRL's ``log_metric`` hook: ``judge/pairwise_accuracy``, ``judge/pairwise_valid_format``,
``judge/position_consistent_accuracy``, ``judge/pointwise_pair_accuracy``, ``judge/valid_format``,
``judge/tool_use_rate``, ``dapo/*``. :class:`MetricsLogger` appends each of those log dicts, with
the global step and wall time, as one line of ``metrics.jsonl`` and draws the curves at the end.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

#: Metric-name prefixes drawn in the PNG curves (one panel each).
PLOT_PREFIXES = ("reward", "rewards/", "judge/", "completions/mean_length", "tools/", "dapo/", "kl", "loss")


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` file (empty list if it does not exist)."""
    p = Path(path)
    if not p.is_file():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def plot_metrics(records: list[dict[str, Any]], out_png: str | Path) -> Path | None:
    """Draw one panel per logged metric (x = global step) into ``out_png``.

    Only metrics whose name starts with one of :data:`PLOT_PREFIXES` are drawn (std columns are
    skipped). Returns the path, or None when there is nothing to plot.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [r for r in records if "step" in r and not any(k.startswith("eval_") for k in r)]
    keys = sorted(
        {
            k
            for r in train
            for k, v in r.items()
            if isinstance(v, (int, float)) and k.startswith(PLOT_PREFIXES) and not k.endswith("/std")
        }
    )
    if not keys:
        return None
    cols = 3
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.8 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        pts = [(r["step"], r[key]) for r in train if isinstance(r.get(key), (int, float))]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=2)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    fig.tight_layout()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


class MetricsLogger(TrainerCallback):
    """Append every trainer log dict to ``<output_dir>/metrics.jsonl``; plot ``curves.png`` at the end.

    Each line: ``{"step": global_step, "time": unix seconds, "phase": phase, **logs}``. Appending
    (not truncating) keeps the history across resumed runs. Only the main process writes.
    """

    def __init__(self, output_dir: str | Path, phase: str = "grpo") -> None:
        self.dir = Path(output_dir)
        self.phase = phase
        self.path = self.dir / "metrics.jsonl"

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero or not logs:
            return
        rec = {"step": state.global_step, "time": round(time.time(), 3), "phase": self.phase}
        rec.update({k: v for k, v in logs.items() if isinstance(v, (int, float, str, bool)) or v is None})
        self.dir.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        records = [r for r in read_metrics(self.path) if r.get("phase") == self.phase]
        plot_metrics(records, self.dir / f"curves_{self.phase}.png")


class StepCount(TrainerCallback):
    """Records the optimizer steps a training made (``state.global_step`` at its end) in :attr:`steps`: what a
    stage reports as done, since the :class:`TimeLimit` may stop it before ``max_steps``."""

    def __init__(self) -> None:
        self.steps: int | None = None

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.steps = int(state.global_step)


class TimeLimit(TrainerCallback):
    """Stop training after the step during which the wall clock passed ``deadline`` (unix seconds).

    A checkpoint is saved at that step (``control.should_save``), so ``--resume`` continues from it.
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if time.time() >= self.deadline:
            control.should_training_stop = True
            control.should_save = True
