"""Choosing the next token from logits: factories that return small closures (mlx-lm style)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Sampler = Callable[[np.ndarray], int]
LogitsProcessor = Callable[[np.ndarray, Sequence[int]], np.ndarray]

# Tokens whose probability is below this fraction of the best one's are never candidates: they cannot
# change a sample in practice (20 of them, top-k's usual size, add up to 2e-6), and leaving them out
# first means the partition and sort below work on tens of logits instead of the vocabulary's 150k
# (1.5 ms -> ~0.1 ms a token for top-k 20, docs/experiments.md, "Prompt lookup and the sampler").
NEGLIGIBLE = 1e-7


def greedy(logits: np.ndarray) -> int:
    return int(np.argmax(logits))


def candidate_set(
    logits: np.ndarray, temperature: float, top_k: int, top_p: float, min_p: float
) -> tuple[np.ndarray, np.ndarray]:
    """Token ids allowed by top-k, min-p and top-p, best first, with their renormalised probabilities."""
    # One pass over the vocabulary in the logits' own precision: exp(l / T - best / T) >= NEGLIGIBLE.
    floor = float(logits.max()) + temperature * float(np.log(NEGLIGIBLE))
    ids = np.flatnonzero(logits >= floor)
    scaled = logits[ids].astype(np.float64) / temperature
    if 0 < top_k < ids.size:
        keep = np.argpartition(-scaled, top_k - 1)[:top_k]
        ids, scaled = ids[keep], scaled[keep]
    order = np.argsort(-scaled, kind="stable")
    ids, scaled = ids[order], scaled[order]
    probs = np.exp(scaled - scaled[0])
    probs /= probs.sum()
    if min_p > 0.0:
        n = int(np.count_nonzero(probs >= min_p * probs[0]))
        ids, probs = ids[:n], probs[:n]
    if 0.0 < top_p < 1.0:
        # the smallest prefix whose mass reaches top_p (always at least the best token)
        n = int(np.searchsorted(np.cumsum(probs), top_p * probs.sum() - 1e-12) + 1)
        ids, probs = ids[:n], probs[:n]
    return ids, probs / probs.sum()


class RandomSampler:
    """Samples from the candidate set (temperature, top-k, top-p, min-p) with its own seeded generator."""

    def __init__(self, temperature: float, top_p: float, top_k: int, min_p: float, seed: int | None) -> None:
        self.temperature, self.top_p, self.top_k, self.min_p = temperature, top_p, top_k, min_p
        self.rng = np.random.default_rng(seed)

    def __call__(self, logits: np.ndarray) -> int:
        ids, probs = candidate_set(logits, self.temperature, self.top_k, self.top_p, self.min_p)
        return int(ids[int(self.rng.choice(len(ids), p=probs))])

    def check(self, logits: np.ndarray, draft: int) -> int:
        """The token for a position where ``draft`` was proposed (speculative sampling with a draft that
        is certain of itself): ``draft`` with the probability the candidate set gives it, otherwise a sample
        from the other candidates. Over many runs each token comes out exactly as often as a plain sample
        would give it, and a token outside the set (top-k, top-p, min-p) is never kept."""
        ids, probs = candidate_set(logits, self.temperature, self.top_k, self.top_p, self.min_p)
        hit = np.nonzero(ids == draft)[0]
        p_draft = float(probs[hit[0]]) if hit.size else 0.0
        if self.rng.random() < p_draft:
            return draft
        if hit.size:
            probs = probs.copy()
            probs[hit[0]] = 0.0
            probs /= probs.sum()  # p_draft < 1 here, so something else is left
        return int(ids[int(self.rng.choice(len(ids), p=probs))])


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
    return RandomSampler(temperature, top_p, top_k, min_p, seed)


def check_draft(sampler: Sampler, logits: np.ndarray, draft: int) -> int:
    """The token ``sampler`` keeps at a position where ``draft`` was proposed: for a random sampler see
    ``RandomSampler.check``; a deterministic one (greedy) keeps its own choice, which is ``draft`` or not."""
    if isinstance(sampler, RandomSampler):
        return sampler.check(logits, draft)
    return sampler(logits)


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
