"""Choosing the next token from logits: factories that return small closures (mlx-lm style)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Sampler = Callable[[np.ndarray], int]
LogitsProcessor = Callable[[np.ndarray, Sequence[int]], np.ndarray]

# With top_k = 0 the candidates are every token whose probability is at least this fraction of the best
# one's: the rest cannot change a sample in practice and sorting 150k logits per token would be slow.
NEGLIGIBLE = 1e-7


def greedy(logits: np.ndarray) -> int:
    return int(np.argmax(logits))


def candidate_set(
    logits: np.ndarray, temperature: float, top_k: int, top_p: float, min_p: float
) -> tuple[np.ndarray, np.ndarray]:
    """Token ids allowed by top-k, min-p and top-p, best first, with their renormalised probabilities."""
    scaled = logits.astype(np.float64) / temperature
    if 0 < top_k < scaled.size:
        ids = np.argpartition(-scaled, top_k - 1)[:top_k]
    else:
        ids = np.nonzero(scaled >= scaled.max() + np.log(NEGLIGIBLE))[0]
    ids = ids[np.argsort(-scaled[ids], kind="stable")]
    probs = np.exp(scaled[ids] - scaled[ids[0]])
    probs /= probs.sum()
    if min_p > 0.0:
        n = int(np.count_nonzero(probs >= min_p * probs[0]))
        ids, probs = ids[:n], probs[:n]
    if 0.0 < top_p < 1.0:
        # the smallest prefix whose mass reaches top_p (always at least the best token)
        n = int(np.searchsorted(np.cumsum(probs), top_p * probs.sum() - 1e-12) + 1)
        ids, probs = ids[:n], probs[:n]
    return ids, probs / probs.sum()


def make_sampler(
    temperature: float = 0.0,
    top_p: float = 1.0,
    top_k: int = 0,
    min_p: float = 0.0,
    seed: int | None = None,
) -> Sampler:
    """A sampler; temperature 0 is greedy. The same seed gives the same choices for the same logits."""
    if temperature <= 0.0:
        return greedy
    rng = np.random.default_rng(seed)

    def sample(logits: np.ndarray) -> int:
        ids, probs = candidate_set(logits, temperature, top_k, top_p, min_p)
        return int(ids[int(rng.choice(len(ids), p=probs))])

    return sample


def make_repetition_penalty(penalty: float, window: int = 256) -> LogitsProcessor | None:
    """Discourage tokens seen in the last ``window`` tokens (the CTRL / Hugging Face rule):
    positive logits are divided by ``penalty``, negative ones multiplied."""
    if penalty == 1.0:
        return None

    def process(logits: np.ndarray, history: Sequence[int]) -> np.ndarray:
        if not history:
            return logits
        seen = np.unique(np.asarray(history[-window:], dtype=np.int64))
        out = logits.copy()
        vals = out[seen]
        out[seen] = np.where(vals > 0, vals / penalty, vals * penalty)
        return out

    return process
