// planner's page. Every number shown comes from this server's API, whose payloads are the
// CLI's `--format json`; the page computes nothing of its own but the drawing. The whole
// state lives in the URL hash, so a link reproduces the view. No request leaves the origin.
"use strict";

const FAMILY_GROUPS = [
  ["llm", "LLM"], ["moe", "MoE"], ["diffusion_image", "Diffusion (image)"],
  ["diffusion_video", "Video"], ["var", "VAR"], ["vlm", "VLM"], ["vla", "VLA"],
  ["asr", "Speech"], ["embeddings", "Embeddings"], ["jepa", "JEPA"],
];
const TEXT = new Set(["llm", "moe"]);  // what curve, saturation, scaling and fit take
const ENGINES = {
  llm: ["vllm", "sglang", "trtllm"], moe: ["vllm", "sglang", "trtllm"],
  vlm: ["vllm", "sglang", "trtllm"],
  asr: ["faster-whisper", "transformers", "openai-whisper", "vllm", "trtllm"],
  diffusion_image: ["diffusers", "torch-compile", "tensorrt"],
  diffusion_video: ["diffusers", "torch-compile", "tensorrt"],
  embeddings: ["tei", "transformers"],
};
const WEIGHTS = ["", "bf16", "fp16", "fp8", "int8", "int4", "fp4", "mxfp4"];
const KVS = ["bf16", "fp16", "fp8", "int4"];

