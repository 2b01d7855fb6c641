"""Defaults shared by the recipe sections and the trainer (their one home; no heavy imports)."""

#: DAPO dynamic sampling (Yu et al., 2025, eq. 11) off unless a recipe turns it on.
DYNAMIC_SAMPLING = False
#: Extra generation batches per step when dynamic sampling refills a batch.
MAX_SAMPLING_ROUNDS = 2
#: Rows kept together by the pair-block sampler: both orders of a pair, or chosen + rejected.
PAIR_BLOCK = 2
