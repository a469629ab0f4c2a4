"""Run our engine and the peer runtimes on the same weights, one after another, and write a markdown table.

    python3 benchmarks/compare.py --gguf MODEL.gguf --ours OURS_DIR --genai GENAI_DIR \\
        [--hf HF_DIR] [--openvino OPENVINO_DIR] [--runs 3] [--threads 2] [--out docs/benchmarks.md]

Our engine runs through ``qwen-desktop bench --json``; each peer runs ``peer_worker.py`` with the Python of
the peers' virtual environment (``--peer-python``; OpenVINO GenAI with ``--openvino-python``, a venv of its
own: see benchmarks/README.md). Every runtime gets its own
process, so peak RSS is per runtime, and only one runs at a time. Prompts are the app's own bench prompts,
rendered with the model's chat template and tokenized by the app; the peers are fed those token ids.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_PEER_PYTHON = "/tmp/peers-venv/bin/python"
# OpenVINO GenAI's exporter pins (optimum-intel, transformers) clash with onnxruntime-genai's builder's.
DEFAULT_OPENVINO_PYTHON = "/tmp/openvino-venv/bin/python"
# The same figures as qwen_desktop.engine.bench._turn6 uses.
TURN6_SYSTEM = "You are a helpful assistant."
TURN6_ANSWER_TOKENS = 48
CONTEXT = 4096  # the bench's context limit; peers get the same KV-cache length

LABELS = {
    "ours": "Qwen Desktop engine (our default build: int4 decode + int8 prefill graphs, onnxruntime)",
    "ours-low": 'Qwen Desktop engine, "Use less memory" (the same build, prompts on the int4 decode graph)',
    "llama": "llama.cpp (llama-cpp-python, the GGUF itself)",
    "genai": "onnxruntime-genai int4 (its builder, last-token logits)",
    "hf": "transformers + torch fp32",
    "openvino": "OpenVINO GenAI int4 (optimum-cli export, LLMPipeline)",
}
PEERS = ("llama", "genai", "hf", "openvino")
OURS = ("ours", "ours-low")


def chat_peak_mb(r: dict) -> float:
    """Peak RSS over the steps every runtime takes (load, the prompts, a reply): ours is read where the
    bench has done them (``chat_peak_rss_mb``; its later figures, a 2000-token conversation among them, go
    further than the peers do), a peer's at the end of its run."""
    return float(r.get("chat_peak_rss_mb") or r["peak_rss_mb"])


def private_mb(r: dict) -> float | None:
    """Anonymous resident memory after those steps: what the process holds that is not a mapped file (the
    OS cannot drop it under pressure; it is what Windows' Task Manager shows as private memory)."""
    mem = r.get("memory_chat") or (None if r["runtime"] in OURS else r.get("memory_end"))
    return float(mem["anon_mb"]) if mem else None


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    flags = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            have = set(line.split(":", 1)[1].split())
            flags = " ".join(
                f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8") if f in have
            )
            break
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    os_name = platform.system()
    release = Path("/etc/os-release")
    if release.is_file():
        for line in release.read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"')
    return {
        "cpu": cpu,
        "cpu_flags": flags,
        "cores": str(os.cpu_count()),
        "ram": f"{mem_kb / 1024 / 1024:.1f} GiB",
        "os": f"{os_name}, Linux {platform.release()}",
        "python": sys.version.split()[0],
    }


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _busy_seconds() -> float:
    """CPU seconds all processes have spent busy since boot (from /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def prepare_spec(args: argparse.Namespace) -> dict:
    """Prompts and their token ids, made by the app's own tokenizer and chat template."""
    from qwen_desktop.engine.bench import SHORT_QUESTION, TURNS, long_prompt
    from qwen_desktop.engine.chat_template import CHATML_FALLBACK
    from qwen_desktop.engine.context import ContextBuilder
    from qwen_desktop.engine.model_files import load_model_files
    from qwen_desktop.engine.tokenizer import ChatTokenizer

    files = load_model_files(Path(args.ours))
    tokenizer = ChatTokenizer(files.tokenizer)
    context = ContextBuilder(tokenizer, files.chat_template)
    short = [{"role": "user", "content": SHORT_QUESTION}]
    long = [{"role": "user", "content": long_prompt(tokenizer)}]
    return {
        "gguf": str(Path(args.gguf).resolve()),
        "genai": str(Path(args.genai).resolve()) if args.genai else None,
        "hf": str(Path(args.hf).resolve()) if args.hf else None,
        "openvino": str(Path(args.openvino).resolve()) if args.openvino else None,
        "tokenizer": str(files.tokenizer),
        "template": files.chat_template or CHATML_FALLBACK,
        "threads": args.threads,
        "runs": args.runs,
        "context": CONTEXT,
        "decode_tokens": args.decode_tokens,
        "short_messages": short,
        "long_messages": long,
        "short_ids": context.encode(short),
        "long_ids": context.encode(long),
        "decode_ids": context.encode(short),  # the bench decodes after the short question too
        "turns": TURNS,
        "system_prompt": TURN6_SYSTEM,
        "turn_tokens": TURN6_ANSWER_TOKENS,
        "stop_ids": list(files.stop_ids),
        "llama_no_extra_bufts": args.llama_no_extra_bufts,
    }