// One entry per control: `name` is the CLI option (or scenario key) it sets, and its
// data-control hook; `fam` lists the model groups it applies to (none: all).
const CONTROLS = [
  { g: "modelling", name: "model", label: "Model", kind: "model", def: "llama-3.1-8b",
    info: "The network to serve. Menus group models by family; a language model's weights and KV cache decide memory, its active parameters decide the arithmetic per token." },
  { g: "modelling", name: "gpu", label: "GPU", kind: "gpu", def: "h100-sxm",
    info: "The accelerator type. Its memory holds weights and KV cache; its HBM bandwidth sets decode speed (the pipe); its FLOPS set prefill speed (the die)." },
  { g: "modelling", name: "gpus", label: "GPUs", kind: "range", min: 1, max: 64, step: 1, def: 1,
    info: "GPUs in total. More than TP x PP runs data-parallel replicas: each replica serves its own users." },
  { g: "modelling", name: "tp", label: "Tensor parallel (TP)", kind: "number", min: 1, max: 64, def: "", fam: ["llm", "moe", "vlm"],
    info: "Splits every layer's matrices across GPUs of one replica: each GPU reads a share of the weights per token, but every layer pays all-reduces over the interconnect. Blank: GPUs / PP." },
  { g: "modelling", name: "pp", label: "Pipeline parallel (PP)", kind: "number", min: 1, max: 64, def: "", fam: ["llm", "moe", "vlm"],
    info: "Splits the layers into stages on different GPUs. It adds memory without all-reduces, but one token still crosses every stage in turn. Blank: 1." },
  { g: "modelling", name: "ep", label: "Expert parallel (EP)", kind: "number", min: 1, max: 64, def: "", fam: ["moe"],
    info: "Mixture-of-experts: spreads whole experts over the TP group instead of slicing each; tokens travel to their experts in an all-to-all. Blank: 1." },
  { g: "modelling", name: "weights", label: "Weights", kind: "select", options: WEIGHTS, def: "",
    info: "Bytes per weight. INT4/FP4 quarter the weights against BF16: less memory and less to read per decode step; the arithmetic runs in the precision the GPU supports. Blank: what the model name implies." },
  { g: "modelling", name: "kv", label: "KV cache", kind: "select", options: KVS, def: "bf16", fam: ["llm", "moe", "vlm"],
    info: "Bytes per cached key/value. The KV cache grows with every token of every user; FP8 halves it and fits twice the users. Weight quantisation does nothing for it." },
  { g: "modelling", name: "engine", label: "Engine", kind: "engine", def: "", fam: ["llm", "moe", "vlm", "asr", "diffusion_image", "diffusion_video", "embeddings"],
    info: "The serving engine: its memory policy (how much it reserves for the KV cache) for language models, its per-step host time for speech, how fast the denoiser runs for diffusion (torch-compile: a factor fitted on published eager/compiled pairs), fused or eager kernels for embeddings (transformers: eager PyTorch, fitted on published pairs). Blank: the family's default." },
  { g: "modelling", name: "batch", label: "Batch (users per replica)", kind: "range", min: 1, max: 512, step: 1, def: 8,
    info: "Requests served at once by one replica. Larger batches share each weight read among more users: the replica's throughput rises until compute or KV reads saturate, while each user's speed falls." },
  { g: "modelling", name: "input-tokens", label: "Prompt tokens", kind: "range", min: 16, max: 32768, step: 16, def: 1024, fam: ["llm", "moe", "vlm", "embeddings"],
    info: "Tokens read before the first answer token (prefill): compute-bound, it sets the time to first token." },
  { g: "modelling", name: "output-tokens", label: "Answer tokens", kind: "range", min: 1, max: 8192, step: 1, def: 256, fam: ["llm", "moe", "vlm"],
    info: "Tokens generated one at a time (decode): memory-bound, each needs the weights and the KV cache read once." },
  { g: "modelling", name: "images", label: "Images per request", kind: "number", min: 0, max: 64, def: 1, fam: ["vlm"],
    info: "Vision-language: each image becomes visual tokens in the prompt, after the image encoder runs." },
  { g: "modelling", name: "steps", label: "Denoising steps", kind: "number", min: 1, max: 1000, def: "", fam: ["diffusion_image", "diffusion_video"],
    info: "Diffusion: the denoiser runs once per step, so time grows with steps. Blank: the model card's." },
  { g: "modelling", name: "fast-accum", label: "16-bit accumulation", kind: "select", options: ["off", "on"], def: "off", fam: ["diffusion_image", "diffusion_video"],
    info: "Diffusion: the denoiser's GEMMs accumulate in 16 bits (FP8 with fast accumulation, TensorRT FP16). GeForce cards run FP16/FP8 tensor math with FP32 accumulation at half that rate; data-centre cards have one rate." },
  { g: "modelling", name: "offload", label: "CPU offload", kind: "select", options: ["off", "on"], def: "off", fam: ["diffusion_image", "diffusion_video"],
    info: "Diffusion: model CPU offload. Each component (text encoders, denoiser, VAE) waits in host memory and is on the GPU only while it runs, so the GPU holds only the largest (a 24 GB card fits FLUX in FP8); each batch moves them all in and out over PCIe." },
  { g: "modelling", name: "resolution", label: "Resolution (WxH)", kind: "text", def: "", fam: ["diffusion_image", "diffusion_video", "var", "jepa"],
    info: "Image or video frame size; latent tokens grow with the pixel count, attention with its square. Blank: the model's." },
  { g: "modelling", name: "frames", label: "Frames", kind: "number", min: 1, max: 100000, def: "", fam: ["diffusion_video", "jepa"],
    info: "Video/JEPA: frames per clip." },
  { g: "modelling", name: "audio-seconds", label: "Audio seconds", kind: "number", min: 1, max: 100000, def: 30, fam: ["asr"],
    info: "Speech: audio per request; the encoder reads 30-second windows, the decoder emits the words." },
  { g: "modelling", name: "beam", label: "Beam width", kind: "number", min: 1, max: 16, def: 1, fam: ["asr"],
    info: "Speech: hypotheses decoded side by side; beam 5 runs five decoder sequences per request." },
  { g: "modelling", name: "cameras", label: "Cameras", kind: "number", min: 1, max: 16, def: "", fam: ["vla"],
    info: "VLA: camera images per observation." },
  { g: "workload", name: "users", fam: ["llm", "moe", "vlm"], label: "People", kind: "range", min: 1, max: 100000, step: 1, def: 2000,
    info: "People who use the assistant (worker-equivalents). Seats are derived from them, their hours and the utilisation." },
  { g: "workload", name: "hours_per_person", fam: ["llm", "moe", "vlm"], label: "Hours a day per person", kind: "number", min: 0.1, max: 24, step: 0.1, def: 3,
    info: "Hours a day a person drives a session." },
  { g: "workload", name: "utilisation", fam: ["llm", "moe", "vlm"], label: "Utilisation", kind: "number", min: 0.05, max: 1, step: 0.05, def: 0.5,
    info: "Share of round-the-clock capacity bursty demand lets you use: peaks need headroom." },
  { g: "workload", name: "ttft_s", fam: ["llm", "moe", "vlm"], label: "TTFT target (s)", kind: "number", min: 0.05, max: 600, step: 0.05, def: 2,
    info: "Time to first token the plan must meet, at the percentile below." },
  { g: "workload", name: "ttft_percentile", fam: ["llm", "moe", "vlm"], label: "TTFT percentile", kind: "number", min: 50, max: 99.9, step: 1, def: 90,
    info: "Share of requests that must meet the TTFT target (90: nine in ten)." },
  { g: "workload", name: "tokens_per_s", fam: ["llm", "moe", "vlm"], label: "Tokens/s per user", kind: "number", min: 1, max: 1000, step: 1, def: 25,
    info: "Decode speed each user must see; reading speed is about 5-10 tokens/s." },
  { g: "workload", name: "think_time_s", fam: ["llm", "moe", "vlm"], label: "Think time (s)", kind: "number", min: 0, max: 3600, step: 1, def: 20,
    info: "Mean pause between an answer and the next prompt: people read and type." },
  { g: "workload", name: "docs_per_s", fam: ["embeddings"], label: "Documents per second", kind: "number", min: 0.01, max: 1e7, step: 1, def: 200,
    info: "Documents (or query-document pairs) to embed or rerank each second at the peak." },
  { g: "workload", name: "max_batch_latency_s", fam: ["embeddings"], label: "Most seconds per batch", kind: "number", min: 0.001, max: 3600, step: 0.1, def: 1,
    info: "A batch must finish within this: the latency a caller waits for its embeddings." },
  { g: "workload", name: "streams", fam: ["asr"], label: "Live audio streams", kind: "number", min: 1, max: 1e6, step: 1, def: 100,
    info: "Calls or microphones transcribed at once, each in real time." },
  { g: "workload", name: "max_rtf", fam: ["asr"], label: "Most real-time factor", kind: "number", min: 0.01, max: 1, step: 0.05, def: 0.5,
    info: "Seconds of compute per second of audio: 0.3 means a 30 s window is transcribed within 9 s." },
  { g: "workload", name: "images_per_s", fam: ["diffusion_image", "var"], label: "Images per second", kind: "number", min: 0.001, max: 1e5, step: 0.1, def: 1,
    info: "Images to generate each second at the peak." },
  { g: "workload", name: "max_s_per_image", fam: ["diffusion_image", "var"], label: "Most seconds per image", kind: "number", min: 0.01, max: 3600, step: 0.5, def: 10,
    info: "A batch must finish within this many seconds per image: the wait a user accepts." },
  { g: "workload", name: "videos_per_hour", fam: ["diffusion_video"], label: "Videos per hour", kind: "number", min: 0.01, max: 1e6, step: 1, def: 60,
    info: "Clips to generate each hour at the peak." },
  { g: "workload", name: "max_latency_s", fam: ["diffusion_video", "jepa"], label: "Most seconds per request", kind: "number", min: 0.001, max: 86400, step: 1, def: 600,
    info: "A batch must finish within this." },
  { g: "workload", name: "clips_per_s", fam: ["jepa"], label: "Clips per second", kind: "number", min: 0.001, max: 1e6, step: 1, def: 10,
    info: "Video clips the world model encodes (or plans from) each second." },
  { g: "workload", name: "robots", fam: ["vla"], label: "Robots", kind: "number", min: 1, max: 1e6, step: 1, def: 50,
    info: "Robots the policy drives at once, each at its control rate." },
  { g: "workload", name: "control_hz", fam: ["vla"], label: "Control rate (Hz)", kind: "number", min: 0.1, max: 1000, step: 1, def: 50,
    info: "Actions per second each robot executes; one inference yields a chunk of them." },
  { g: "workload", name: "vendors", label: "Vendors", kind: "select", options: ["", "nvidia", "amd", "intel", "nvidia,amd"], def: "",
    info: "Which makers' GPUs may be bought. Blank: all." },
  { g: "workload", name: "basis", label: "Buy or rent", kind: "select", options: ["purchase", "rental"], def: "purchase",
    info: "Purchase: whole servers, paid off over the horizon with power and hosting. Rental: cloud instances by the hour." },
  { g: "workload", name: "years", label: "Horizon (years)", kind: "number", min: 0.1, max: 50, step: 0.5, def: 3,
    info: "Years the purchase is paid off over, and the span the cost covers." },
  { g: "workload", name: "confidence", label: "Confidence", kind: "select", options: ["", "0.5", "0.8", "0.9", "0.95"], def: "",
    info: "Size so every target still holds when the estimator errs at this quantile in the pessimistic direction (from its cross-validated errors on published runs). Blank: the point estimate; 0.9 buys headroom for nine in ten of the estimator's misses." },
  { g: "workload", name: "max_usd", label: "Budget over the horizon ($)", kind: "number", min: 0, max: 1e12, step: 1000, def: "",
    info: "Most the fleet may cost over the horizon; blank: no limit." },
  { g: "curve", name: "users-max", fam: ["llm", "moe"], label: "Users up to", kind: "number", min: 1, max: 10000, def: "",
    info: "Evaluate every user count from 1 to this. Blank: up to past the memory limit." },
  { g: "curve", name: "think-time", fam: ["llm", "moe"], label: "Think time (s)", kind: "number", min: 0, max: 86400, step: 1, def: 0,
    info: "Mean pause between an answer and the next prompt. 0: a user sends the next prompt at once." },
  { g: "curve", name: "ttft-s", fam: ["llm", "moe"], label: "TTFT target (s)", kind: "number", min: 0.01, max: 1e6, step: 0.1, def: "",
    info: "Marks the knee where the percentile TTFT passes it. Blank: where TTFT turns sharply upward." },
  { g: "curve", name: "tokens-per-s", fam: ["llm", "moe"], label: "Tokens/s per user target", kind: "number", min: 0.1, max: 1e6, step: 1, def: "",
    info: "Marks the knee where per-user speed falls below it." },
  { g: "curve", name: "percentile", fam: ["llm", "moe"], label: "TTFT percentile", kind: "number", min: 1, max: 99.9, step: 1, def: 90,
    info: "Which TTFT percentile the curve draws beside the mean." },
];
const PREFIX = { modelling: "", workload: "w.", curve: "c." };
const state = { tab: "modelling", theme: "" };
let catalog = { models: [], gpus: [] };
const seq = {};

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];
const hashKey = (c) => PREFIX[c.g] + c.name;

