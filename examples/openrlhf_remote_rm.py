"""Use a judgerl reward server as OpenRLHF's remote reward model.

Two ways, both tested in tests/test_serve_examples.py and tests/test_serve_clients.py:

1. URL: the server's ``/get_reward`` endpoint speaks OpenRLHF's remote-RM protocol (POST
   ``{"query": [...], "prompts": [...], "labels": [...]}`` -> ``{"rewards": [...], "scores": [...],
   "extra_logs": {...}}``)::

       judgerl serve --model vllm/<judge> --protocol pos --host 0.0.0.0 --port 8000 \
           --policy-tokenizer <policy-model-dir>
       # OpenRLHF <= 0.9.x
       python -m openrlhf.cli.train_ppo_ray ... --remote_rm_url http://<judge-host>:8000/get_reward
       # OpenRLHF >= 0.10 (the flag was renamed)
       python -m openrlhf.cli.train_ppo_ray ... --reward.remote_url http://<judge-host>:8000/get_reward

   ``query`` is the templated prompt + response, ``prompts`` the templated prompt; the server
   splits them, removes the policy's chat markup and end-of-turn tokens, and judges the plain
   instruction and response. Non-empty string ``labels`` are used as reference responses by pairwise
   servers (OpenRLHF's default label ``""`` is no reference). A query that does not start with its
   prompt (OpenRLHF left-truncates long prompts) gets the invalid reward and ``judge_bad_query`` = 1 in
   ``extra_logs``; the other queries are judged. OpenRLHF >= 0.9.5 sends one query per request with a
   180 s timeout and no ``X-Request-ID``: keep ``--max-batch-size`` large and let the server batch
   concurrent requests (``--max-wait-ms``).

2. File: OpenRLHF also accepts a Python file as the remote URL and calls its
   ``reward_func(queries, prompts, labels)``; this file is one (set ``JUDGERL_REWARD_URL``)::

       --remote_rm_url examples/openrlhf_remote_rm.py        # or --reward.remote_url ... on >= 0.10

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
        judgerl.serve.client.JudgeClientError: the answer does not hold one reward, score and ``extra_logs``
            value per query.
    """
    from judgerl.serve.client import check_count

    payload = {"query": list(queries), "prompts": list(prompts), "labels": list(labels) if labels is not None else None}
    r = httpx.post(url, json=payload, timeout=timeout_s)
    r.raise_for_status()
    out = r.json()
    check_count(url, out, len(payload["query"]), ("rewards", "scores"))
    logs = out.get("extra_logs") or {}
    if logs:
        check_count(f"{url} (extra_logs)", logs, len(payload["query"]), tuple(logs))
    return out


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
