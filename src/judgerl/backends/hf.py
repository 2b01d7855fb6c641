"""transformers backend: batched generation with left padding on CPU or GPU."""

from __future__ import annotations

import threading
from typing import Any, Sequence

from judgerl.backends.base import SamplingParams, cut_at_stop
from judgerl.types import Completion, Messages


def render_chat(tokenizer: Any, messages: Messages) -> str:
    """Render chat messages to the model's prompt text.

    A trailing assistant message is *continued*: the template is applied to the messages before it
    with a generation prompt, and the assistant content is appended verbatim.
    """
    msgs = [dict(m) for m in messages]
    prefix = ""
    if msgs and msgs[-1].get("role") == "assistant":
        prefix = msgs.pop()["content"]
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    else:  # base models without a template: plain concatenation
        text = "\n\n".join(f"{m['role']}: {m['content']}" for m in msgs) + "\n\nassistant: "
    return text + prefix


class HFBackend:
    """Generate with a transformers causal LM.

    Args:
        model_path: Local directory (or hub id, where a hub is reachable) of the model.
        batch_size: Prompts per ``model.generate`` call. Prompts are sorted by length before
            batching to reduce padding; outputs are returned in input order.
        device: ``"cpu"``, ``"cuda"``, … (default: cuda when available).
        dtype: torch dtype name; default float32 on CPU, bfloat16 on GPU.

    Generation is serialised with a lock, so one instance can be shared by threads.
    """

    def __init__(
        self,
        model_path: str,
        batch_size: int = 16,
        device: str | None = None,
        dtype: str | None = None,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.name = f"hf/{model_path}"
        self.model_path = model_path
        self.batch_size = batch_size
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        torch_dtype = getattr(torch, dtype) if dtype else (torch.float32 if self.device == "cpu" else torch.bfloat16)
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch_dtype).to(self.device)
        self.model.eval()
        self._lock = threading.Lock()

    def render(self, messages: Messages) -> str:
        return render_chat(self.tokenizer, messages)

    def generate(self, prompts: Sequence[Messages], params: SamplingParams) -> list[Completion]:
        texts = [self.render(p) for p in prompts]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[Completion | None] = [None] * len(texts)
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                for i, c in zip(idx, self._generate_batch([texts[i] for i in idx], params, start)):
                    out[i] = c
        return out  # type: ignore[return-value]

    def _generate_batch(self, texts: list[str], params: SamplingParams, offset: int) -> list[Completion]:
        import torch

        tok = self.tokenizer
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        gen_kwargs: dict[str, Any] = dict(
            max_new_tokens=params.max_new_tokens,
            pad_token_id=tok.pad_token_id,
        )
        if params.temperature > 0:
            gen_kwargs.update(do_sample=True, temperature=params.temperature, top_p=params.top_p, top_k=0)
            if params.seed is not None:
                torch.manual_seed(params.seed + offset)
        else:
            gen_kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if params.stop:
            gen_kwargs.update(stop_strings=list(params.stop), tokenizer=tok)
        with torch.inference_mode():
            seqs = self.model.generate(**enc, **gen_kwargs)
        new = seqs[:, enc["input_ids"].shape[1] :]
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        eos_ids = self.model.generation_config.eos_token_id
        eos_set = set(eos_ids if isinstance(eos_ids, list) else [eos_ids]) | {tok.eos_token_id}
        results = []
        for row, plen in zip(new.tolist(), prompt_lens):
            n = len(row)
            hit_eos = False
            for j, t in enumerate(row):
                if t in eos_set:
                    n, hit_eos = j, True
                    break
            text = tok.decode(row[:n], skip_special_tokens=True)
            text, stopped = cut_at_stop(text, params.stop)
            if stopped:
                n = len(tok(text, add_special_tokens=False)["input_ids"])
            finish = "stop" if (hit_eos or stopped) else "length"
            results.append(Completion(text, int(plen), n, finish))
        return results
