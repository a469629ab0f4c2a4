"""Turn a Qwen2.5 GGUF into a float32 transformers folder, for onnxruntime-genai's model builder.

The builder reads only fp16/fp32 GGUF files, so a quantized GGUF goes through transformers first. Run with
the peers' venv (torch, transformers 5, accelerate, gguf):

    /tmp/peers-venv/bin/python benchmarks/gguf_to_hf.py MODEL.gguf OUT_DIR
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main() -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # The weights are already dequantized to float32; transformers still marks the model as GGUF-quantized
    # and refuses to save it, so drop that mark.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    print(f"wrote {out} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
