"""Measure one peer runtime on prompts prepared by ``compare.py``; prints one JSON line.

Run by ``compare.py`` in its own process (so peak RSS belongs to one runtime), with the Python of the
peers' virtual environment. It imports nothing from ``qwen_desktop``: the prompt token ids come in the
spec file, and multi-turn prompts are rendered here with the model's chat template (the same Jinja
settings as ``qwen_desktop.engine.chat_template``) and checked against the ids the app produced.

    python peer_worker.py {llama,genai,hf,openvino} SPEC.json

OpenVINO GenAI's ``LLMPipeline`` has no token-by-token API: it runs a whole ``generate()`` call, so it takes
the app's already-templated prompt text (``apply_chat_template=False``, its tokenization checked against the
app's ids) and times the tokens its streamer receives; its turn 6 runs in its chat mode, which keeps the KV
cache between turns.
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
from collections.abc import Callable
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

    # The three measurements, token by token through start/step; a runtime without that API overrides them.
    def ttft(self, spec: dict, key: str) -> float:
        return ttft(self, spec[f"{key}_ids"])

    def decode_tps(self, spec: dict) -> float:
        return decode(self, spec["decode_ids"], spec["decode_tokens"])

    def turn6(self, spec: dict, encode: Callable, decode_text: Callable) -> tuple[float, int, int]:
        return turn6(self, spec, encode, decode_text)

    def warm_up(self, spec: dict) -> None:
        self.prepare()
        self.start(spec["short_ids"])
        for _ in range(3):
            self.step()


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


class OpenVINO(Runtime):
    """OpenVINO GenAI's ``LLMPipeline`` on the CPU: whole ``generate()`` calls, tokens seen by a streamer."""

    name = "openvino"

    def __init__(self, spec: dict) -> None:
        import openvino_genai as ov_genai

        self.ov_genai = ov_genai
        self.pipe = ov_genai.LLMPipeline(spec["openvino"], "CPU", INFERENCE_NUM_THREADS=spec["threads"])
        self.tokenizer = self.pipe.get_tokenizer()
        # The prompts go in as the app rendered them; the pipeline's tokenizer must give the app's ids.
        for key in ("short", "long"):
            text = render(spec["template"], spec[f"{key}_messages"])
            if self._ids(text) != spec[f"{key}_ids"]:
                raise SystemExit(f"OpenVINO's tokenizer gives other ids than the app for the {key} prompt")
        self.note = ""

    def versions(self) -> dict[str, str]:
        import openvino

        return {"openvino-genai": self.ov_genai.__version__, "openvino": openvino.__version__}

    def _ids(self, text: str) -> list[int]:
        tokens = self.tokenizer.encode(text, add_special_tokens=False).input_ids
        return [int(t) for t in tokens.data[0]]

    def _config(self, new_tokens: int, ignore_eos: bool = False):
        config = self.pipe.get_generation_config()
        config.max_new_tokens = new_tokens
        config.do_sample = False
        config.repetition_penalty = 1.0
        config.ignore_eos = ignore_eos
        config.apply_chat_template = False  # the text is the app's templated prompt already
        return config

    def _generate(self, prompt, config) -> tuple[list[float], object]:
        """Run ``prompt``: the perf_counter time at which each generated token reached the streamer, and
        the pipeline's result."""
        times: list[float] = []
        status = self.ov_genai.StreamingStatus.RUNNING

        class Clock(self.ov_genai.StreamerBase):
            def write(self, token):
                times.append(time.perf_counter())
                return status

            def end(self):
                pass

        result = self.pipe.generate(prompt, config, Clock())
        return times, result

    def ttft(self, spec: dict, key: str) -> float:
        prompt = render(spec["template"], spec[f"{key}_messages"])
        config = self._config(1)
        start = time.perf_counter()
        times, _ = self._generate(prompt, config)
        return times[0] - start

    def decode_tps(self, spec: dict) -> float:
        prompt = render(spec["template"], spec["short_messages"])
        n = spec["decode_tokens"]
        times, _ = self._generate(prompt, self._config(n, ignore_eos=True))
        assert len(times) == n, f"{len(times)} tokens streamed, not {n}"
        return (n - 1) / (times[-1] - times[0])

    def warm_up(self, spec: dict) -> None:
        self._generate(render(spec["template"], spec["short_messages"]), self._config(4))

    def turn6(self, spec: dict, encode: Callable, decode_text: Callable) -> tuple[float, int, int | None]:
        """Five turns through ``generate(ChatHistory)`` (its chat API; ``start_chat`` is deprecated), then the
        sixth. The pipeline renders the history with the model's template and keeps its KV cache between
        calls, but reports only the whole prompt's length, not how much of it came from the cache: the
        count is None, and ``self.note`` gives the same prompt's TTFT from an empty cache to compare."""
        config = self._config(spec["turn_tokens"])
        config.stop_token_ids = set(spec["stop_ids"])
        config.apply_chat_template = True  # with a ChatHistory the pipeline renders the template itself
        first = self._config(1)
        first.stop_token_ids = config.stop_token_ids
        first.apply_chat_template = True
        history = [{"role": "system", "content": spec["system_prompt"]}]
        chat = self.ov_genai.ChatHistory()
        chat.append(history[0])
        for question in spec["turns"][:-1]:
            for message in (history, chat):
                message.append({"role": "user", "content": question})
            answer = self.pipe.generate(chat, config).texts[0]
            for message in (history, chat):
                message.append({"role": "assistant", "content": answer})
        for message in (history, chat):
            message.append({"role": "user", "content": spec["turns"][-1]})
        text = render(spec["template"], history)
        ids = encode(text)
        # Its own rendering of the same history must give the app's ids, or the figure would not compare.
        if self._ids(self.tokenizer.apply_chat_template(history, add_generation_prompt=True)) != ids:
            raise SystemExit("OpenVINO's chat rendering of turn 6 gives other ids than the app's")
        start = time.perf_counter()
        times, result = self._generate(chat, first)
        elapsed = times[0] - start
        if result.perf_metrics.get_num_input_tokens() != len(ids):
            raise SystemExit("OpenVINO's turn-6 prompt has another length than the app's")
        # The same prompt as text, not as a chat: the cache is dropped and the whole prompt evaluated.
        start = time.perf_counter()
        times, _ = self._generate(text, self._config(1))
        self.note = f"ChatHistory, cache reuse not reported; {_ms(times[0] - start)} from an empty cache"
        return elapsed, len(ids), None


