"""Qwen Desktop: offline chat with a small local Qwen2.5 model on the CPU."""

__version__ = "0.1.0"
