"""Conversion: read Qwen2 weights (GGUF or a Hugging Face folder) and write the ONNX model folder the engine runs.

Readers, the numpy reference model, the quantizer, calibration, the ONNX writer, the builder and the tiny test
models. Plain Python: this package never imports Qt, and it depends only on ``engine`` (the model-folder format).
"""
