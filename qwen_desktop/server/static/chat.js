// The local chat page: talks to this server's own OpenAI-compatible API and streams answers over SSE.
// Model text is untrusted: it is only ever inserted as text (textContent), never as HTML.
"use strict";

const messages = [];
let controller = null;

const $ = (id) => document.getElementById(id);

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("key").value.trim();
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

function bubble(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  div.textContent = text;
  $("log").appendChild(div);
  div.scrollIntoView({ block: "end" });
  return div;
}

function busy(on) {
  $("send").disabled = on;
  $("stop").disabled = !on;
}

async function loadModel() {
  try {
    const r = await fetch("/health");
    const h = await r.json();
    $("model").textContent = h.model ? "model: " + h.model : "no model loaded";
  } catch (e) {
    $("model").textContent = "server unreachable";
  }
}

// Reads "data: ..." events from a streamed response; calls onData with each parsed JSON payload.
async function readEvents(response, onData) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of block.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") return;
        onData(JSON.parse(data));
      }
    }
  }
}

class ApiFailure extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

// One streamed request for `history`; calls onText with the answer so far. Returns the usage, if sent.
async function stream(history, onText) {
  const r = await fetch("/v1/chat/completions", {
    method: "POST",
    headers: headers(),
    body: JSON.stringify({ messages: history, stream: true, stream_options: { include_usage: true } }),
    signal: controller.signal,
  });
  if (!r.ok) {
    let message = r.status + " " + r.statusText;
    let code = null;
    try {
      const e = (await r.json()).error;
      message = e.message;
      code = e.code;
    } catch (e) { /* not JSON */ }
    throw new ApiFailure(message, code);
  }
  let answer = "";
  let usage = null;
  await readEvents(r, (doc) => {
    if (doc.error) throw new ApiFailure(doc.error.message, doc.error.code);
    if (doc.usage) usage = doc.usage;
    for (const c of doc.choices || []) {
      if (c.delta && typeof c.delta.content === "string") {
        answer += c.delta.content;
        onText(answer);
      }
    }
  });
  return usage;
}

async function send(text) {
  messages.push({ role: "user", content: text });
  bubble("user", text);
  const out = bubble("assistant", "");
  let answer = "";
  let dropped = 0;
  controller = new AbortController();
  busy(true);
  $("status").textContent = "waiting for the model…";
  try {
    let usage = null;
    for (;;) {
      try {
        usage = await stream(messages.slice(dropped), (so_far) => {
          answer = so_far;
          out.textContent = answer;
          $("status").textContent = "";
        });
        break;
      } catch (e) {
        // The conversation outgrew the model's context: leave the oldest exchange out and try again.
        if (e.code === "context_length_exceeded" && messages.length - dropped > 1) {
          dropped += 2;
          continue;
        }
        throw e;
      }
    }
    messages.push({ role: "assistant", content: answer });
    const parts = [];
    if (usage) parts.push(usage.completion_tokens + " tokens");
    if (dropped) parts.push("older messages left out to fit the context");
    $("status").textContent = parts.join(" · ");
  } catch (e) {
    if (e.name === "AbortError") {
      $("status").textContent = "stopped";
      if (answer) messages.push({ role: "assistant", content: answer });
      else messages.pop();
    } else {
      messages.pop();
      out.remove();
      bubble("error", String(e.message || e));
      $("status").textContent = "";
    }
  } finally {
    controller = null;
    busy(false);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  loadModel();
  $("composer").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("prompt").value.trim();
    if (!text || controller) return;
    $("prompt").value = "";
    send(text);
  });
  $("prompt").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => controller && controller.abort());
  $("new").addEventListener("click", () => {
    if (controller) controller.abort();
    messages.length = 0;
    $("log").replaceChildren();
    $("status").textContent = "";
  });
});