def run_one(name: str, cmd: list[str], timeout: float) -> dict:
    """Run one runtime's process; its figures plus how busy the rest of the machine was meanwhile."""
    print(f"--- {name}: {shlex.join(cmd)}", file=sys.stderr, flush=True)
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy0, wall0 = _busy_seconds(), time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=REPO, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"--- {name}: stopped after {timeout:.0f} s", file=sys.stderr)
        return {"runtime": name, "error": f"did not finish in {timeout:.0f} s", "command": shlex.join(cmd)}
    wall = time.perf_counter() - wall0
    busy = _busy_seconds() - busy0
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (after_children.ru_utime - before_children.ru_utime) + (
        after_children.ru_stime - before_children.ru_stime
    )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        print(f"--- {name} failed (exit {proc.returncode}):\n" + "\n".join(tail), file=sys.stderr)
        return {"runtime": name, "error": " / ".join(tail)[-400:], "command": shlex.join(cmd)}
    text = proc.stdout.strip()
    result = json.loads(text if name in OURS else text.splitlines()[-1])
    result["runtime"] = name
    result["command"] = shlex.join(cmd)
    result["wall_s"] = wall
    result["other_cores"] = max(0.0, busy - own) / wall  # CPU used by other processes, in cores
    print(f"--- {name}: done in {wall:.0f} s", file=sys.stderr, flush=True)
    return result


def our_versions() -> dict[str, str]:
    import onnxruntime

    import qwen_desktop

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "qwen_desktop"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    ).stdout.strip()
    return {
        "qwen-desktop": f"{qwen_desktop.__version__} (git {commit}{', with uncommitted changes' if dirty else ''})",
        "onnxruntime": onnxruntime.__version__,
    }


def _ms(s: float | None) -> str:
    if s is None:
        return "–"
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def _mb(mb: float | None) -> str:
    return "–" if mb is None else f"{mb:.0f} MB"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}×" if b else "–"


def summary(rows: list[dict]) -> str:
    """A few sentences that compare our engine with the best peer on each figure, from the numbers."""
    ok = [r for r in rows if "error" not in r]
    ours = next((r for r in ok if r["runtime"] == "ours"), None)
    lean = next((r for r in ok if r["runtime"] == "ours-low"), None)
    peers = [r for r in ok if r["runtime"] not in OURS]
    if ours is None or not peers:
        return "Not enough runtimes finished to compare."
    out = []
    best = max(peers, key=lambda r: r["decode_tps"])
    verb = "faster than" if ours["decode_tps"] > best["decode_tps"] else "slower than"
    out.append(
        f"Decode: ours {ours['decode_tps']:.1f} tok/s, {_ratio(ours['decode_tps'], best['decode_tps'])} the best "
        f"peer ({best['runtime']}, {best['decode_tps']:.1f} tok/s), i.e. {verb} it."
    )
    for key, label in (("ttft_short_s", "short prompt"), ("ttft_long_s", "long prompt")):
        best = min(peers, key=lambda r, k=key: r[k])
        verb = "faster" if ours[key] < best[key] else "slower"
        out.append(
            f"TTFT, {label}: ours {_ms(ours[key])} vs the best peer's {_ms(best[key])} ({best['runtime']}), "
            f"{_ratio(max(ours[key], best[key]), min(ours[key], best[key]))} {verb}."
        )
    with6 = [r for r in peers if r.get("turn6_ttft_s")]
    if with6:
        best = min(with6, key=lambda r: r["turn6_ttft_s"])
        out.append(
            f"Turn 6 (prefix kept in the KV cache): ours {_ms(ours['turn6_ttft_s'])} "
            f"({ours['turn6_reused_tokens']} of {ours['turn6_prompt_tokens']} tokens reused) vs "
            f"{_ms(best['turn6_ttft_s'])} for {best['runtime']}."
        )
    best = min(peers, key=chat_peak_mb)
    text = (
        f"Memory over the same steps: ours peaks at {chat_peak_mb(ours):.0f} MB"
        + (f' ({chat_peak_mb(lean):.0f} MB with "Use less memory")' if lean else "")
        + f", the leanest peer ({best['runtime']}) at {chat_peak_mb(best):.0f} MB."
    )
    with_private = [r for r in peers if private_mb(r) is not None]
    if private_mb(ours) is not None and with_private:
        least = min(with_private, key=lambda r: private_mb(r) or 0.0)
        text += (
            f" Anonymous (private) memory after them: ours {private_mb(ours):.0f} MB"
            + (
                f" ({private_mb(lean):.0f} MB with less memory)"
                if lean and private_mb(lean) is not None
                else ""
            )
            + f", the least of the peers {private_mb(least):.0f} MB ({least['runtime']})."
        )
    if lean:
        text += (
            f' "Use less memory" answers the long prompt in {_ms(lean["ttft_long_s"])} against '
            f"{_ms(ours['ttft_long_s'])} and decodes at {lean['decode_tps']:.1f} tok/s."
        )
    out.append(text)
    return " ".join(out)


