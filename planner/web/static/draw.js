// planner's pictures and number cards, shared by the page (app.js) and the HTML report
// (`planner solve --report`): the same drawing wherever a plan is shown.
"use strict";

const esc = (s) => String(s).replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

// ---- formatting ------------------------------------------------------------------------
function fmt(v, unit = "") {
  if (v === null || v === undefined) return "–";
  if (typeof v === "boolean") return v ? "yes" : "NO";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e7) return v.toLocaleString("en-US") + unit;
  const a = Math.abs(v);
  const s = a >= 1e6 ? v.toExponential(2) : a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toPrecision(3);
  return s + unit;
}
function money(v) { return v === null || v === undefined ? "–" : "$" + Math.round(v).toLocaleString("en-US"); }

function card(key, label, value, shown, band, cls = "") {
  const raw = typeof value === "object" ? JSON.stringify(value) : String(value);
  const b = band ? `<div class="b">p10–p90 ${esc(band)}</div>` : "";
  return `<div class="card ${cls}" data-metric="${esc(key)}" data-value="${esc(raw)}"><div class="k">${esc(label)}</div><div class="v">${esc(shown)}</div>${b}</div>`;
}
// what the CLI says beside its table, one note a line ("" where it says nothing)
function notesCard(notes) {
  return notes && notes.length ? card("notes", "notes", notes, notes.join("\n"), "", "wide") : "";
}
// a band 'a–b unit (median c unit)': where the published runs of the estimate's regime ran
// mostly slower (or faster) than estimated, the estimate itself lies outside its band
function bandText(b, scale = 1, unit = "") {
  if (!b || b.p10 === undefined) return "";
  const mid = b.p50 !== undefined ? ` (median ${fmt(b.p50 * scale)}${unit})` : "";
  return `${fmt(b.p10 * scale)}–${fmt(b.p90 * scale)}${unit}${mid}`;
}

function svgReset(svg) { svg.innerHTML = ""; return svg; }
function el(svg, tag, attrs, text) {
  const n = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  if (text !== undefined) n.textContent = text;
  svg.append(n);
  return n;
}

function memoryBox(svg, m) {
  svgReset(svg);
  if (!m) return;
  const W = 380, x0 = 10, top = 14, h = 34;
  const span = Math.max(m.capacity, m.total);
  const sx = (gb) => (gb / span) * W;
  let x = x0;
  for (const [k, label] of [["weights", "weights"], ["kv_cache", "KV"], ["activations", "activations"], ["overhead", "overhead"]]) {
    const w = sx(m[k] || 0);
    const r = el(svg, "rect", { x, y: top, width: Math.max(w, 0), height: h, class: k === "kv_cache" ? "kv" : k });
    el(r, "title", {}, `${label} ${fmt(m[k])} GB`);
    x += w;
  }
  if (m.total < m.capacity) el(svg, "rect", { x, y: top, width: sx(m.capacity - m.total), height: h, class: "free" });
  else el(svg, "rect", { x: x0 + sx(m.capacity), y: top, width: sx(m.total - m.capacity), height: h, class: "over" });
  const lx = x0 + sx(m.usable);
  el(svg, "line", { x1: lx, x2: lx, y1: top - 6, y2: top + h + 6, class: "limit" });
  el(svg, "text", { x: x0, y: 10 }, `${fmt(m.total)} of ${fmt(m.capacity)} GB used; engine limit ${fmt(m.usable)} GB`);
  let lx2 = x0;
  for (const [k, label] of [["weights", "W"], ["kv_cache", "KV"], ["activations", "act"], ["overhead", "other"]]) {
    el(svg, "rect", { x: lx2, y: top + h + 12, width: 10, height: 10, class: k === "kv_cache" ? "kv" : k });
    el(svg, "text", { x: lx2 + 14, y: top + h + 21 }, `${label} ${fmt(m[k])}`);
    lx2 += 92;
  }
}

function shareBar(svg, share, label) {
  svgReset(svg);
  if (share === undefined || share === null) { el(svg, "text", { x: 10, y: 24 }, "not applicable"); return; }
  const W = 250, s = Math.max(0, Math.min(1, share));
  el(svg, "rect", { x: 10, y: 10, width: W, height: 20, class: "free" });
  el(svg, "rect", { x: 10, y: 10, width: W * s, height: 20, class: "bar" });
  el(svg, "text", { x: W + 18, y: 25 }, `${(100 * share).toFixed(1)}% ${label}`);
}