function groupOf(m) {
  if (!m) return "llm";
  if (m.family === "llm") return (m.tags || []).includes("moe") ? "moe" : "llm";
  if (m.family === "encoder" || m.family === "reranker") return "embeddings";
  return m.family;
}
const currentModel = () => catalog.models.find((m) => m.name === state.model);
const currentGroup = () => groupOf(currentModel());

// ---- controls --------------------------------------------------------------------------
function buildControls() {
  for (const c of CONTROLS) {
    const form = $(`form[data-group="${c.g}"]`);
    const id = `c-${c.g}-${c.name}`;
    const wrap = document.createElement("div");
    wrap.className = "control";
    wrap.dataset.for = c.name;
    let input;
    if (["select", "model", "gpu", "engine"].includes(c.kind)) {
      input = document.createElement("select");
    } else {
      input = document.createElement("input");
      input.type = c.kind === "range" ? "range" : c.kind === "text" ? "text" : "number";
      for (const a of ["min", "max", "step"]) if (c[a] !== undefined) input[a] = c[a];
    }
    input.id = id;
    input.dataset.control = c.name;
    input.dataset.group = c.g;
    const label = `<label for="${id}">${esc(c.label)}</label>`;
    const info = `<button type="button" class="info" aria-expanded="false" aria-controls="${id}-info" aria-label="about ${esc(c.label)}">i</button>`;
    wrap.innerHTML = label + info + `<div class="input"></div><p class="info-text" id="${id}-info" hidden>${esc(c.info)}</p>`;
    $(".input", wrap).append(input);
    if (c.kind === "range") {  // a number box beside the slider, for exact values
      const box = document.createElement("input");
      box.type = "number";
      box.min = c.min; box.max = c.max; box.step = c.step;
      box.setAttribute("aria-label", c.label);
      box.dataset.mirror = c.name;
      $(".input", wrap).append(box);
      box.addEventListener("input", () => { input.value = box.value; changed(c, box.value); });
    }
    form.append(wrap);
    const ev = input.tagName === "SELECT" ? "change" : "input";
    input.addEventListener(ev, () => changed(c, input.value));
    $(".info", wrap).addEventListener("click", (e) => {
      const t = $(".info-text", wrap);
      t.hidden = !t.hidden;
      e.currentTarget.setAttribute("aria-expanded", String(!t.hidden));
    });
  }
  for (const c of CONTROLS) if (state[hashKey(c)] === undefined) state[hashKey(c)] = String(c.def);
  fillOptions();
}