def spread(rows: list[dict]) -> list[str]:
    """Each peer's individual runs (min–max), so the noise behind a median is visible."""
    lines = []
    for r in rows:
        raw = r.get("raw")
        if not raw:
            continue
        parts = []
        for key, label in (
            ("ttft_short_s", "TTFT short"),
            ("ttft_long_s", "TTFT long"),
            ("turn6_ttft_s", "turn 6"),
        ):
            parts.append(f"{label} {_ms(min(raw[key]))}–{_ms(max(raw[key]))}")
        parts.append(f"decode {min(raw['decode_tps']):.1f}–{max(raw['decode_tps']):.1f} tok/s")
        lines.append(f"- {r['runtime']}: " + ", ".join(parts))
    if not lines:
        return []
    head = "Range over the individual runs (the peers; `qwen-desktop bench` reports only its medians):"
    return [head, "", *lines, ""]


MEMORY_POINTS = (
    ("memory_loaded", "loaded and warmed up"),
    ("memory_long_prompt", "first token of the long prompt"),
    ("memory_chat", "after a chat (load, the prompts, a reply)"),
    ("memory_end", "after the long-conversation decode"),
)


def memory_breakdown(rows: list[dict]) -> list[str]:
    """Our resident memory split into anonymous and file-backed pages, and each graph's share, from the
    bench's /proc/self/smaps_rollup readings (Linux only; nothing when the bench had none)."""
    ours = next((r for r in rows if r["runtime"] == "ours" and "error" not in r), None)
    points = [(label, ours[key]) for key, label in MEMORY_POINTS if ours and ours.get(key)]
    if not points:
        return []
    roles = [role for role in ("decode", "prefill", "head") if role in points[0][1]["graphs_mb"]]
    lines = [
        "## Our memory, broken down",
        "",
        "Resident memory of the bench process (`/proc/self/smaps_rollup`: anonymous against file-backed pages; "
        "`/proc/self/smaps`: the resident pages mapped from each graph's cached optimized copy), in MB:",
        "",
        "| when | resident | anonymous | file-backed | " + " | ".join(f"{r} graph" for r in roles) + " |",
        "|---|---|---|---|" + "---|" * len(roles),
    ]
    for label, mem in points:
        graphs = " | ".join(f"{mem['graphs_mb'].get(r, 0):.0f}" for r in roles)
        lines.append(
            f"| {label} | {mem['rss_mb']:.0f} | {mem['anon_mb']:.0f} | {mem['file_mb']:.0f} | {graphs} |"
        )
    lines += [
        "",
        f"Peak (`ru_maxrss`): {chat_peak_mb(ours):.0f} MB after the chat, {ours['peak_rss_mb']:.0f} MB at the "
        "end of the bench.",
        "",
    ]
    return lines


