"""Measure one peer runtime on prompts prepared by ``compare.py``; prints one JSON line.

Run by ``compare.py`` in its own process (so peak RSS belongs to one runtime), with the Python of the
peers' virtual environment. It imports nothing from ``qwen_desktop``: the prompt token ids come in the
spec file, and multi-turn prompts are rendered here with the model's chat template (the same Jinja
settings as ``qwen_desktop.engine.chat_template``) and checked against the ids the app produced.

    python peer_worker.py {llama,genai,hf} SPEC.json
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
from pathlib import Path


class Runtime:
    """Greedy decoding with a KV cache that can be kept (prefix reuse) or dropped."""

    name = ""

    def versions(self) -> dict[str, str]:
        raise NotImplementedError

    def prepare(self, ignore_eos: bool = False) -> None:
        """Empty the KV cache for a new conversation (not timed)."""
        raise NotImplementedError

    def start(self, ids: list[int]) -> int:
        """Feed ``ids`` (the whole prompt) and return the first greedy token.

        The cache keeps the longest prefix of ``ids`` it already holds and evaluates only the rest.
        """
        raise NotImplementedError

    def step(self) -> int:
        """The next greedy token after the last one returned."""
        raise NotImplementedError

    def reused(self) -> int:
        """How many prompt tokens the last ``start`` took from the cache."""
        return 0


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class LlamaCpp(Runtime):
    name = "llama"

    def __init__(self, spec: dict) -> None:
        import llama_cpp

        if spec.get("llama_no_extra_bufts"):
            # Builds with AMX crash in the repacked ("extra") buffer types on the first decode; the
            # model-params default is the only place to switch them off (Llama() has no keyword).
            original = llama_cpp.llama_model_default_params

            def params():
                p = original()
                p.use_extra_bufts = False
                return p

            llama_cpp.llama_model_default_params = params
            llama_cpp.llama.llama_cpp.llama_model_default_params = params
        self.llm = llama_cpp.Llama(
            model_path=spec["gguf"],
            n_ctx=spec["context"],
            n_batch=512,
            n_threads=spec["threads"],
            n_threads_batch=spec["threads"],
            verbose=False,
        )
        self._gen = None
        self._reused = 0

    def versions(self) -> dict[str, str]:
        import llama_cpp

        return {"llama-cpp-python": llama_cpp.__version__}

    def prepare(self, ignore_eos: bool = False) -> None:
        if self._gen is not None:
            self._gen.close()
            self._gen = None
        self.llm.reset()

    def start(self, ids: list[int]) -> int:
        if self._gen is not None:
            self._gen.close()  # what it evaluated stays in the cache
        held = list(self.llm.input_ids[: self.llm.n_tokens])
        # generate() keeps the longest cached prefix itself (and re-evaluates one token if all match).
        self._reused = min(_common_prefix(held, ids), len(ids) - 1)
        self._gen = self.llm.generate(
            ids, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0, reset=True
        )
        return int(next(self._gen))

    def step(self) -> int:
        return int(next(self._gen))

    def reused(self) -> int:
        return self._reused


class GenAI(Runtime):
    name = "genai"

    def __init__(self, spec: dict) -> None:
        import onnxruntime_genai as og

        self.og = og
        config = og.Config(spec["genai"])
        config.clear_providers()  # CPU
        threads = {"intra_op_num_threads": spec["threads"], "inter_op_num_threads": 1}
        config.overlay(json.dumps({"model": {"decoder": {"session_options": threads}}}))
        self.model = og.Model(config)
        self.context = spec["context"]
        self.threads = spec["threads"]
        self.gen = None
        self._reused = 0

    def versions(self) -> dict[str, str]:
        import onnxruntime

        return {"onnxruntime-genai": self.og.__version__, "onnxruntime (genai's)": onnxruntime.__version__}

    def prepare(self, ignore_eos: bool = False) -> None:
        params = self.og.GeneratorParams(self.model)
        options = {"do_sample": False, "max_length": self.context, "repetition_penalty": 1.0}
        if ignore_eos:  # min_length = max_length: EOS cannot end a fixed-length decode run early
            options["min_length"] = self.context
        params.set_search_options(**options)
        self.gen = None
        self.gen = self.og.Generator(self.model, params)

    def start(self, ids: list[int]) -> int:
        self._reused = 0
        held = list(self.gen.get_sequence(0))
        if held:
            # The last token in the sequence was sampled but not yet run through the model: never keep it.
            keep = min(_common_prefix(held, ids), len(held) - 1, len(ids) - 1)
            self.gen.rewind_to(keep)
            self._reused = keep
        self.gen.append_tokens(ids[self._reused :])
        self.gen.generate_next_token()
        return int(self.gen.get_next_tokens()[0])

    def step(self) -> int:
        self.gen.generate_next_token()
        return int(self.gen.get_next_tokens()[0])

    def reused(self) -> int:
        return self._reused


class Transformers(Runtime):
    name = "hf"

    def __init__(self, spec: dict) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        torch.set_num_threads(spec["threads"])
        self.torch = torch
        self.model = AutoModelForCausalLM.from_pretrained(spec["hf"], dtype=torch.float32).eval()
        self.cache = None
        self.held: list[int] = []
        self._reused = 0

    def versions(self) -> dict[str, str]:
        import transformers

        return {"torch": self.torch.__version__, "transformers": transformers.__version__}

    def _forward(self, new: list[int]) -> int:
        with self.torch.inference_mode():
            out = self.model(
                input_ids=self.torch.tensor([new]),
                past_key_values=self.cache,
                use_cache=True,
                logits_to_keep=1,
            )
        self.cache = out.past_key_values
        token = int(out.logits[0, -1].argmax())
        self.held += new
        self.last = token
        return token

    def prepare(self, ignore_eos: bool = False) -> None:
        self.cache = None
        self.held = []

    def start(self, ids: list[int]) -> int:
        keep = min(_common_prefix(self.held, ids), len(ids) - 1) if self.cache is not None else 0
        if keep:
            self.cache.crop(keep - len(self.held))  # transformers 5: a negative count of tokens to drop
            self.held = self.held[:keep]
        else:
            self.cache = None
            self.held = []
        self._reused = keep
        return self._forward(ids[keep:])

    def step(self) -> int:
        return self._forward([self.last])

    def reused(self) -> int:
        return self._reused


RUNTIMES = {"llama": LlamaCpp, "genai": GenAI, "hf": Transformers}


def render(template: str, messages: list[dict[str, str]]) -> str:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = lambda msg: (_ for _ in ()).throw(ValueError(msg))
    return env.from_string(template).render(messages=messages, add_generation_prompt=True, tools=None)


def ttft(rt: Runtime, ids: list[int]) -> float:
    rt.prepare()
    start = time.perf_counter()
    rt.start(ids)
    return time.perf_counter() - start


def decode(rt: Runtime, ids: list[int], n: int) -> float:
    """Tokens/s over ``n`` greedy tokens, end-of-text ignored; timed from the first token like the app."""
    rt.prepare(ignore_eos=True)
    rt.start(ids)
    first = time.perf_counter()
    for _ in range(n - 1):
        rt.step()
    return (n - 1) / (time.perf_counter() - first)


def turn6(rt: Runtime, spec: dict, encode, decode_text) -> tuple[float, int, int]:
    """TTFT of the sixth user turn after five answered turns (up to 48 tokens each) in one session."""
    stops = set(spec["stop_ids"])
    history = [{"role": "system", "content": spec["system_prompt"]}]
    rt.prepare()
    for question in spec["turns"][:-1]:
        history.append({"role": "user", "content": question})
        ids = encode(render(spec["template"], history))
        out = []
        token = rt.start(ids)
        while token not in stops and len(out) < spec["turn_tokens"]:
            out.append(token)
            if len(out) == spec["turn_tokens"]:
                break
            token = rt.step()
        history.append({"role": "assistant", "content": decode_text(out)})
    history.append({"role": "user", "content": spec["turns"][-1]})
    ids = encode(render(spec["template"], history))
    start = time.perf_counter()
    rt.start(ids)
    return time.perf_counter() - start, len(ids), rt.reused()


def main() -> None:
    name, spec_path = sys.argv[1], Path(sys.argv[2])
    spec = json.loads(spec_path.read_text())
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(spec["tokenizer"])

    def encode(text: str) -> list[int]:
        return list(tok.encode(text, add_special_tokens=False).ids)

    def decode_text(ids: list[int]) -> str:
        return str(tok.decode(ids, skip_special_tokens=False))

    # The worker's rendering must give the ids the app gave, or the turn-6 figures would not compare.
    for key, messages in (("short", spec["short_messages"]), ("long", spec["long_messages"])):
        if encode(render(spec["template"], messages)) != spec[f"{key}_ids"]:
            raise SystemExit(f"{key} prompt renders to different ids here than in the app")

    started = time.perf_counter()
    rt = RUNTIMES[name](spec)
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    rt.prepare()
    rt.start(spec["short_ids"])
    for _ in range(3):
        rt.step()
    warmup_s = time.perf_counter() - started

    runs, n = spec["runs"], spec["decode_tokens"]
    # In rounds, each figure once a round, as `qwen-desktop bench` measures ours: a slow spell of a shared
    # machine then touches one run of several figures, not every run of one.
    short, long, dec, t6 = [], [], [], []
    for _ in range(runs):
        short.append(ttft(rt, spec["short_ids"]))
        long.append(ttft(rt, spec["long_ids"]))
        dec.append(decode(rt, spec["decode_ids"], n))
        t6.append(turn6(rt, spec, encode, decode_text))
    long_s = statistics.median(long)
    result = {
        "runtime": name,
        "versions": rt.versions(),
        "load_s": load_s,
        "warmup_s": warmup_s,
        "ttft_short_s": statistics.median(short),
        "short_prompt_tokens": len(spec["short_ids"]),
        "ttft_long_s": long_s,
        "long_prompt_tokens": len(spec["long_ids"]),
        "prefill_tps": len(spec["long_ids"]) / long_s,
        "decode_tps": statistics.median(dec),
        "decode_tokens": n,
        "turn6_ttft_s": statistics.median(t for t, _, _ in t6),
        "turn6_prompt_tokens": t6[0][1],
        "turn6_reused_tokens": t6[0][2],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "raw": {
            "ttft_short_s": short,
            "ttft_long_s": long,
            "decode_tps": dec,
            "turn6_ttft_s": [t for t, _, _ in t6],
        },
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
