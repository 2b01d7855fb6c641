"""The end-to-end bound of bench/bench_generation.py (bench/genbench_bound.py): the FLOPs it
charges an ideal exact engine (issue 13: the bound must not be loose)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bound():
    spec = importlib.util.spec_from_file_location("genbench_bound", ROOT / "bench" / "genbench_bound.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def roof(**kw):
    base = {"peak_gflops": 1.0, "bandwidth_gbs": 1e9, "params": 1000, "weight_bytes": 4000, "head_params": 400,
            "embedding_params": 0, "n_layers": 1, "d_attn": 0, "kv_bytes_per_token": 0,
            "prompt_lengths": [10, 10], "new_positions": [[0, 10], [4, 10]]}
    return {**base, **kw}


def test_prefill_charges_the_lm_head_once_per_prompt_and_skips_shared_prefixes(bound) -> None:
    r = bound.end_to_end_bound(roof(), n_prompts=2, max_new=0, batch=2)
    body = 2 * (1000 - 400)
    assert r["prefill_s"] * 1e9 == pytest.approx((10 + 6) * body + 2 * 2 * 400)  # 16 new positions, 2 heads
    untied = bound.end_to_end_bound(roof(params=1400, embedding_params=400), n_prompts=2, max_new=0, batch=2)
    assert untied["prefill_s"] == pytest.approx(r["prefill_s"])  # an input table lookup costs no FLOPs


def test_trie_new_positions_counts_each_shared_prefix_once(bound) -> None:
    assert bound.trie_new_positions([[1, 2, 3], [1, 2, 4, 5], [1, 2, 3], [7]]) == [[0, 3], [2, 4], [3, 3], [0, 1]]


def test_decode_takes_the_larger_of_compute_and_memory(bound) -> None:
    compute = bound.end_to_end_bound(roof(bandwidth_gbs=1e9), n_prompts=2, max_new=4, batch=2)
    assert compute["decode_bound"] == "compute"
    assert compute["decode_s"] * 1e9 == pytest.approx(4 * 2 * 2 * 1000)  # 4 steps x 2 rows x 2N
    memory = bound.end_to_end_bound(roof(bandwidth_gbs=1e-9, peak_gflops=1e9), n_prompts=2, max_new=4, batch=2)
    assert memory["decode_bound"] == "memory"
    assert memory["decode_s"] == pytest.approx(4 * 4000 / 1.0)