def warm_start(rows: list[dict]) -> list[str]:
    """Our load, warm-up and launch-to-ready seconds, per mode (the bench's second start: from the cache)."""
    ours = [r for r in rows if r["runtime"] in OURS and "error" not in r]
    if not ours:
        return []
    lines = [
        "## Our warm start",
        "",
        "Seconds from the bench process's start (imports of Python, numpy, ONNX Runtime and the tokenizer "
        'included) to the model loaded and warmed up; "cache" says whether every graph came from the '
        "optimized-graph cache, as on every start after the first.",
        "",
        "| mode | load | warm-up | load + warm-up | launch to ready | cache |",
        "|---|---|---|---|---|---|",
    ]
    for r in ours:
        ready = f"{r['ready_s']:.2f} s" if r.get("ready_s") else "–"
        mode = "use less memory" if r["runtime"] == "ours-low" else "default"
        lines.append(
            f"| {mode} | {r['load_s']:.2f} s | {r['warmup_s']:.2f} s | {r['load_s'] + r['warmup_s']:.2f} s "
            f"| {ready} | {'yes' if r.get('from_cache') else 'no: a first load'} |"
        )
    return [*lines, ""]


def write_markdown(path: Path, info: dict, rows: list[dict]) -> None:
    m = info["machine"]
    lines = [
        "# Benchmarks: our engine beside the peer runtimes",
        "",
        f"Written by `benchmarks/compare.py` on {info['date']} (one run, every runtime measured in it). "
        f"Median of {info['runs']} runs, {info['threads']} threads, greedy, the same token ids for every runtime. "
        "Each runtime measures in rounds, every figure once a round.",
        "",
        "## Machine",
        "",
        f"- CPU: {m['cpu']} ({m['cores']} cores visible; {m['cpu_flags'] or 'no AVX2/AVX-512'})",
        f"- RAM: {m['ram']}",
        f"- OS: {m['os']}; Python {m['python']}",
        f"- Load average (1, 5, 15 min) at the start: {info['load_start']}; at the end: {info['load_end']}.",
    ]
    busy = [r for r in rows if r.get("other_cores", 0) > 0.25]
    measured = [r["other_cores"] for r in rows if "other_cores" in r]
    # The load average at the start also counts work that ended before the run; what other processes
    # used while each runtime ran is measured, and that decides (the load average only without it).
    if busy or (not measured and float(info["load_start"].split()[0]) > 0.5):
        lines.append(
            "- **Other work was running on this machine during the run** (it is shared); CPU used by other "
            "processes while each runtime ran: "
            + ", ".join(f"{r['runtime']} {r['other_cores']:.2f} cores" for r in rows if "other_cores" in r)
            + f" of {m['cores']}. Expect the figures to be noisy and slower than on an idle machine."
        )
    else:
        lines.append(
            "- The machine was otherwise idle during the run"
            + (f" (other processes used at most {max(measured):.2f} cores)." if measured else ".")
        )
    lines += ["", "## Versions", ""]
    for name, value in info["versions"].items():
        lines.append(f"- {name}: {value}")
    for r in rows:
        for name, value in r.get("versions", {}).items():
            lines.append(f"- {name}: {value}")
    lines += [
        "",
        "## Results",
        "",
        f"Prompts from `qwen_desktop.engine.bench`: the short question ({info['short_tokens']} tokens with the "
        f"chat template), the long text ({info['long_tokens']} tokens), decode over {info['decode_tokens']} "
        "tokens after the short question (end-of-text ignored), and turn 6 of a conversation whose five earlier "
        f"turns were answered greedily (up to {TURN6_ANSWER_TOKENS} tokens each) in the same session, each runtime "
        "keeping its KV cache between turns.",
        "",
        "| runtime | TTFT short | TTFT long | decode tok/s | turn-6 TTFT | peak RSS | anonymous | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        label = LABELS[r["runtime"]]
        if "error" in r:
            lines.append(f"| {label} | failed: {r['error'][:120]} | | | | | | |")
            continue
        t6 = (
            f"{_ms(r['turn6_ttft_s'])} ({r['turn6_prompt_tokens']} tok, {r['turn6_reused_tokens']} reused)"
            if r.get("turn6_ttft_s") and r.get("turn6_reused_tokens") is not None
            else f"{_ms(r['turn6_ttft_s'])} ({r['turn6_prompt_tokens']} tok)"
            if r.get("turn6_ttft_s")
            else "–"
        )
        if r.get("turn6_note"):  # how the runtime kept (or could not keep) the conversation's prefix
            t6 += f"; {r['turn6_note']}"
        lines.append(
            f"| {label} | {_ms(r['ttft_short_s'])} ({r['short_prompt_tokens']} tok) "
            f"| {_ms(r['ttft_long_s'])} ({r['long_prompt_tokens']} tok) | {r['decode_tps']:.1f} | {t6} "
            f"| {chat_peak_mb(r):.0f} MB | {_mb(private_mb(r))} | {r['load_s']:.2f} s |"
        )
    lines += [
        "",
        "TTFT is the time from handing the prompt over to getting the first generated token (prompt evaluation "
        "included, cache empty except for turn 6). Peak RSS is the process's maximum resident set "
        "(`ru_maxrss`), one process per runtime, over the same steps: a peer's at the end of its run, ours "
        "where the bench has done them (after round 1's reply; its later figures go further). Anonymous is "
        "the resident memory that is not a mapped file (`/proc/self/smaps_rollup`) at that point: the part "
        "the OS cannot drop and read back under pressure. Load is model load time in that process (ours: "
        "session creation from its cached optimized graph; warm-up excluded).",
        "",
        *memory_breakdown(rows),
        *warm_start(rows),
        "## What it says",
        "",
        summary(rows),
        "",
        *spread(rows),
        "## Commands",
        "",
        "```sh",
        info["command"],
        "```",
        "",
        "which ran, one after another:",
        "",
        "```sh",
        *[r["command"] for r in rows],
        "```",
        "",
        "Model folders were made with the commands in `benchmarks/README.md` (`qwen-desktop build-model` for "
        "ours, `benchmarks/gguf_to_hf.py` + `onnxruntime_genai.models.builder -p int4 -e cpu --extra_options "
        "prune_lm_head=true` for onnxruntime-genai, `optimum-cli export openvino --weight-format int4 --task "
        "text-generation-with-past` of the same transformers folder for OpenVINO GenAI).",
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True, help="the GGUF file (llama.cpp runs it as is)")
    ap.add_argument("--ours", required=True, help="our model folder, built from that GGUF")
    ap.add_argument("--genai", help="onnxruntime-genai model folder, built from the same GGUF")
    ap.add_argument("--hf", help="transformers folder (gguf_to_hf.py output) to also run torch fp32")
    ap.add_argument("--openvino", help="OpenVINO model folder (optimum-cli export openvino of --hf's folder)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--decode-tokens", type=int, default=128)
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--json-out", help="also write every figure as JSON here")
    ap.add_argument("--peer-python", default=DEFAULT_PEER_PYTHON, help="Python of the peers' venv")
    ap.add_argument(
        "--openvino-python", default=DEFAULT_OPENVINO_PYTHON, help="Python of OpenVINO GenAI's venv"
    )
    ap.add_argument("--timeout", type=float, default=1800, help="seconds one runtime may take")
    ap.add_argument("--skip", nargs="*", default=[], choices=[*OURS, *PEERS])
    ap.add_argument(
        "--llama-no-extra-bufts",
        action="store_true",
        help="load llama.cpp with use_extra_bufts=False (needed where its AMX repacking crashes)",
    )
    ap.add_argument("--render", metavar="JSON", help="only rewrite --out from an earlier run's --json-out")
    args = ap.parse_args()
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        write_markdown(Path(args.out), saved["info"], saved["rows"])
        return 0

    spec = prepare_spec(args)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
        spec_path = f.name
    ours_cli = shutil.which("qwen-desktop") or "qwen-desktop"
    worker = str(HERE / "peer_worker.py")
    plan = [
        (
            "ours",
            [
                ours_cli,
                "bench",
                "--model",
                str(Path(args.ours).resolve()),
                "--threads",
                str(args.threads),
                "--runs",
                str(args.runs),
                "--decode-tokens",
                str(args.decode_tokens),
                "--json",
            ],
        ),
        ("llama", [args.peer_python, worker, "llama", spec_path]),
    ]
    plan.insert(1, ("ours-low", [*plan[0][1], "--low-memory"]))
    if args.genai:
        plan.append(("genai", [args.peer_python, worker, "genai", spec_path]))
    if args.hf:
        plan.append(("hf", [args.peer_python, worker, "hf", spec_path]))
    if args.openvino:
        plan.append(("openvino", [args.openvino_python, worker, "openvino", spec_path]))

    info = {
        "command": shlex.join([sys.executable, *sys.argv]),
        "runs": args.runs,
        "threads": args.threads,
        "decode_tokens": args.decode_tokens,
        "short_tokens": len(spec["short_ids"]),
        "long_tokens": len(spec["long_ids"]),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "versions": our_versions(),
        "load_start": load_average(),
    }
    rows = [run_one(name, cmd, args.timeout) for name, cmd in plan if name not in args.skip]
    info["load_end"] = load_average()
    Path(spec_path).unlink()
    write_markdown(Path(args.out), info, rows)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"info": info, "rows": rows}, indent=2))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
