"""`judgerl serve`: host a judge as an HTTP reward server (see judgerl.serve.app and docs/serving.md)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from judgerl.cli.judge_options import (
    BASE_URL_OPTION,
    FORCE_ANSWER_OPTION,
    MAX_NEW_TOKENS_OPTION,
    MAX_TOOL_ROUNDS_OPTION,
    MODEL_ARG_OPTION,
    PROMPT_TEMPLATE_OPTION,
    PROTOCOL_ARG_OPTION,
    SAMPLES_OPTION,
    SCORE_MODE_OPTION,
    SEED_OPTION,
    TEMPERATURE_OPTION,
    TOOLS_OPTION,
    TOP_P_OPTION,
    UNSAFE_SANDBOX_OPTION,
    ToolsChoice,
    fail,
    judge_options,
    open_sandbox,
    print_runtime,
    protocol_option,
)


def serve_command(
    model: str = typer.Option(..., "--model", "-m", help="Judge model: smollm2-135m, hf/<path>, openai/<model>, "
                              "vllm/<path>, or a local directory."),
    protocol: str = protocol_option("pav"),
    protocol_arg: Optional[List[str]] = PROTOCOL_ARG_OPTION,
    prompt_template: Optional[Path] = PROMPT_TEMPLATE_OPTION,
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind (0.0.0.0 exposes the server)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    base_url: Optional[str] = BASE_URL_OPTION,
    model_arg: Optional[List[str]] = MODEL_ARG_OPTION,
    policy_tokenizer: Optional[str] = typer.Option(None, "--policy-tokenizer", help="The policy's tokenizer "
                                                   "directory: /get_reward strips its chat-template markers (any "
                                                   "model) from OpenRLHF queries. Default: the common families "
                                                   "(ChatML, Llama-3, Gemma, Phi-3, DeepSeek-R1, Mistral)."),
    max_new_tokens: int = MAX_NEW_TOKENS_OPTION,
    temperature: Optional[float] = TEMPERATURE_OPTION,
    top_p: float = TOP_P_OPTION,
    seed: int = SEED_OPTION,
    tools: ToolsChoice = TOOLS_OPTION,
    max_tool_rounds: int = MAX_TOOL_ROUNDS_OPTION,
    force_answer: bool = FORCE_ANSWER_OPTION,
    unsafe_sandbox: bool = UNSAFE_SANDBOX_OPTION,
    samples: int = SAMPLES_OPTION,
    max_batch_size: int = typer.Option(32, "--max-batch-size", min=1, help="Most prompts per generation batch."),
    max_wait_ms: float = typer.Option(10.0, "--max-wait-ms", min=0.0, help="How long a batch waits to fill (ms)."),
    max_pending: int = typer.Option(4096, "--max-pending", min=1, help="Queued prompts before answering 503."),
    max_body_bytes: int = typer.Option(4_000_000, "--max-body-bytes", min=1, help="Largest request body (413 "
                                       "beyond)."),
    max_items: int = typer.Option(512, "--max-items", min=1, help="Most items per request (413 beyond)."),
    max_text_chars: int = typer.Option(100_000, "--max-text-chars", min=1, help="Longest text field (413 "
                                       "beyond)."),
    invalid_reward: float = typer.Option(0.0, "--invalid-reward", help="Reward for unparseable judgments."),
    both_orders: bool = typer.Option(False, "--both-orders", help="Pairwise rewards: judge both orders and "
                                     "average (position-agnostic)."),
    batch_size: Optional[int] = typer.Option(None, "--backend-batch-size", min=1, help="hf backend: prompts "
                                             "per model.generate call."),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level."),
    verbose: bool = typer.Option(False, "--verbose", help="Print the runtime settings (OpenMP wait policy, "
                                 "threads) and the backend's engine at start-up."),
    score_mode: Optional[str] = SCORE_MODE_OPTION,
) -> None:
    """Serve a judge over HTTP: /v1/judge/pairwise, /v1/judge/listwise, /v1/score, /v1/rewards, /get_reward
    (OpenRLHF), /health."""
    import uvicorn

    from judgerl.serve.app import ServeConfig, create_app

    opts = judge_options(model, model_arg=model_arg, base_url=base_url, protocol=protocol, protocol_arg=protocol_arg, prompt_template=prompt_template,
                         samples=samples, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                         seed=seed, force_answer=force_answer, tools=tools, max_tool_rounds=max_tool_rounds,
                         unsafe_sandbox=unsafe_sandbox)
    try:
        markup: dict = {}
        if policy_tokenizer is not None:
            from judgerl.serve.chat_markup import DEFAULT_STRIP_TOKENS, load_policy_markup

            derived = load_policy_markup(policy_tokenizer)
            markup = {"chat_markups": (derived,),
                      "strip_tokens": tuple(dict.fromkeys(derived.end_tokens + DEFAULT_STRIP_TOKENS))}
        config = ServeConfig(
            max_batch_size=max_batch_size,
            max_wait_ms=max_wait_ms,
            max_pending=max_pending,
            max_body_bytes=max_body_bytes,
            max_items=max_items,
            max_text_chars=max_text_chars,
            samples=opts.samples,
            invalid_reward=invalid_reward,
            pairwise_both_orders=both_orders,
            score_mode=score_mode,
            **markup,
        )
    except (ValueError, TypeError) as e:
        fail(e)
    extra = {} if batch_size is None else {"batch_size": batch_size}
    _check_port(host, port)  # before loading a model: a taken port fails in a second, not a minute
    sandbox = open_sandbox(opts)
    try:
        backend = opts.make_backend(**extra)
        judge = opts.make_judge(backend, sandbox=sandbox)
        app = create_app(judge, config=config)
    except (ValueError, ImportError, FileNotFoundError) as e:
        fail(e)
    if verbose:
        print_runtime(backend)
    typer.echo(f"judgerl serve: {backend.name} with protocol {judge.protocol.name} on http://{host}:{port}", err=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        if sandbox is not None:
            sandbox.close()


def _check_port(host: str, port: int) -> None:
    """Exit 2 with one line when ``host:port`` cannot be bound (taken, or not an address here)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        fail(f"--host {host}: {e}")
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as e:
            fail(f"cannot listen on {host}:{port}: {e.strerror or e} (is the port taken?)")