function fillOptions() {
  for (const c of CONTROLS) {
    const el = controlEl(c);
    if (c.kind === "select") {
      el.innerHTML = c.options.map((o) => `<option value="${esc(o)}">${o === "" ? "(default)" : esc(o)}</option>`).join("");
    } else if (c.kind === "model") {
      el.innerHTML = FAMILY_GROUPS.map(([key, title]) => {
        const ms = catalog.models.filter((m) => groupOf(m) === key);
        return ms.length ? `<optgroup label="${esc(title)}">` + ms.map((m) =>
          `<option value="${esc(m.name)}">${esc(m.display_name || m.name)}</option>`).join("") + "</optgroup>" : "";
      }).join("");
    } else if (c.kind === "gpu") {
      const vendors = [...new Set(catalog.gpus.map((g) => g.vendor))];
      el.innerHTML = vendors.map((v) => `<optgroup label="${esc(v)}">` + catalog.gpus
        .filter((g) => g.vendor === v)
        .map((g) => `<option value="${esc(g.name)}">${esc(g.display_name || g.name)}</option>`)
        .join("") + "</optgroup>").join("");
    }
  }
}

function controlEl(c) { return $(`[data-control="${c.name}"][data-group="${c.g}"]`); }

function syncControls() {
  const grp = currentGroup();
  const eng = controlEl(CONTROLS.find((c) => c.name === "engine"));
  const engines = ENGINES[grp] || [];
  eng.innerHTML = ['<option value="">(default)</option>', ...engines.map((e) => `<option value="${e}">${e}</option>`)].join("");
  for (const c of CONTROLS) {
    const el = controlEl(c);
    const v = state[hashKey(c)];
    if (el.value !== v) el.value = v;
    const mirror = el.parentElement.querySelector("[data-mirror]");
    if (mirror) mirror.value = v;
    el.closest(".control").hidden = !!(c.fam && !c.fam.includes(grp));
  }
  $$("[data-llm-only]").forEach((e) => { e.hidden = !TEXT.has(grp); });
  // the minimum GPU: `planner fit` takes text language models and the families served in
  // batches, not vision-language models
  $('[data-card="minimum-gpu"]').hidden = grp === "vlm";
}

