"""The inference engine: tokenizer, ONNX Runtime session, KV cache, sampling and streaming generation.

Plain Python: this package never imports Qt, so the CLI, the benchmarks and the app share it.
"""
