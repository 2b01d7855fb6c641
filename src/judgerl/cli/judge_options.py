"""The judge options every command that runs a judge shares (eval, serve, label, probe, arena): one
typer option object per option, one set of defaults (:mod:`judgerl.judge.defaults`), and
:func:`judge_options` turning a command's values into a :class:`~judgerl.judge.options.JudgeOptions`.

Each command declares the shared options with the same objects (``max_new_tokens: int =
MAX_NEW_TOKENS_OPTION``), so their names, defaults and help read the same everywhere (the layout of
inspect_ai's ``_cli/common.py``). Errors in these options end the command with one line and exit 2
(:mod:`judgerl.cli.errors`).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, List

import typer

from judgerl.cli.errors import fail  # noqa: F401 (re-exported: every command's one error helper)
from judgerl.judge.defaults import DEFAULT_BATCH_SIZE, DEFAULT_MAX_NEW_TOKENS, SAMPLING_TEMPERATURE
from judgerl.judge.options import JudgeOptions
from judgerl.protocols import PROTOCOLS
from judgerl.text.codeblocks import MAX_TOOL_ROUNDS


class ToolsChoice(str, Enum):
    """``--tools``: ``none`` or ``python`` (the TIR tool loop in the sandbox)."""

    none = "none"
    python = "python"


#: ``--model-arg KEY=VALUE`` (repeatable): keyword arguments of the backend's constructor.
MODEL_ARG_OPTION: Any = typer.Option(
    None, "--model-arg", help="Backend option KEY=VALUE (repeatable; values read as YAML scalars), passed to the "
    "backend: vllm/ e.g. tensor_parallel_size=8 dtype=bfloat16 max_model_len=32768 gpu_memory_utilization=0.85; "
    "hf/ e.g. dtype=bfloat16 batch_size=32; openai/ e.g. max_concurrency=32.")
#: ``--base-url URL``: the endpoint of an ``openai/<model>`` judge.
BASE_URL_OPTION: Any = typer.Option(
    None, "--base-url", help="Endpoint of an openai/<model> judge, e.g. http://gpu-box:8000/v1 (default: "
    "$OPENAI_BASE_URL).")
#: The protocols ``--protocol`` takes (every registered one, ``arena`` included).
PROTOCOL_NAMES = ", ".join(PROTOCOLS)


def protocol_option(default: str) -> Any:
    """``--protocol/-p`` with a command's default (eval and serve ``pav``, probe ``pos``, arena ``arena``)."""
    return typer.Option(default, "--protocol", "-p", help=f"Judge protocol: {PROTOCOL_NAMES} (see "
                        "judgerl.protocols).")


#: ``--prompt-template FILE``: a judge prompt and answer pattern from a file (the ``template`` protocol).
PROMPT_TEMPLATE_OPTION: Any = typer.Option(
    None, "--prompt-template", help="Judge prompt template file with its answer pattern (YAML/JSON, or text with "
    "YAML front matter; e.g. examples/templates/arena-hard.yaml, prometheus-absolute.md): replaces --protocol "
    "(protocol 'template', see judgerl.protocols.template_file).")
PROTOCOL_ARG_OPTION: Any = typer.Option(None, "--protocol-arg", help="Protocol option KEY=VALUE (repeatable), e.g. "
                                        "max_score=9 or mode=rank.")
ANTI_HACKING_OPTION: Any = typer.Option(False, "--anti-hacking", help="Add the anti-hacking instruction to the "
                                        "judge prompt (protocol option anti_hacking=true).")
SAMPLES_OPTION: Any = typer.Option(1, "--samples", "-n", min=1, help="Judgment samples per item (majority vote / "
                                   "mean score).")
TEMPERATURE_OPTION: Any = typer.Option(None, "--temperature", min=0.0, help="Sampling temperature (default: 0 for "
                                       f"one sample, {SAMPLING_TEMPERATURE} for several).")
TOP_P_OPTION: Any = typer.Option(1.0, "--top-p", min=0.0, max=1.0, help="Nucleus sampling mass.")
MAX_NEW_TOKENS_OPTION: Any = typer.Option(DEFAULT_MAX_NEW_TOKENS, "--max-new-tokens", min=1, help="Tokens per "
                                          "generation (per round with tools).")
SEED_OPTION: Any = typer.Option(0, "--seed", help="Base seed: every sample's seed is derived from it and the "
                                "item (and, where a command draws or orders items, of that draw).")
FORCE_ANSWER_OPTION: Any = typer.Option(False, "--force-answer", help="When a judgment ends without its final "
                                        "answer, prefill the answer tag and generate a few tokens (marked and "
                                        "counted as forced; for small/untrained judges).")
TOOLS_OPTION: Any = typer.Option(ToolsChoice.none, "--tools", help="Let the judge run python code (TIR loop).")
MAX_TOOL_ROUNDS_OPTION: Any = typer.Option(MAX_TOOL_ROUNDS, "--max-tool-rounds", min=0, help="Most code executions "
                                           "per judgment (the judge prompt states this budget).")
UNSAFE_SANDBOX_OPTION: Any = typer.Option(False, "--unsafe-sandbox", help="With --tools python where bubblewrap is "
                                          "missing: run model-written code in the fallback executor, which is NOT a "
                                          "security boundary (or set JUDGERL_UNSAFE_SANDBOX=1).")