function changed(c, value) {
  state[hashKey(c)] = String(value);
  if (c.name === "model") {  // a new family: its own controls, and its engine choice
    const eng = CONTROLS.find((x) => x.name === "engine");
    state[hashKey(eng)] = "";
  }
  syncControls();
  writeHash();
  refresh();
}

// ---- the URL hash ----------------------------------------------------------------------
function writeHash() {
  const p = new URLSearchParams();
  p.set("tab", state.tab);
  if (state.theme) p.set("theme", state.theme);
  for (const c of CONTROLS) {
    const v = state[hashKey(c)];
    if (v !== String(c.def)) p.set(hashKey(c), v);
  }
  history.replaceState(null, "", "#" + p.toString());
}

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  state.tab = ["modelling", "workload", "curve"].includes(p.get("tab")) ? p.get("tab") : "modelling";
  state.theme = ["light", "dark"].includes(p.get("theme")) ? p.get("theme") : "";
  for (const c of CONTROLS) state[hashKey(c)] = p.has(hashKey(c)) ? p.get(hashKey(c)) : String(c.def);
}

// ---- requests --------------------------------------------------------------------------
function modelQuery() {
  const grp = currentGroup();
  const q = new URLSearchParams();
  for (const c of CONTROLS) {
    if (c.g !== "modelling" || (c.fam && !c.fam.includes(grp))) continue;
    const v = state[hashKey(c)];
    if (v !== "") q.set(c.name.replaceAll("-", "_"), v);
  }
  return q;
}

// the body; null when the request failed (its status element says why); undefined when a
// later request on the same channel superseded it
async function call(channel, url, opts) {
  const n = (seq[channel] = (seq[channel] || 0) + 1);
  const status = $(`[data-status="${channel}"]`);
  if (status) { status.textContent = "working…"; status.classList.remove("error"); }
  let body;
  try {
    const r = await fetch(url, opts);
    body = await r.json();
    if (n !== seq[channel]) return undefined;  // a later request superseded this one
    if (!r.ok) throw new Error(body.error || r.statusText);
  } catch (e) {
    if (n !== seq[channel]) return undefined;
    if (status) { status.textContent = e.message; status.classList.add("error"); }
    return null;
  }
  if (status) status.textContent = "";
  return body;
}

const timers = {};
function later(key, ms, fn) { clearTimeout(timers[key]); timers[key] = setTimeout(fn, ms); }

function refresh() {
  if (state.tab === "modelling") {
    later("estimate", 20, runEstimate);
    if (TEXT.has(currentGroup())) later("checks", 300, runChecks);
    else if (currentGroup() !== "vlm") later("checks", 300, runFamilyMinimum);
  } else if (state.tab === "workload") {
    later("solve", 500, runSolve);
  } else {
    later("curve", 120, runCurve);
  }
}

// ---- Modelling -------------------------------------------------------------------------
async function runEstimate() {
  const e = await call("modelling", "/api/estimate?" + modelQuery());
  if (!e) return;
  const cards = [card("fits", "fits in memory", e.fits, fmt(e.fits), "", e.fits ? "yes" : "no")];
  if (e.tpot_s !== undefined) {
    const b = e.bands || {};
    cards.push(
      card("ttft_s", "time to first token (all prompts at once" + (e.serving_stack_s ? "; serving stack " + fmt(e.serving_stack_s * 1e3, " ms") : "") + ")", e.ttft_s, fmt(e.ttft_s * 1e3, " ms"), bandText(b.ttft_s, 1e3, " ms")),
      card("tpot_s", "time per output token", e.tpot_s, fmt(e.tpot_s * 1e3, " ms"), bandText(b.tpot_s, 1e3, " ms")),
      card("per_user_tokens_per_s", "per-user speed", e.per_user_tokens_per_s, fmt(e.per_user_tokens_per_s, " tok/s"), bandText(b.per_user_tokens_per_s, 1, " tok/s")),
      card("output_tokens_per_s", "replica tokens/s (with prefill)", e.output_tokens_per_s, fmt(e.output_tokens_per_s, " tok/s"), bandText(b.output_tokens_per_s, 1, " tok/s")),
      card("max_batch", "largest batch that fits", e.max_batch, fmt(e.max_batch)),
      card("bottleneck", "decode bound by", e.bottleneck, e.bottleneck),
    );
    if (e.kv_cache_tokens) cards.push(card("kv_cache_tokens", "KV cache (tokens)", e.kv_cache_tokens, e.kv_cache_tokens.toLocaleString("en-US")));
  } else {
    cards.push(card("max_batch", "largest batch that fits", e.max_batch, fmt(e.max_batch)),
      card("bottleneck", "bound by", e.bottleneck, e.bottleneck));
    const b = e.bands || {};
    for (const [k, v] of Object.entries(e.metrics || {})) {
      if (typeof v === "number") cards.push(card(k, k.replaceAll("_", " "), v, fmt(v), bandText(b[k])));
    }
  }
  if (!e.fits && e.advice && e.advice.length) cards.push(card("advice", "what would fit", e.advice, e.advice.join("; "), "", "wide"));
  // what `planner estimate` says beside its table (precision, links, measured caveats)
  cards.push(notesCard(e.notes));
  $('[data-cards="modelling"]').innerHTML = cards.join("");
  memoryBox($('[data-picture="memory-box"]'), e.memory_gb);
  const s = e.shares || {};
  // the decode/prefill shares are a language model's; the other families have none to show
  for (const k of ["pipe", "die", "interconnect"]) $(`[data-picture="${k}"]`).closest("figure").hidden = !e.shares;
  shareBar($('[data-picture="pipe"]'), s.hbm_bandwidth_in_decode, "HBM");
  shareBar($('[data-picture="die"]'), s.compute_in_prefill, "compute");
  shareBar($('[data-picture="interconnect"]'), s.interconnect_in_decode, e.interconnect || "");
}

