"""Model files: reading GGUF and Hugging Face weights, building ONNX model folders, the catalogue, downloads.

Plain Python: this package never imports Qt.
"""
