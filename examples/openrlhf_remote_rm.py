"""Use a judgerl reward server as OpenRLHF's remote reward model.

Two ways, both tested in tests/test_serve_examples.py:

1. URL: the server's ``/get_reward`` endpoint speaks OpenRLHF's remote-RM protocol (POST
   ``{"query": [...], "prompts": [...], "labels": [...]}`` -> ``{"rewards": [...], "scores": [...],
   "extra_logs": {...}}``)::

       judgerl serve --model vllm/<judge> --protocol pos --host 0.0.0.0 --port 8000
       python -m openrlhf.cli.train_ppo_ray ... --remote_rm_url http://<judge-host>:8000/get_reward

   ``query`` is the templated prompt + response, ``prompts`` the templated prompt; the server
   splits them, removes ChatML / Llama-3 markup and end-of-turn tokens, and judges the plain
   instruction and response. String ``labels`` are used as reference responses by pairwise servers.

2. File: OpenRLHF also accepts a Python file as ``--remote_rm_url`` and calls its
   ``reward_func(queries, prompts, labels)``; this file is one (set ``JUDGERL_REWARD_URL``)::

       --remote_rm_url examples/openrlhf_remote_rm.py

Run this file directly to send one OpenRLHF-style request to a running server::

    python examples/openrlhf_remote_rm.py http://127.0.0.1:8000
"""

from __future__ import annotations

import os
import sys
from typing import Any, Sequence

import httpx


def request_rewards(url: str, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any] | None = None,
                    timeout_s: float = 300.0) -> dict[str, Any]:
    """POST an OpenRLHF remote-RM request to ``url`` (the ``/get_reward`` endpoint) and return the JSON answer.

    Raises:
        httpx.HTTPStatusError: the server answered 4xx / 5xx.
    """
    payload = {"query": list(queries), "prompts": list(prompts), "labels": list(labels) if labels is not None else None}
    r = httpx.post(url, json=payload, timeout=timeout_s)
    r.raise_for_status()
    return r.json()


def reward_func(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any] | None = None) -> dict[str, Any]:
    """OpenRLHF custom reward function (``--remote_rm_url path/to/this_file.py``).

    Returns ``{"rewards", "scores", "extra_logs"}`` as torch tensors, as OpenRLHF expects.
    """
    import torch

    base = os.environ.get("JUDGERL_REWARD_URL", "http://127.0.0.1:8000").rstrip("/")
    out = request_rewards(f"{base}/get_reward", queries, prompts, labels)
    return {
        "rewards": torch.tensor(out["rewards"], dtype=torch.float32),
        "scores": torch.tensor(out["scores"], dtype=torch.float32),
        "extra_logs": {k: torch.tensor(v, dtype=torch.float32) for k, v in out["extra_logs"].items()},
    }


if __name__ == "__main__":
    server = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
    prompt = "<|im_start|>user\nName a prime number greater than 10.<|im_end|>\n<|im_start|>assistant\n"
    print(request_rewards(f"{server.rstrip('/')}/get_reward", [prompt + "13 is prime.<|im_end|>"], [prompt]))