SCORE_MODE_OPTION: Any = typer.Option(None, "--score-mode", help="Pointwise scores: parsed (the written score), mean "
                                      "(of --samples judgments) or expected (probability-weighted, needs logprobs: "
                                      "hf/openai/vllm judges). Default: mean with --samples > 1, else parsed.")
BATCH_SIZE_OPTION: Any = typer.Option(DEFAULT_BATCH_SIZE, "--batch-size", min=1, help="Judgments per judge call "
                                      "(the backend batches inside it) and per durable write. Changes speed, never "
                                      "the results.")


def parse_key_values(items: List[str] | None, flag: str = "--protocol-arg") -> dict[str, Any]:
    """Parse repeated ``KEY=VALUE`` options into keyword arguments (values read as YAML scalars).

    Raises:
        ValueError: an item without ``=`` or with an empty key (names ``flag``).
    """
    from judgerl.train.config import load_yaml  # the one YAML reader (1e-5 is a float)

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag}: expected KEY=VALUE, got {item!r}")
        out[key.strip()] = load_yaml(value)
    return out


def backend_kwargs(model: str, model_arg: List[str] | None, base_url: str | None) -> dict[str, Any]:
    """The backend keyword arguments of ``--model-arg`` and ``--base-url``.

    Raises:
        ValueError: a malformed ``KEY=VALUE``, or ``--base-url`` with a model that is not ``openai/...``.
    """
    return JudgeOptions(model, model_args=parse_key_values(model_arg, "--model-arg"), base_url=base_url).backend_kwargs()


def load_judge_backend(model: str, model_arg: List[str] | None = None, base_url: str | None = None,
                       **extra: Any) -> Any:
    """``load_backend(model, **--model-arg, base_url=--base-url, **extra)``.

    Raises:
        ValueError: bad options, or an option the backend does not take (names it and the model).
        ImportError: the provider's extra is not installed.
    """
    return JudgeOptions(model, model_args=parse_key_values(model_arg, "--model-arg"),
                        base_url=base_url).make_backend(**extra)


def judge_options(model: str, *, model_arg: List[str] | None = None, base_url: str | None = None,
                  protocol: str = "pav", protocol_arg: List[str] | None = None, anti_hacking: bool = False,
                  prompt_template: str | Path | None = None,
                  samples: int = 1, temperature: float | None = None, top_p: float = 1.0,
                  max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, seed: int = 0, force_answer: bool = False,
                  tools: ToolsChoice | str = ToolsChoice.none, max_tool_rounds: int = MAX_TOOL_ROUNDS,
                  unsafe_sandbox: bool = False, batch_size: int = DEFAULT_BATCH_SIZE) -> JudgeOptions:
    """The :class:`JudgeOptions` of a command's shared option values; exits 2 with one line on a bad
    ``KEY=VALUE``, ``--base-url``, ``--tools`` value, protocol or ``--prompt-template`` file (checked here, before
    any model loads). ``prompt_template`` makes the protocol ``template`` with ``path=prompt_template``."""
    tools_value = tools.value if isinstance(tools, ToolsChoice) else str(tools)
    if tools_value not in ("none", "python"):
        fail(f"--tools must be 'none' or 'python', got {tools_value!r}")
    try:
        protocol_args = parse_key_values(protocol_arg)
        if prompt_template is not None:
            protocol, protocol_args = "template", {**protocol_args, "path": str(Path(prompt_template).resolve())}
        opts = JudgeOptions(model, model_args=parse_key_values(model_arg, "--model-arg"), base_url=base_url,
                            protocol=protocol, protocol_args=protocol_args, anti_hacking=anti_hacking,
                            samples=samples, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                            seed=seed, force_answer=force_answer, tools=tools_value == "python",
                            max_tool_rounds=max_tool_rounds, unsafe_sandbox=unsafe_sandbox, batch_size=batch_size)
        opts.params()
    except ValueError as e:
        fail(e)
    try:
        opts.make_protocol()
    except (ValueError, TypeError) as e:
        fail(f"--prompt-template: {e}" if prompt_template is not None else f"--protocol {protocol}: {e}")
    return opts


def open_sandbox(opts: JudgeOptions) -> Any:
    """The sandbox of ``--tools python`` (None without tools); exits 2 with one line when it cannot run
    code (the unsafe fallback is refused unless ``--unsafe-sandbox`` or ``JUDGERL_UNSAFE_SANDBOX=1``)."""
    from judgerl.tools import SandboxError

    try:
        return opts.make_sandbox()
    except SandboxError as e:
        fail(e)


def print_runtime(backend: Any = None) -> None:
    """``--verbose``: the OpenMP wait policy and thread count (:func:`judgerl.backends.runtime.describe_runtime`)
    and, for backends that describe themselves (hf), their dtype, engine and prefix cache, on stderr."""
    from judgerl.backends.runtime import describe_runtime

    typer.echo(describe_runtime(), err=True)
    describe = getattr(backend, "describe", None)
    if callable(describe):
        typer.echo(describe(), err=True)


__all__ = ["BASE_URL_OPTION", "MODEL_ARG_OPTION", "PROMPT_TEMPLATE_OPTION", "JudgeOptions", "ToolsChoice", "backend_kwargs", "fail",
           "judge_options", "load_judge_backend", "open_sandbox", "parse_key_values",
           "print_runtime", "protocol_option"]