// The other families' one check: the cheapest GPU that holds the model (`planner fit`)
async function runFamilyMinimum() {
  const q = modelQuery();
  for (const k of ["batch", "gpu", "gpus", "tp"]) q.delete(k);
  const gpu = state.gpu;
  const r = await call("minimum", "/api/fit?" + q);
  if (r) drawMinimum(document, r, gpu);
  else if (r === null) $('[data-cards="minimum"]').innerHTML = "";
}

// The three checks, each on its own channel; a newer run (the configuration moved) makes an
// older one stop, and a check that fails clears its picture and says why.
async function runChecks() {
  const q = modelQuery();
  const base = new URLSearchParams();
  for (const k of ["model", "weights", "kv", "engine", "input_tokens", "output_tokens"]) if (q.has(k)) base.set(k, q.get(k));
  const sq = new URLSearchParams(q);
  sq.delete("batch");
  const w = state.weights || "bf16";
  sq.set("compare_weights", w === "int4" ? "bf16" : "int4");
  const sc = new URLSearchParams(base);
  sc.set("gpu", state.gpu); sc.set("batch", state.batch); sc.set("modes", "tp");
  const fq = new URLSearchParams(base);
  fq.set("users", state.batch);
  const gpu = state.gpu;
  const checks = [
    ["saturation", "/api/saturation?" + sq, (r) => drawSaturation(document, r)],
    ["scaling", "/api/scaling?" + sc, (r) => drawScaling(document, r)],
    ["minimum", "/api/fit?" + fq, (r) => drawMinimum(document, r, gpu)],
  ];
  await Promise.all(checks.map(async ([name, url, draw]) => {
    const r = await call(name, url);
    if (r) draw(r);
    else if (r === null) {  // failed: no stale picture under the message
      const svg = $(`[data-picture="${name}"]`);
      if (svg) svgReset(svg);
      if (name === "minimum") $('[data-cards="minimum"]').innerHTML = "";
    }
  }));
}

// ---- Workload --------------------------------------------------------------------------
// the scenario's workload for the model's family, from the Workload tab's demand and
// the Modelling tab's model, formats and family options
const KIND = {
  llm: "llm", moe: "llm", vlm: "llm", embeddings: "embedding", asr: "speech", jepa: "world_model",
  diffusion_image: "image_generation", var: "image_generation", diffusion_video: "video_generation",
  vla: "robot_policy",
};
function scenario() {
  const grp = currentGroup();
  const v = (n) => state["w." + n];
  const num = (n) => Number(v(n));
  const m = (n) => state[n];
  const wl = { name: "w", kind: KIND[grp], model: state.model };
  const put = (key, value) => { if (value !== "" && value !== undefined && !Number.isNaN(value)) wl[key] = value; };
  if (wl.kind === "llm") {
    for (const k of ["users", "hours_per_person", "utilisation", "ttft_s", "ttft_percentile", "tokens_per_s", "think_time_s"]) put(k, num(k));
    put("input_tokens", Number(m("input-tokens")));
    put("output_tokens", Number(m("output-tokens")));
    put("kv_cache", m("kv"));
    if (m("engine")) put("engine", m("engine"));
    if (grp === "vlm") put("images_per_request", Number(m("images")));
  } else {
    for (const c of CONTROLS) {
      if (c.g === "workload" && c.fam && c.fam.includes(grp) && v(c.name) !== "") put(c.name, num(c.name));
    }
    if (grp === "embeddings") {
      put("input_tokens", Number(m("input-tokens")));
      if (m("engine")) put("engine", m("engine"));
    }
    if (grp === "asr") { put("beam", Number(m("beam"))); if (m("engine")) put("engine", m("engine")); }
    if (["diffusion_image", "diffusion_video"].includes(grp) && m("steps")) put("steps", Number(m("steps")));
    if (["diffusion_image", "diffusion_video"].includes(grp)) {
      put("fast_accum", m("fast-accum") === "on");
      put("offload", m("offload") === "on");
      if (m("engine")) put("engine", m("engine"));
    }
    if (["diffusion_image", "var", "jepa"].includes(grp) && m("resolution")) put("resolution", m("resolution"));
    if (["diffusion_video", "jepa"].includes(grp) && m("frames")) put("frames", Number(m("frames")));
    if (grp === "vla" && m("cameras")) put("cameras", Number(m("cameras")));
  }
  if (m("weights")) wl.weights = m("weights");
  const sc = { name: "page", workloads: [wl], cost: { basis: v("basis"), years: num("years") } };
  if (v("vendors")) sc.fleet = { vendors: v("vendors").split(",") };
  if (v("max_usd")) sc.budget = { max_usd: num("max_usd") };
  if (v("confidence")) sc.confidence = num("confidence");
  return sc;
}

