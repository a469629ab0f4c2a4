"""``qwen-desktop serve`` as a user runs it: start, point the openai client at it, get a streamed answer, stop."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import openai


def test_serve_answers_the_openai_client_and_stops_on_ctrl_c(tiny_model_dir, tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "QWEN_DESKTOP_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "qwen_desktop", "serve", "--model", str(tiny_model_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        url = re.search(r"on (http://\S+)", line).group(1)
        with openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=60) as client:
            stream = client.chat.completions.create(
                model=tiny_model_dir.name,
                messages=[{"role": "user", "content": "Hello"}],
                max_tokens=6,
                stream=True,
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert text
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert '"POST /v1/chat/completions" 200' in err  # one log line per request
    assert "stopped" in err
    # the server loads through the same optimized-graph cache as the app and the terminal chat
    assert list((home / "cache" / "ort").glob("*/model.opt.onnx")), "serve wrote no optimized graph"


def test_serve_refuses_a_network_address_without_the_flag(tiny_model_dir):
    r = subprocess.run(
        [sys.executable, "-m", "qwen_desktop", "serve", "--model", str(tiny_model_dir), "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2
    assert "--allow-remote" in r.stderr
