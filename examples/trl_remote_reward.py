"""GRPO with TRL, the reward coming from a judgerl reward server (a judge hosted on its own server).

Start the judge first (another process / machine)::

    judgerl serve --model smollm2-135m --protocol pos --port 8000

then::

    python examples/trl_remote_reward.py --url http://127.0.0.1:8000 --policy <policy-model-dir>

``judgerl.serve.client.remote_reward(url)`` returns a function with TRL's reward signature
``fn(completions, prompts=..., **columns) -> list[float | None]``; give it to
``GRPOTrainer(reward_funcs=[...])`` like any other reward function. For a pairwise judge
(``--protocol pav``) pass ``reference_column=`` naming a dataset column with reference responses.
"""

from __future__ import annotations

import argparse

from judgerl.serve.client import remote_reward


def main(argv: list[str] | None = None) -> dict:
    """Train ``--steps`` GRPO steps; returns the trainer's final log entry (includes the judge reward)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8000", help="judgerl reward server")
    ap.add_argument("--policy", required=True, help="policy model directory (a causal LM)")
    ap.add_argument("--out", default="grpo-remote-judge", help="output directory")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--max-completion-length", type=int, default=32)
    args = ap.parse_args(argv)

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    reward = remote_reward(args.url)
    reward.client.health()  # fail fast when the judge server is down
    prompts = [
        "Explain in one sentence why the sky is blue.",
        "Give a one-line Python expression that reverses a string s.",
        "Name two prime numbers between 10 and 20.",
        "Write a haiku about autumn.",
    ]
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": p}] for p in prompts]})
    config = GRPOConfig(
        output_dir=args.out,
        max_steps=args.steps,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=args.max_completion_length,
        logging_steps=1,
        report_to=[],
        bf16=torch.cuda.is_available(),  # TRL defaults to bf16, which CPUs refuse
        save_strategy="no",
    )
    trainer = GRPOTrainer(model=args.policy, reward_funcs=[reward], args=config, train_dataset=dataset)
    trainer.train()
    return trainer.state.log_history[-1] if trainer.state.log_history else {}


if __name__ == "__main__":
    main()