async function runSolve() {
  // top=1: the page shows the plan and the best plan per GPU type, not the next-best fleets
  const d = await call("workload", "/api/solve?top=1", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(scenario()) });
  if (!d) return;
  $('[data-cards="workload"]').innerHTML = planCards(d);
  drawFleet($('[data-picture="fleet"]'), d);
  drawFrontier($('[data-picture="frontier"]'), d);
}

// ---- Curve -----------------------------------------------------------------------------
async function runCurve() {
  const q = modelQuery();
  q.delete("batch");
  for (const c of CONTROLS.filter((x) => x.g === "curve")) {
    const v = state["c." + c.name];
    if (v !== "") q.set(c.name.replaceAll("-", "_"), v);
  }
  if (currentGroup() === "vlm") return runBatchCurve();
  if (!["llm", "moe"].includes(currentGroup())) return runFamilyCurve();
  const c = await call("curve", "/api/curve?" + q);
  if (!c) return;
  const pct = c.targets.percentile;
  const key = `ttft_p${String(pct).replace(/\.0$/, "")}_s`;
  const pts = c.points;
  // each point's p10-p90 (its `bands`, as `planner curve` prints them), shaded
  const span = (name, q) => pts.map((p) => (p.bands && p.bands[name] ? p.bands[name][q] : null));
  const banded = pts.some((p) => p.bands && p.bands.ttft_s);
  $('[data-caption="curve"]').textContent = "TTFT (mean and percentile) and per-user speed as users grow" +
    (banded ? `; shaded: p10–p90 of the TTFT p${pct} and of the speed (cross-validated error)` : "");
  chart($('[data-picture="curve"]'), {
    xs: pts.map((p) => p.users), xlabel: "users", ylabel: "TTFT s", y2label: "tok/s/user",
    logy: null,  // TTFT grows by orders of magnitude past the knee: a log axis keeps it legible
    series: [
      { ys: pts.map((p) => p.ttft_s), label: "TTFT mean", axis: 1 },
      { ys: pts.map((p) => p[key] ?? p.ttft_p90_s), label: `TTFT p${pct}`, axis: 1 },
      { ys: pts.map((p) => p.per_user_tokens_per_s), label: "tok/s per user", axis: 2 },
    ],
    bands: banded ? [
      { lo: span("ttft_s", "p10"), hi: span("ttft_s", "p90"), axis: 1, of: 1, label: "ttft_s" },
      { lo: span("per_user_tokens_per_s", "p10"), hi: span("per_user_tokens_per_s", "p90"), axis: 2, of: 2, label: "per_user_tokens_per_s" },
    ] : [],
    marks: [{ x: c.knee_users, label: "knee" }, { x: c.max_users_fit, label: "memory limit", row: 1 }, { x: c.operating_point.users, label: "operating point", row: 2 }],
    hmarks: [
      { y: c.targets.ttft_s, axis: 1, label: `TTFT target ${fmt(c.targets.ttft_s, " s")}` },
      { y: c.targets.tokens_per_s, axis: 2, label: `speed target ${fmt(c.targets.tokens_per_s, " tok/s")}` },
    ],
  });
  const o = c.operating_point, ob = o.bands || {};
  $('[data-cards="curve"]').innerHTML = [
    card("knee_users", "knee (users)", c.knee_users, fmt(c.knee_users)),
    card("max_users_fit", "most users in memory", c.max_users_fit, fmt(c.max_users_fit)),
    card("kv_slots_per_replica", "KV slots per replica", c.kv_slots_per_replica, fmt(c.kv_slots_per_replica)),
    card("operating_point.ttft_s", "TTFT at the operating point (mean)", o.ttft_s, fmt(o.ttft_s, " s")),
    card("operating_point.ttft_pct_s", `TTFT p${pct} there`, o.ttft_pct_s, fmt(o.ttft_pct_s, " s"), bandText(ob.ttft_s, 1, " s")),
    card("operating_point.per_user_tokens_per_s", "tok/s per user there", o.per_user_tokens_per_s, fmt(o.per_user_tokens_per_s), bandText(ob.per_user_tokens_per_s)),
    notesCard(c.notes),
  ].join("");
}

