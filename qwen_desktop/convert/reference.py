"""A plain numpy forward pass of Qwen2: the source of truth the ONNX graphs are tested against.

Slow and simple on purpose: one token position at a time is never batched cleverly, every step is the
textbook formula.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from qwen_desktop.convert.weights import EMBED, FINAL_NORM, LM_HEAD, QwenConfig, layer_names


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    var = np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True)
    out: np.ndarray = (x / np.sqrt(var + eps) * weight).astype(np.float32)
    return out


def rope_tables(head_dim: int, theta: float, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin, each ``[len(positions), head_dim // 2]``."""
    inv_freq = 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    angles = positions.astype(np.float64)[:, None] * inv_freq[None, :]
    return np.cos(angles), np.sin(angles)


def apply_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate halves (the Hugging Face / NeoX layout). x: ``[heads, seq, head_dim]``; cos, sin: ``[seq, d/2]``."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    out: np.ndarray = np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(np.float32)
    return out


def silu(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = (x / (1.0 + np.exp(-x))).astype(np.float32)
    return out


class ReferenceModel:
    """Qwen2 in numpy with a growing KV cache. ``forward`` returns logits for every new position."""

    def __init__(self, cfg: QwenConfig, weights: Mapping[str, np.ndarray]) -> None:
        self.cfg = cfg
        self.w = weights
        self.reset()

    def reset(self) -> None:
        n = self.cfg.num_layers
        kv, d = self.cfg.num_kv_heads, self.cfg.head_dim
        self.k_cache = [
            np.zeros((kv, 0, d), np.float32) for _ in range(n)
        ]  # per layer [kv_heads, seq, head_dim]
        self.v_cache = [np.zeros((kv, 0, d), np.float32) for _ in range(n)]

    @property
    def length(self) -> int:
        return self.k_cache[0].shape[1]

    def forward(
        self,
        ids: list[int] | np.ndarray,
        capture: Callable[[str, np.ndarray], None] | None = None,
        head: bool = True,
    ) -> np.ndarray:
        """Run new tokens after what is cached; returns logits ``[len(ids), vocab]``.

        ``capture(name, x)`` is handed the input of every linear layer, named as the fast graphs name the
        fused matrices (``layers.3.qkv_proj``, ``layers.3.gate_up_proj``...; ``lm_head`` for the final-norm
        states). Without ``head`` the final-norm states ``[len(ids), hidden]`` are returned instead of logits.
        """
        cfg, w = self.cfg, self.w
        ids = np.asarray(ids, dtype=np.int64)
        seq = len(ids)
        start = self.length
        positions = np.arange(start, start + seq)
        cos, sin = rope_tables(cfg.head_dim, cfg.rope_theta, positions)
        x = w[EMBED][ids].astype(np.float32)  # [seq, hidden]
        h, kvh, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        group = h // kvh
        total = start + seq
        # causal mask over the cached + new positions: new token j sees positions <= start + j; hidden marks the later ones
        hidden = np.arange(total)[None, :] > (start + np.arange(seq))[:, None]  # [seq, total]

        def seen(name: str, value: np.ndarray) -> None:
            if capture is not None:
                capture(name, value)

        for i in range(cfg.num_layers):
            n = layer_names(i)
            a = rms_norm(x, w[n["input_norm"]], cfg.rms_norm_eps)
            seen(f"layers.{i}.qkv_proj", a)
            q = a @ w[n["q"]].T + w[n["q_bias"]]
            k = a @ w[n["k"]].T + w[n["k_bias"]]
            v = a @ w[n["v"]].T + w[n["v_bias"]]
            q = apply_rope(q.reshape(seq, h, d).transpose(1, 0, 2), cos, sin)  # [heads, seq, d]
            k = apply_rope(k.reshape(seq, kvh, d).transpose(1, 0, 2), cos, sin)  # [kv_heads, seq, d]
            v = v.reshape(seq, kvh, d).transpose(1, 0, 2)
            self.k_cache[i] = np.concatenate([self.k_cache[i], k], axis=1)  # [kv_heads, total, d]
            self.v_cache[i] = np.concatenate([self.v_cache[i], v], axis=1)
            kk = np.repeat(self.k_cache[i], group, axis=0)  # [heads, total, d]
            vv = np.repeat(self.v_cache[i], group, axis=0)
            # softmax in float64, in place: at calibration length (~1150 tokens) each fresh [heads, seq,
            # total] array costs more to allocate than to compute
            p = (q @ kk.transpose(0, 2, 1)).astype(np.float64)  # [heads, seq, total]
            p /= np.sqrt(d)
            np.copyto(p, -np.inf, where=hidden[None])
            p -= p.max(axis=-1, keepdims=True)
            np.exp(p, out=p)
            p /= p.sum(axis=-1, keepdims=True)
            att = (p @ vv).transpose(1, 0, 2).reshape(seq, h * d)
            seen(f"layers.{i}.o_proj", att)
            x = x + att @ w[n["o"]].T
            m = rms_norm(x, w[n["post_norm"]], cfg.rms_norm_eps)
            seen(f"layers.{i}.gate_up_proj", m)
            act = silu(m @ w[n["gate"]].T) * (m @ w[n["up"]].T)
            seen(f"layers.{i}.down_proj", act)
            x = x + act @ w[n["down"]].T
        x = rms_norm(x, w[FINAL_NORM], cfg.rms_norm_eps)
        seen("lm_head", x)
        if not head:
            return x
        logits: np.ndarray = (x @ w[LM_HEAD].T).astype(np.float32)
        return logits

    def greedy(self, prompt: list[int], n: int, stop_ids: tuple[int, ...] = ()) -> list[int]:
        """Greedy continuation of ``prompt`` for up to ``n`` tokens (a fresh cache)."""
        self.reset()
        logits = self.forward(prompt)[-1]
        out: list[int] = []
        for _ in range(n):
            tok = int(np.argmax(logits))
            out.append(tok)
            if tok in stop_ids:
                break
            logits = self.forward([tok])[-1]
        return out
