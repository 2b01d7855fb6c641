"""The resumable evaluation runner: judge every pair, write judgments incrementally, summarise.

Units of work. A *judgment sample* is one (pair, order, sample index):

* pairwise / listwise protocols judge every pair in **both orders**: ``"AB"`` shows the chosen
  response first (position A / 1), ``"BA"`` shows the rejected one first. Which order is judged
  first (``order_index`` 0) is drawn per pair from a hash of (seed, pair id), so the position of
  the chosen response in the data cannot leak into single-order numbers and the same seed always
  gives the same plan;
* pointwise protocols score each response on its own (``order`` = ``"chosen"`` / ``"rejected"``);
* with ``samples=N`` every unit is sampled N times (J1 test-time scaling; aggregated by
  :mod:`judgerl.eval.metrics`).

Files in ``out_dir``:

* ``run.json`` — the run configuration; resuming into a directory whose configuration differs is
  refused (:class:`RunConfigMismatch`) unless ``resume=False`` (overwrite);
* ``judgments.jsonl`` — one record per judgment sample, appended and fsync-ed after every batch, so
  an interrupted run resumes where it stopped without losing or repeating a judgment (a torn last
  line from a crash is dropped and redone);
* ``summary.json``, ``report.md``, ``accuracy_by_source.png`` — written at the end.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from judgerl.backends.base import Backend, SamplingParams
from judgerl.eval.metrics import KINDS, compute_metrics, sample_choice
from judgerl.types import Decision, Messages, PreferencePair

JUDGMENTS_FILE = "judgments.jsonl"
RUN_FILE = "run.json"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"
PLOT_FILE = "accuracy_by_source.png"
#: run.json fields that must match to resume into an existing directory.
CONFIG_KEYS = ("model", "protocol", "samples", "seed", "sampling", "tools", "max_tool_rounds", "force_answer")
#: Values assumed for keys that older run.json files lack.
_CONFIG_DEFAULTS = {"force_answer": False}


class RunConfigMismatch(ValueError):
    """``out_dir`` holds a run with a different configuration (or different pairs under the same ids)."""


@dataclass(frozen=True)
class WorkUnit:
    """One judgment sample to produce.

    Attributes:
        pair: The pair being judged.
        order: ``"AB"``/``"BA"`` (pairwise, listwise) or ``"chosen"``/``"rejected"`` (pointwise).
        order_index: 0 for the order judged first (seeded per pair), 1 for the other.
        sample: 0-based sample index (< samples).
    """

    pair: PreferencePair
    order: str
    order_index: int
    sample: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.pair.id, self.order, self.sample)

    @property
    def chosen_index(self) -> int | None:
        """Position (0-based) of the chosen response in the prompt; None for pointwise."""
        return {"AB": 0, "BA": 1}.get(self.order)

    def responses(self) -> list[str]:
        """The responses in the order shown to the judge."""
        p = self.pair
        return {
            "AB": [p.chosen, p.rejected],
            "BA": [p.rejected, p.chosen],
            "chosen": [p.chosen],
            "rejected": [p.rejected],
        }[self.order]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pair_hash(pair: PreferencePair) -> str:
    """Content hash of a pair (16 hex chars); detects a resumed run meeting changed data."""
    return _digest(json.dumps(pair.to_dict(), sort_keys=True, ensure_ascii=False, default=str))[:16]


def prompt_hash(messages: Messages) -> str:
    """Hash (16 hex chars) of the exact chat messages sent to the judge."""
    return _digest(json.dumps([dict(m) for m in messages], sort_keys=True, ensure_ascii=False))[:16]


def first_order(seed: int, pair_id: str, kind: str) -> str:
    """The order judged first for a pair: a pure function of (seed, pair id).

    Uses SHA-256 (not Python's salted ``hash``), so it is identical across processes and machines.
    Returns ``"AB"``/``"BA"`` for pairwise and listwise kinds, ``"chosen"``/``"rejected"`` for pointwise.
    """
    bit = int(_digest(f"{seed}\x00{pair_id}")[:8], 16) & 1
    orders = ("chosen", "rejected") if kind == "pointwise" else ("AB", "BA")
    return orders[bit]


def plan_units(pairs: Sequence[PreferencePair], kind: str, samples: int, seed: int) -> list[WorkUnit]:
    """All judgment samples of a run, in execution order (pair by pair, first order first).

    Both orders of a pair (and all its samples) are adjacent, so with a batch size >= 2·samples
    they go to the backend in the same batch (J1 position-agnostic batching).

    Raises:
        ValueError: unknown ``kind``, ``samples < 1``, or duplicate pair ids (named).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown protocol kind {kind!r}; expected one of {KINDS}")
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    seen: set[str] = set()
    units: list[WorkUnit] = []
    for p in pairs:
        if p.id in seen:
            raise ValueError(f"duplicate pair id {p.id!r}: pair ids must be unique to resume a run")
        seen.add(p.id)
        first = first_order(seed, p.id, kind)
        orders = ("chosen", "rejected") if kind == "pointwise" else ("AB", "BA")
        second = orders[1] if first == orders[0] else orders[0]
        for oi, order in enumerate((first, second)):
            for k in range(samples):
                units.append(WorkUnit(p, order, oi, k))
    return units


# --------------------------------------------------------------------------- judgments.jsonl


def read_judgments(path: Path) -> list[dict[str, Any]]:
    """Read ``judgments.jsonl``, repairing a torn last line left by a crash.

    A last line that is not valid JSON (an interrupted write) is dropped and the file truncated
    to the last complete record, so appending continues cleanly.

    Returns:
        The records in file order ([] when the file does not exist).

    Raises:
        ValueError: a line other than the last is not a JSON object (names file and line).
    """
    if not path.exists():
        return []
    data = path.read_bytes()
    records: list[dict[str, Any]] = []
    offset = 0
    lines = data.split(b"\n")
    for lineno, raw in enumerate(lines, start=1):
        is_last = lineno == len(lines)
        end = offset + len(raw) + (0 if is_last else 1)
        if raw.strip():
            try:
                rec = json.loads(raw)
                if not isinstance(rec, dict):
                    raise ValueError("not a JSON object")
            except ValueError as e:
                rest_blank = all(not x.strip() for x in lines[lineno:])
                if rest_blank:
                    warnings.warn(f"{path}:{lineno}: dropping a torn last line ({len(raw)} bytes) left by an "
                                  "interrupted run; it will be redone", stacklevel=2)
                    with open(path, "r+b") as f:
                        f.truncate(offset)
                    break
                raise ValueError(f"{path}:{lineno}: corrupt judgment record ({e}); fix or delete the line") from e
            records.append(rec)
        offset = end
    else:
        if data and not data.endswith(b"\n"):  # a complete last record whose newline was not written
            with open(path, "ab") as f:
                f.write(b"\n")
    return records


class JudgmentWriter:
    """Append-only writer of judgment records: one JSON line each, flushed and fsync-ed per batch."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._f = open(path, "a", encoding="utf-8")

    def write_batch(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Append ``records`` and make them durable (flush + fsync) before returning."""
        self._f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> "JudgmentWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --------------------------------------------------------------------------- config / resume


def protocol_config(protocol: Any) -> dict[str, Any]:
    """Identity of a protocol for run.json: its name, kind and simple instance attributes."""
    cfg: dict[str, Any] = {"name": protocol.name, "kind": protocol.kind}
    for k, v in sorted(vars(protocol).items()):
        if not k.startswith("_") and isinstance(v, (str, int, float, bool, type(None))):
            cfg[k] = v
    return cfg


def _config_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    diffs = []
    for k in CONFIG_KEYS:
        before, now = old.get(k, _CONFIG_DEFAULTS.get(k)), new.get(k, _CONFIG_DEFAULTS.get(k))
        if before != now:
            diffs.append(f"{k}: {before!r} in run.json, {now!r} now")
    return diffs


def _clear_outputs(out: Path) -> None:
    for name in (JUDGMENTS_FILE, RUN_FILE, SUMMARY_FILE, REPORT_FILE, PLOT_FILE):
        p = out / name
        if p.is_file():
            p.unlink()
    shutil.rmtree(out / "plots", ignore_errors=True)


def _prepare_out_dir(out: Path, config: dict[str, Any], info: Mapping[str, Any], resume: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    run_file = out / RUN_FILE
    if not resume:
        _clear_outputs(out)
    elif run_file.exists():
        try:
            old = json.loads(run_file.read_text(encoding="utf-8"))["config"]
        except (ValueError, KeyError) as e:
            raise RunConfigMismatch(f"{run_file}: unreadable run configuration ({e}); use overwrite") from e
        diff = _config_diff(old, config)
        old_data = json.loads(run_file.read_text(encoding="utf-8")).get("info", {}).get("data")
        if old_data and info.get("data") and old_data != info.get("data"):
            diff.append(f"data: {old_data!r} in run.json, {info.get('data')!r} now")
        if diff:
            raise RunConfigMismatch(
                f"{out} holds a run with a different configuration ({'; '.join(diff)}). "
                "Use a new output directory, or overwrite (--overwrite / resume=False) to discard it."
            )
        return
    elif (out / JUDGMENTS_FILE).exists():
        raise RunConfigMismatch(f"{out / JUDGMENTS_FILE} exists without {RUN_FILE}; use overwrite to discard it")
    from judgerl import __version__

    payload = {"config": config, "info": dict(info), "judgerl_version": __version__,
               "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    _atomic_write_text(run_file, json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")


def _check_existing(records: Sequence[Mapping[str, Any]], units: Mapping[tuple[str, str, int], WorkUnit],
                    protocol: Any, tools: bool, path: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Index existing records by key; refuse records whose pair content or prompt changed."""
    done: dict[tuple[str, str, int], dict[str, Any]] = {}
    hashes: dict[str, str] = {}
    for i, r in enumerate(records, start=1):
        try:
            key = (str(r["pair_id"]), str(r["order"]), int(r["sample"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{path}:{i}: judgment record lacks pair_id/order/sample ({e})") from e
        if key in done:
            warnings.warn(f"{path}:{i}: duplicate judgment {key}; keeping the first", stacklevel=2)
            continue
        unit = units.get(key)
        if unit is not None:
            ph = hashes.setdefault(unit.pair.id, pair_hash(unit.pair))
            if r.get("pair_hash") != ph:
                raise RunConfigMismatch(
                    f"{path}:{i}: pair {unit.pair.id!r} has different content than when it was judged; "
                    "the data changed — use a new output directory or overwrite"
                )
            if r.get("prompt_hash") != prompt_hash(protocol.build(unit.pair.prompt, unit.responses(), tools=tools)):
                raise RunConfigMismatch(
                    f"{path}:{i}: the prompt for {key} differs from the recorded one (protocol template "
                    "changed?); use a new output directory or overwrite"
                )
        done[key] = dict(r)
    return done


# --------------------------------------------------------------------------- running


def _batches(units: Sequence[WorkUnit], size: int) -> Iterator[list[WorkUnit]]:
    for i in range(0, len(units), size):
        yield list(units[i : i + size])


def _make_record(unit: WorkUnit, kind: str, protocol: Any, messages: Messages, text: str, decision: Decision,
                 prompt_tokens: int, completion_tokens: int, finish_reason: str,
                 trajectory: Mapping[str, Any] | None, save_messages: bool) -> dict[str, Any]:
    p = unit.pair
    gold = None
    if p.chosen_score is not None and p.rejected_score is not None:
        gold = [float(p.chosen_score), float(p.rejected_score)]
    rec: dict[str, Any] = {
        "pair_id": p.id,
        "source": p.source,
        "kind": kind,
        "protocol": protocol.name,
        "order": unit.order,
        "order_index": unit.order_index,
        "sample": unit.sample,
        "chosen_index": unit.chosen_index,
        "gold_tie": bool(p.tie),
        "gold_scores": gold,
        "pair_hash": pair_hash(p),
        "prompt_hash": prompt_hash(messages),
        "raw_output": text,
        "decision": decision.to_dict(),
    }
    if kind == "pointwise":
        rec["choice"] = None
        rec["correct"] = None
    else:
        choice = sample_choice(rec)
        rec["choice"] = choice
        rec["correct"] = None if (p.tie or choice is None) else choice == "chosen"
    rec.update(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, finish_reason=finish_reason,
               trajectory=dict(trajectory) if trajectory is not None else None)
    if save_messages:
        rec["messages"] = [dict(m) for m in messages]
    return rec


#: Invalid reasons that answer forcing repairs: the judge never reached its final answer.
FORCEABLE_REASONS = frozenset({"missing_final_answer", "unterminated_thinking"})
#: Protocols whose final answer is a single tag (PaS/PaVS need two or three).
SINGLE_TAG_PROTOCOLS = frozenset({"pav", "pos", "listwise"})
#: Tokens generated after the forced answer tag (enough for a verdict or two scores).
FORCED_ANSWER_TOKENS = 24


def forced_answer_suffix(protocol: Any, text: str) -> str:
    """Text appended to an unfinished judgment to force the final answer ("answer forcing").

    Closes an open code fence and an open ``<think>``, then opens the protocol's first answer tag, so that a few more tokens
    give the decision; the same idea as s1's budget forcing (Muennighoff et al., 2025), used here
    only when the judge never wrote a final answer.
    """
    suffix = ""
    if text.count("```") % 2 == 1:
        # Small judges often echo a response's code and never close the fence; the parser ignores
        # code blocks, so an answer tag written inside the open fence would never be read.
        suffix += "\n```"
    lower = text.lower()
    unclosed = lower.rfind("<think>") > lower.rfind("</think>")
    return suffix + ("\n</think>\n" if unclosed else "\n\n") + f"<{protocol.answer_tags[0]}>"


def _force_answers(backend: Backend, protocol: Any, prompts: Sequence[Messages], texts: list[str],
                   decisions: list[Decision], params: SamplingParams) -> tuple[list[str], list[Decision], list[int]]:
    """Re-ask, with the answer tag prefilled, every judgment that never reached a final answer.

    Returns the new texts, decisions and the extra generated tokens per item (0 when not forced).
    """
    idx = [i for i, d in enumerate(decisions) if not d.valid and d.invalid_reason in FORCEABLE_REASONS]
    extra = [0] * len(texts)
    if not idx:
        return texts, decisions, extra
    prefixes = {i: texts[i] + forced_answer_suffix(protocol, texts[i]) for i in idx}
    fprompts = [list(prompts[i]) + [{"role": "assistant", "content": prefixes[i]}] for i in idx]
    # Where one short tag is the whole answer, stop at its closing tag or the end of the line: small
    # judges otherwise run on into code or a second, conflicting answer.
    close = f"</{protocol.answer_tags[0]}>" if protocol.name in SINGLE_TAG_PROTOCOLS else None
    fparams = dataclasses.replace(params, max_new_tokens=FORCED_ANSWER_TOKENS,
                                  stop=(close, "\n") if close else ())
    outs = backend.generate(fprompts, fparams)
    texts, decisions = list(texts), list(decisions)
    for i, c in zip(idx, outs, strict=True):
        texts[i] = prefixes[i] + c.text + (close if close and close not in c.text else "")
        decisions[i] = protocol.parse(texts[i])
        extra[i] = c.completion_tokens
    return texts, decisions, extra


def _judge_batch(backend: Backend, protocol: Any, kind: str, batch: Sequence[WorkUnit], params: SamplingParams,
                 sandbox: Any, max_tool_rounds: int, save_messages: bool,
                 force_answer: bool = False) -> list[dict[str, Any]]:
    tools = sandbox is not None
    prompts = [protocol.build(u.pair.prompt, u.responses(), tools=tools) for u in batch]
    if tools:
        from judgerl.tools.tir import run_tool_loop

        trajs = run_tool_loop(backend, prompts, params, sandbox, max_rounds=max_tool_rounds)
        texts = [t.text for t in trajs]
        meta = [(t.prompt_tokens, t.completion_tokens, t.finish_reason, t.to_dict()) for t in trajs]
    else:
        outs = backend.generate(prompts, params)
        if len(outs) != len(prompts):
            raise RuntimeError(f"backend {backend.name!r} returned {len(outs)} completions for {len(prompts)} prompts")
        texts = [c.text for c in outs]
        meta = [(c.prompt_tokens, c.completion_tokens, c.finish_reason, None) for c in outs]
    decisions = [protocol.parse(t) for t in texts]
    extra = [0] * len(texts)
    if force_answer:
        texts, decisions, extra = _force_answers(backend, protocol, prompts, texts, decisions, params)
    records = []
    for k, (u, msgs) in enumerate(zip(batch, prompts, strict=True)):
        ptok, ctok, finish, traj = meta[k]
        rec = _make_record(u, kind, protocol, msgs, texts[k], decisions[k], ptok, ctok + extra[k], finish, traj,
                           save_messages)
        if force_answer:
            rec["forced_answer"] = extra[k] > 0
        records.append(rec)
    return records


def _batch_seed(seed: int, first_key: tuple[str, str, int]) -> int:
    return int(_digest(f"{seed}\x00{first_key}")[:8], 16) & 0x7FFFFFFF


def run_eval(
    backend: Backend,
    protocol: Any,
    pairs: Sequence[PreferencePair],
    out_dir: str | os.PathLike[str],
    *,
    samples: int = 1,
    seed: int = 0,
    params: SamplingParams | None = None,
    sandbox: Any = None,
    max_tool_rounds: int = 3,
    resume: bool = True,
    progress: bool = True,
    batch_size: int = 16,
    save_messages: bool = False,
    n_bootstrap: int = 1000,
    info: Mapping[str, Any] | None = None,
    write_report: bool = True,
    force_answer: bool = False,
) -> dict[str, Any]:
    """Judge ``pairs`` with ``protocol`` on ``backend``, resumably, and write the summary and report.

    Args:
        backend: Any :class:`judgerl.backends.Backend`.
        protocol: A :class:`judgerl.protocols.base.JudgeProtocol` (``.name``, ``.kind``, ``.build``,
            ``.parse``).
        pairs: The pairs (unique ids). Pairs with ``tie=True`` are judged but excluded from accuracy.
        out_dir: Output directory (created). See the module docstring for its files.
        samples: Judgment samples per (pair, order) (test-time scaling; majority vote / mean score).
        seed: Decides the first order of every pair, the per-batch sampling seeds and the bootstrap.
        params: Sampling parameters (default: 512 new tokens, temperature 0 for one sample and
            0.7 for several). ``params.seed`` is replaced by a per-batch seed derived from ``seed``.
        sandbox: An object with ``.run(code)`` (see :func:`judgerl.tools.get_sandbox`); when given the
            judge is prompted with ``tools=True`` and runs through
            :func:`judgerl.tools.tir.run_tool_loop` with at most ``max_tool_rounds`` executions.
        resume: Continue a previous run in ``out_dir`` (same configuration required). False discards
            previous outputs in ``out_dir`` and starts over.
        progress: Show a progress bar (pairs done, rate, time left) on stderr.
        batch_size: Judgment samples per ``backend.generate`` call, which is also the unit written
            durably (what an interrupted run can lose). 16 matches the hf backend's own batch on CPU;
            raise it for GPU backends (vllm, openai-compatible servers).
        save_messages: Also store the full prompt messages in every record (the hash is always stored).
        n_bootstrap: Bootstrap resamples for the 95% confidence intervals.
        info: Extra JSON-serialisable context stored in run.json (data path, limit, …); not compared
            on resume.
        write_report: Also write report.md and the per-source plot.
        force_answer: When a judgment ends without a final answer (small or untrained judges, or the
            token budget ran out), prefill the closing ``</think>`` and the answer tag and generate a
            few more tokens (:func:`forced_answer_suffix`). Such judgments are marked
            ``forced_answer`` and counted in ``forced_answer_rate``; without this flag they stay invalid.

    Returns:
        The summary dict written to ``summary.json``: :func:`judgerl.eval.metrics.compute_metrics`
        over this run's pairs plus ``config``, ``timing`` and ``files``.

    Raises:
        ValueError: bad arguments, duplicate pair ids, no pairs, corrupt judgments.jsonl.
        RunConfigMismatch: ``out_dir`` holds a different run (config, data or prompts differ).
        Exception: whatever the backend raises; judgments of finished batches are already on disk.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if max_tool_rounds < 0:
        raise ValueError(f"max_tool_rounds must be >= 0, got {max_tool_rounds}")
    if not pairs:
        raise ValueError("no pairs to evaluate")
    kind = protocol.kind
    if params is None:
        params = SamplingParams(max_new_tokens=512, temperature=0.0 if samples == 1 else 0.7)
    if samples > 1 and params.temperature == 0:
        warnings.warn(f"samples={samples} with temperature 0: greedy samples are identical", stacklevel=2)
    tools = sandbox is not None
    units = plan_units(pairs, kind, samples, seed)
    by_key = {u.key: u for u in units}
    config = {
        "model": getattr(backend, "name", type(backend).__name__),
        "protocol": protocol_config(protocol),
        "samples": samples,
        "seed": seed,
        "sampling": {"max_new_tokens": params.max_new_tokens, "temperature": params.temperature,
                     "top_p": params.top_p, "stop": list(params.stop)},
        "tools": "python" if tools else None,
        "max_tool_rounds": max_tool_rounds if tools else None,
        "force_answer": force_answer,
    }
    out = Path(out_dir)
    _prepare_out_dir(out, config, info or {}, resume)
    jpath = out / JUDGMENTS_FILE
    done = _check_existing(read_judgments(jpath), by_key, protocol, tools, jpath)
    todo = [u for u in units if u.key not in done]

    remaining: dict[str, int] = defaultdict(int)
    for u in todo:
        remaining[u.pair.id] += 1
    pairs_done = len(pairs) - len(remaining)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(pairs), initial=pairs_done, unit="pair", desc=f"eval {protocol.name}",
                   dynamic_ncols=True, file=sys.stderr, smoothing=0.1)
        bar.set_postfix_str(f"judgments {len(units) - len(todo)}/{len(units)}")
    t0 = time.perf_counter()
    n_new = 0
    try:
        with JudgmentWriter(jpath) as writer:
            for batch in _batches(todo, batch_size):
                bparams = dataclasses.replace(params, seed=_batch_seed(seed, batch[0].key))
                records = _judge_batch(backend, protocol, kind, batch, bparams, sandbox, max_tool_rounds,
                                       save_messages, force_answer)
                writer.write_batch(records)
                for r in records:
                    done[(r["pair_id"], r["order"], r["sample"])] = r
                n_new += len(records)
                finished = 0
                for u in batch:
                    remaining[u.pair.id] -= 1
                    if remaining[u.pair.id] == 0:
                        finished += 1
                if bar is not None:
                    bar.update(finished)
                    bar.set_postfix_str(f"judgments {len(units) - len(todo) + n_new}/{len(units)}")
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.perf_counter() - t0

    run_records = [done[u.key] for u in units]
    summary: dict[str, Any] = compute_metrics(run_records, n_bootstrap=n_bootstrap, ci_seed=seed)
    if force_answer:
        summary["forced_answer_rate"] = sum(bool(r.get("forced_answer")) for r in run_records) / len(run_records)
    summary["config"] = config
    summary["info"] = dict(info or {})
    summary["timing"] = {
        "elapsed_s": round(elapsed, 3),
        "judgments_this_run": n_new,
        "judgments_resumed": len(units) - len(todo),
        "judgments_per_s": round(n_new / elapsed, 3) if elapsed > 0 and n_new else None,
    }
    summary["files"] = {"judgments": JUDGMENTS_FILE, "summary": SUMMARY_FILE}
    if write_report:
        summary["files"].update(report=REPORT_FILE, plot=PLOT_FILE)
    _atomic_write_text(out / SUMMARY_FILE, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    if write_report:
        from judgerl.eval.report import write_report as _write_report

        _write_report(summary, out)
    return summary