// `bands`: shaded p10-p90 ranges ({lo, hi, axis, of}: one value per x, as a series' ys) under
// the lines, the axes sized to hold them. `logy`: the left axis on a log scale (null: when
// its values span 20x or more), where a multiplicative band keeps one width
// `hmarks`: levels across the chart ({y, axis, label}: a target)
function chart(svg, { xs, series, bands = [], marks = [], hmarks = [], xlabel = "", ylabel = "", y2label = "", logx = null, logy = false }) {
  svgReset(svg);
  const [, , W, H] = svg.getAttribute("viewBox").split(" ").map(Number);
  const L = 56, R = y2label ? 56 : 16, T = 22, B = 58;
  const xv = xs.filter((x) => x > 0 || !logx);
  if (!xv.length) return;
  const lo = Math.min(...xv), hi = Math.max(...xv);
  if (logx === null) logx = lo > 0 && hi / lo >= 20;  // wide ranges on a log axis
  const fx = (x) => (logx ? Math.log(x) : x);
  const sx = (x) => L + (hi === lo ? 0.5 : (fx(x) - fx(lo)) / (fx(hi) - fx(lo))) * (W - L - R);
  const ranges = {};
  for (const s of [...series, ...bands.map((b) => ({ axis: b.axis, ys: b.hi }))]) {
    const a = s.axis || 1, vals = s.ys.filter((v) => v !== null && isFinite(v));
    ranges[a] = Math.max(ranges[a] || 0, ...vals, 0) || 1;
  }
  // the left axis's least positive value (its floor on a log scale)
  const left = [...series.filter((s) => (s.axis || 1) === 1).map((s) => s.ys),
    ...bands.filter((b) => (b.axis || 1) === 1).map((b) => b.lo)].flat()
    .filter((v) => v !== null && isFinite(v) && v > 0);
  const floor = left.length ? Math.min(...left) : 0;
  if (logy === null) logy = floor > 0 && ranges[1] / floor >= 20;
  const frac = (y, a) => (a === 1 && logy
    ? (Math.log(Math.max(y, floor)) - Math.log(floor)) / (Math.log(ranges[1]) - Math.log(floor) || 1)
    : y / ranges[a]);
  const sy = (y, a) => H - B - frac(y, a) * (H - T - B);
  for (const b of bands) {
    const ok = xs.map((x, j) => [x, b.lo[j], b.hi[j]]).filter(([x, lo, hi]) =>
      lo !== null && hi !== null && isFinite(lo) && isFinite(hi) && (!logx || x > 0));
    if (ok.length < 2) continue;
    const top = ok.map(([x, , hi]) => `${sx(x).toFixed(1)},${sy(hi, b.axis || 1).toFixed(1)}`);
    const bottom = ok.map(([x, lo]) => `${sx(x).toFixed(1)},${sy(lo, b.axis || 1).toFixed(1)}`).reverse();
    // in its line's colour (`of`: the series it surrounds)
    const tint = b.of === undefined ? "" : ` f${b.of % 4}`;
    el(svg, "polygon", { points: [...top, ...bottom].join(" "), class: "band" + tint, "data-band": b.label || "" });
  }
  if (logy) {  // a grid line and label at each power of ten inside the range
    for (let e = Math.ceil(Math.log10(floor)); 10 ** e < ranges[1]; e++) {
      const y = sy(10 ** e, 1);
      if (y > T + 12 && y < H - B - 12) {
        el(svg, "line", { x1: L, x2: W - R, y1: y, y2: y, class: "grid" });
        el(svg, "text", { x: 4, y: y + 4 }, fmt(10 ** e));
      }
    }
  } else {
    for (const f of [0.25, 0.5, 0.75]) el(svg, "line", { x1: L, x2: W - R, y1: T + f * (H - T - B), y2: T + f * (H - T - B), class: "grid" });
  }
  for (const m of hmarks) {  // a target: a level across the chart on its axis
    const a = m.axis || 1;
    if (m.y === null || m.y === undefined || !(m.y > 0) || m.y > ranges[a] || (a === 1 && logy && m.y < floor)) continue;
    const y = sy(m.y, a);
    el(svg, "line", { x1: L, x2: W - R, y1: y, y2: y, class: "mark" });
    el(svg, "text", { x: a === 1 ? L + 3 : W - R - 3, y: y - 3, "text-anchor": a === 1 ? "start" : "end" }, m.label);
  }
  el(svg, "line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" });
  el(svg, "line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" });
  el(svg, "text", { x: 4, y: T + 4 }, fmt(ranges[1]));
  el(svg, "text", { x: 4, y: H - B }, logy ? fmt(floor) : "0");
  el(svg, "text", { x: 4, y: 12 }, ylabel + (logy ? " (log)" : ""));
  el(svg, "text", { x: L, y: H - B + 14 }, fmt(lo));
  el(svg, "text", { x: W - R - 24, y: H - B + 14 }, fmt(hi));
  el(svg, "text", { x: (W - L - R) / 2 + L - 20, y: H - B + 14 }, xlabel + (logx ? " (log)" : ""));
  if (ranges[2]) {
    el(svg, "line", { x1: W - R, x2: W - R, y1: T, y2: H - B, class: "axis" });
    el(svg, "text", { x: W - R + 4, y: T + 4 }, fmt(ranges[2]));
    el(svg, "text", { x: W - R - 6 * y2label.length, y: 12 }, y2label);
  }
  series.forEach((s, i) => {
    const pts = xs.map((x, j) => [x, s.ys[j]]).filter(([x, y]) => y !== null && isFinite(y) && (!logx || x > 0));
    const cls = s.cls || `s${i % 4}`;
    el(svg, "polyline", { points: pts.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y, s.axis || 1).toFixed(1)}`).join(" "), class: cls });
    const lx = L + ((W - L) / 3) * (i % 3), ly = H - 26 + 14 * Math.floor(i / 3);
    el(svg, "line", { x1: lx, x2: lx + 18, y1: ly - 4, y2: ly - 4, class: cls });
    el(svg, "text", { x: lx + 22, y: ly }, s.label + (s.axis === 2 ? " (right)" : ""));
  });
  for (const m of marks) {
    if (m.x === null || m.x === undefined || (logx && m.x <= 0)) continue;
    const x = sx(Math.min(Math.max(m.x, lo), hi));
    el(svg, "line", { x1: x, x2: x, y1: T, y2: H - B, class: "mark" });
    // right of its line, or left of it in the right half (a label never runs off the chart)
    const right = x > (L + W - R) / 2;
    el(svg, "text", { x: right ? x - 3 : x + 3, y: T + 10 + 12 * (m.row || 0), "text-anchor": right ? "end" : "start" }, m.label);
  }
}

// ---- the three checks ------------------------------------------------------------------
// the sizing calculator's three checks; `root`: the element holding their pictures
function drawSaturation(root, r) {
  const s0 = r.series[0];
  const all = [...new Set(r.series.flatMap((s) => s.batch))].sort((a, b) => a - b);
  const at = (s, key) => all.map((b) => { const i = s.batch.indexOf(b); return i < 0 ? null : s[key][i]; });
  const series = [];
  r.series.forEach((s) => {
    series.push({ ys: at(s, "tokens_per_s"), label: `total, ${s.weights}`, axis: 1 });
    series.push({ ys: at(s, "per_user_tokens_per_s"), label: `per user, ${s.weights}`, axis: 2 });
  });
  const svg = root.querySelector('[data-picture="saturation"]');
  chart(svg, {
    xs: all, series, xlabel: "batch", ylabel: "tok/s total", y2label: "tok/s/user",
    marks: [{ x: s0.saturation_batch, label: "saturation" }, { x: s0.memory_limit, label: "memory limit", row: 1 }],
  });
  root.querySelector('[data-note="saturation"]').textContent = r.series.map((s) =>
    `${s.weights}/${s.kv}: saturates at batch ${s.saturation_batch ?? "–"}, memory limit ${s.memory_limit}`).join("; ");
  svg.dataset.value = JSON.stringify(r.series.map((s) => s.saturation_batch));
}

function drawScaling(root, r) {
  const pts = r.points.filter((p) => p.mode === "tp");
  chart(root.querySelector('[data-picture="scaling"]'), {
    xs: pts.map((p) => p.gpus), xlabel: "GPUs per replica (TP)", ylabel: "tok/s", y2label: "collective %",
    series: [
      { ys: pts.map((p) => (p.fits ? p.tokens_per_s : null)), label: "replica tok/s", axis: 1 },
      { ys: pts.map((p) => 100 * p.collective_share_decode), label: "collectives %", axis: 2 },
    ],
  });
  const lim = r.scaling_limit[`${r.gpus[0]}/tp`];
  root.querySelector('[data-note="scaling"]').textContent = lim ? `worth it up to ${lim} GPU(s) on ${r.gpus[0]}` : "does not fit up to 8 GPUs";
}

// `planner fit`: the fewest GPUs of the chosen type, what it does there, and the cheapest
// type; a language model's per-user speed, or the other families' rate at the largest batch
function drawMinimum(root, r, gpu) {
  const f = r.by_gpu.find((x) => x.gpu === gpu);
  const best = r.by_gpu.find((x) => x.fits);
  const cards = [];
  if (f) {
    cards.push(f.fits
      ? card("minimum_gpus", `fewest ${f.gpu}`, f.gpus, `${f.gpus}x ${f.gpu} (${f.split})`)
      : card("minimum_gpus", `fewest ${f.gpu}`, null, f.why_not));
    if (f.fits) cards.push(card("minimum_max_batch", "its max batch", f.max_batch, fmt(f.max_batch)),
      r.rate_key
        ? card("minimum_rate", `its ${r.rate_key.replaceAll("_", " ")} there`, f.rate, fmt(f.rate))
        : card("minimum_per_user_tokens_per_s", "its per-user speed", f.per_user_tokens_per_s, fmt(f.per_user_tokens_per_s, " tok/s")));
  }
  if (best) cards.push(card("cheapest_fit", "cheapest that holds it", best.gpu, `${best.gpus}x ${best.gpu}${best.usd_per_hour ? ", $" + best.usd_per_hour.toFixed(2) + "/h" : ""}`));
  root.querySelector('[data-cards="minimum"]').innerHTML = cards.join("");
}

// ---- a plan ----------------------------------------------------------------------------
// a workload's demand unit (seats for language models; images/s, streams, robots... for the
// other families), as its plan rows give it
function unitOf(d, workload) {
  const row = (d.plan || []).find((r) => r.workload === workload);
  return row && row.unit ? row.unit : "seats";
}

// what a replica of a plan row delivers: TTFT and per-user speed for a language model, its
// demand units and pass time for the other families
function rowSpeed(row) {
  if (!row.unit || row.unit === "seats") return `TTFT ${fmt(row.ttft_s)} s, ${fmt(row.tokens_per_s)} tok/s`;
  const each = `${fmt(row.seats_per_replica)} ${row.unit} each`;
  if (row.pass_s == null) return each;
  return `${each}, ${fmt(row.pass_s, " s")} per batch of ${fmt(row.pass_limit_s, " s")} allowed (${fmt(row.headroom_pct.pass, "%")} headroom)`;
}

// a plan row's p10-p90 (its `bands`): a language model's TTFT and per-user speed, or a
// batch's pass time for the other families ("" where the row has none)
function rowBand(row) {
  const b = row.bands || {};
  if (row.ttft_s != null && b.ttft_s && b.tokens_per_s) return `TTFT ${bandText(b.ttft_s, 1, " s")}, ${bandText(b.tokens_per_s, 1, " tok/s/user")}`;
  if (row.pass_s != null && b.s_per_batch) return `pass ${bandText(b.s_per_batch, 1, " s")}`;
  return "";
}

function planCards(d) {
  const cards = [card("feasible", "feasible", d.feasible, fmt(d.feasible), "", d.feasible ? "yes" : "no")];
  if (!d.feasible) {
    cards.push(card("reason", "why not", d.reason || "", d.reason || "", "", "wide"));
  } else {
    const units = (d.servers || []).map((s) => `${s.count}x ${s.server}`).concat((d.instances || []).map((i) => `${i.count}x ${i.cloud} ${i.name}`));
    const p = d.plan[0] || {};
    cards.push(
      card("order", "what to order", d.order, d.order || units.join(", "), "", "wide"),
      card("total_gpus", "GPUs", d.total_gpus, fmt(d.total_gpus)),
      card("cost_per_year_usd", "cost per year", d.cost_per_year_usd, money(d.cost_per_year_usd)),
      card("cost_usd", `cost over ${d.years} years`, d.cost_usd, money(d.cost_usd)),
      card("power_kw", "power", d.power_kw, fmt(d.power_kw, " kW")),
      card("seats_required", "demand", d.seats_required, Object.entries(d.seats_required || {}).map(([k, v]) => `${k} ${fmt(v)} ${unitOf(d, k)}`).join(", ")),
      card("headroom_pct", `headroom (${p.unit || "seats"})`, p.headroom_pct, fmt(p.headroom_pct && p.headroom_pct.seats, "%")),
    );
    // tokens only where a workload makes them (the other families count images, streams...)
    if (d.usd_per_million_output_tokens != null) cards.push(card("usd_per_million_output_tokens", "$ per million tokens", d.usd_per_million_output_tokens, fmt(d.usd_per_million_output_tokens)));
    const per = d.cost_breakdown_per_year_usd || {};
    const lines = Object.entries(per).filter(([, v]) => v).map(([k, v]) => `${k.replaceAll("_", " ")} ${money(v)}`);
    if (lines.length) cards.push(card("cost_breakdown_per_year_usd", "cost per year by line", per, lines.join(" · "), "", "wide"));
    d.plan.forEach((row, i) => cards.push(card(`plan.${i}`, `${row.workload}: replicas`, row, `${row.replicas}x ${row.gpus_per_replica} ${row.gpu} (TP${row.tp}${row.pp > 1 ? " PP" + row.pp : ""}), ${rowSpeed(row)}`, rowBand(row), "wide")));
  }
  cards.push(notesCard(d.notes));
  return cards.join("");
}

function drawFleet(svg, d) {
  svgReset(svg);
  const units = [];
  for (const s of d.servers || []) for (let i = 0; i < s.count; i++) units.push({ n: s.gpus_per_server, label: s.server });
  for (const s of d.instances || []) for (let i = 0; i < s.count; i++) units.push({ n: s.gpus_per_instance, label: s.name });
  if (!units.length) for (const p of d.plan || []) for (let i = 0; i < p.replicas; i++) units.push({ n: p.gpus_per_replica, label: p.gpu });
  const W = Number(svg.getAttribute("viewBox").split(" ")[2]);
  let x = 8, y = 8, bottom = 8;
  const cell = 11;
  for (const u of units.slice(0, 120)) {
    const cols = Math.min(u.n, 8), rows = Math.ceil(u.n / 8);
    const w = cols * cell + 6, h = rows * cell + 6;
    if (x + w > W - 8) { x = 8; y += h + 8; }
    el(svg, "rect", { x, y, width: w, height: h, class: "box" });
    for (let i = 0; i < u.n; i++) el(svg, "rect", { x: x + 3 + (i % 8) * cell, y: y + 3 + Math.floor(i / 8) * cell, width: cell - 2, height: cell - 2, class: "gpu" });
    x += w + 6;
    bottom = Math.max(bottom, y + h);
  }
  svg.setAttribute("viewBox", `0 0 ${W} ${bottom + 28}`);  // as tall as the fleet
  el(svg, "text", { x: 8, y: bottom + 20 }, units.length ? `${d.total_gpus} GPUs in ${units.length} unit(s)${units.length > 120 ? " (first 120 drawn)" : ""}` : "no fleet");
}

function drawFrontier(svg, d) {
  svgReset(svg);
  const [, , W, H] = svg.getAttribute("viewBox").split(" ").map(Number);
  const rows = (d.best_per_gpu || []).filter((b) => b.cost_per_year_usd).map((b) => ({ gpu: Object.keys(b.gpus_by_type || {}).join("+"), cost: b.cost_per_year_usd, gpus: b.total_gpus }));
  rows.sort((a, b) => a.cost - b.cost);
  if (!rows.length) { el(svg, "text", { x: 10, y: 20 }, "no single-type plan"); return; }
  const more = rows.length - 12;
  if (more > 0) {  // the cheapest twelve: the rest cost more and would flatten them
    rows.length = 12;
    el(svg, "text", { x: W - 220, y: 14 }, `${more} more GPU type(s) cost more`);
  }
  const max = Math.max(...rows.map((r) => r.cost));
  const base = H - 70, top = 24;
  const best = d.feasible ? d.cost_per_year_usd : null;
  const bw = Math.min(48, (W - 60) / rows.length - 6);
  el(svg, "text", { x: 4, y: 14 }, money(max) + " a year");
  el(svg, "line", { x1: 50, x2: W - 4, y1: base, y2: base, class: "axis" });
  rows.forEach((r, i) => {
    const h = (r.cost / max) * (base - top), x = 56 + i * (bw + 6);
    const b = el(svg, "rect", { x, y: base - h, width: bw, height: h, class: "bar" + (best && Math.abs(r.cost - best) < 1 ? " best" : "") });
    b.dataset.gpu = r.gpu;
    b.dataset.value = String(r.cost);
    el(b, "title", {}, `${r.gpu}: ${money(r.cost)} a year, ${r.gpus} GPUs`);
    el(svg, "text", { x: x + 2, y: base + 12, transform: `rotate(40 ${x + 2} ${base + 12})` }, r.gpu);
  });
}