def _ms(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


RUNTIMES = {"llama": LlamaCpp, "genai": GenAI, "hf": Transformers, "openvino": OpenVINO}


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
    rt.warm_up(spec)
    warmup_s = time.perf_counter() - started

    runs, n = spec["runs"], spec["decode_tokens"]
    # In rounds, each figure once a round, as `qwen-desktop bench` measures ours: a slow spell of a shared
    # machine then touches one run of several figures, not every run of one.
    short, long, dec, t6 = [], [], [], []
    for _ in range(runs):
        short.append(rt.ttft(spec, "short"))
        long.append(rt.ttft(spec, "long"))
        dec.append(rt.decode_tps(spec))
        t6.append(rt.turn6(spec, encode, decode_text))
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
        "turn6_note": getattr(rt, "note", ""),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "memory_end": memory_now(),
        "raw": {
            "ttft_short_s": short,
            "ttft_long_s": long,
            "decode_tps": dec,
            "turn6_ttft_s": [t for t, _, _ in t6],
        },
    }
    print(json.dumps(result))


def memory_now() -> dict | None:
    """Resident, anonymous and file-backed MB of this process now: ``qwen_desktop.engine.memory`` itself,
    loaded from the repository by path (it needs only the standard library; the peers' venv has no app)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "qwen_memory", Path(__file__).resolve().parent.parent / "qwen_desktop" / "engine" / "memory.py"
    )
    assert spec is not None and spec.loader is not None
    memory = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = memory  # its dataclasses look their module up
    spec.loader.exec_module(memory)
    use = memory.memory_use()
    return use.to_dict() if use is not None else None


if __name__ == "__main__":
    main()