// The other families and vision-language models: one replica's latency and throughput
// against its batch, each point `planner estimate --batch B` (`c`: the shape of
// `planner curve` on a family model: max_batch, rate_key, latency_key, points)
function drawBatchCurve(c, caption) {
  const rate = c.rate_key, lat = c.latency_key, pts = c.points;
  $('[data-caption="curve"]').textContent = caption;
  chart($('[data-picture="curve"]'), {
    xs: pts.map((p) => p.batch), xlabel: "batch", ylabel: `${lat} s`, y2label: rate,
    series: [
      { ys: pts.map((p) => p.metrics[lat]), label: lat.replaceAll("_", " "), axis: 1 },
      { ys: pts.map((p) => p.metrics[rate]), label: rate.replaceAll("_", " "), axis: 2 },
    ],
    marks: [{ x: c.max_batch, label: "memory limit" }],
  });
  const first = pts[0], last = pts[pts.length - 1];
  $('[data-cards="curve"]').innerHTML = [
    card("max_batch", "largest batch that fits", c.max_batch, fmt(c.max_batch)),
    card(rate, `${rate.replaceAll("_", " ")} at batch 1`, first.metrics[rate], fmt(first.metrics[rate]), bandText(first.bands[rate])),
    card(`${rate}@max`, `${rate.replaceAll("_", " ")} at batch ${last.batch}`, last.metrics[rate], fmt(last.metrics[rate]), bandText(last.bands[rate])),
    card(`${lat}@max`, `${lat.replaceAll("_", " ")} there`, last.metrics[lat], fmt(last.metrics[lat], " s")),
  ].join("");
}

// the families served in batches: their curve is `planner curve` itself, one call
async function runFamilyCurve() {
  const q = modelQuery();
  q.delete("batch");
  const c = await call("curve", "/api/curve?" + q);
  if (c) drawBatchCurve(c, "Latency and throughput of one replica against its batch (`planner curve`: each point is `planner estimate --batch B`)");
}

// vision-language models: each point `planner estimate --batch B` (their images ride in
// every request; `planner curve` takes text language models)
async function runBatchCurve() {
  const q = modelQuery();
  q.set("batch", "1");
  const first = await call("curve", "/api/estimate?" + q);
  if (!first) return;
  const n = seq.curve;
  const top = Math.max(1, Math.min(first.max_batch || 1, 4096));
  const batches = [];
  for (let b = 1; b < top; b *= 2) batches.push(b);
  if (!batches.includes(top)) batches.push(top);
  const points = [first];
  for (const b of batches.slice(1)) {
    q.set("batch", String(b));
    const r = await fetch("/api/estimate?" + q);
    if (n !== seq.curve) return;  // the view moved on
    points.push(r.ok ? await r.json() : null);
  }
  const rate = "output_tokens_per_s", lat = "e2e_latency_s";
  drawBatchCurve({
    max_batch: first.max_batch, rate_key: rate, latency_key: lat,
    points: points.map((p, i) => [batches[i], p]).filter(([, p]) => p)
      .map(([b, p]) => ({ batch: b, metrics: { [rate]: p[rate], [lat]: p[lat] }, bands: {} })),
  }, "Latency and throughput of one replica against its batch (each point is `planner estimate --batch B`)");
}

// ---- tabs and start-up -----------------------------------------------------------------
function showTab(tab) {
  state.tab = tab;
  for (const b of $$('[role="tab"]')) {
    const on = b.dataset.tab === tab;
    b.setAttribute("aria-selected", String(on));
    b.tabIndex = on ? 0 : -1;
  }
  for (const s of $$('[role="tabpanel"]')) s.hidden = s.id !== tab;
  writeHash();
  refresh();
}

function applyTheme() {
  if (state.theme) document.documentElement.dataset.theme = state.theme;
  else delete document.documentElement.dataset.theme;
}

async function start() {
  readHash();
  applyTheme();
  const [models, gpus] = await Promise.all([fetch("/api/models").then((r) => r.json()), fetch("/api/gpus").then((r) => r.json())]);
  catalog = { models, gpus };
  buildControls();
  syncControls();
  const tabs = $$('[role="tab"]');
  tabs.forEach((b, i) => {
    b.addEventListener("click", () => showTab(b.dataset.tab));
    b.addEventListener("keydown", (e) => {  // arrow keys move between tabs
      const d = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
      if (!d) return;
      const t = tabs[(i + d + tabs.length) % tabs.length];
      t.focus();
      showTab(t.dataset.tab);
    });
  });
  $("#theme").addEventListener("click", () => {
    const dark = state.theme ? state.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    state.theme = dark ? "light" : "dark";
    applyTheme();
    writeHash();
  });
  window.addEventListener("hashchange", () => { readHash(); applyTheme(); syncControls(); showTab(state.tab); });
  showTab(state.tab);
}

start();
