"""``planner solve FILE --report plan.html``: one self-contained HTML file with the plan's
numbers, its fleet and its cost-by-GPU-type pictures, drawn by the page's own drawing code
(``static/draw.js``) from the plan's JSON (``solve --format json``), with the page's
stylesheet inline. No file or address outside it is referenced; it prints to PDF."""

from __future__ import annotations

import json
from html import escape

from .app import static_file


def _plan_rows(d: dict) -> str:
    head = (
        "workload",
        "GPU",
        "split",
        "replicas",
        "GPUs",
        "seats served",
        "TTFT s",
        "tok/s",
        "binding",
    )
    rows = []
    for p in d.get("plan", []):
        split = f"TP{p['tp']}" + (f" PP{p['pp']}" if p["pp"] > 1 else "")
        cells = (
            p["workload"],
            p["gpu"],
            split,
            p["replicas"],
            p["gpus"],
            round(p["seats_served"], 1),
            f"{p['ttft_s']:.3g}",
            f"{p['tokens_per_s']:.3g}",
            p.get("binding") or "",
        )
        rows.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    th = "".join(f"<th>{h}</th>" for h in head)
    return f"<table class=plan><tr>{th}</tr>{''.join(rows)}</table>"


def report_html(plan: dict, scenario_text: str = "") -> str:
    """The report for ``plan`` (a ``PlanResult.to_dict()``); ``scenario_text`` is shown as
    the input it was solved from."""
    data = json.dumps(plan, default=float).replace("</", "<\\/")  # safe inside <script>
    css = static_file("style.css").decode()
    draw = static_file("draw.js").decode()
    name = escape(str(plan.get("scenario") or "plan"))
    notes = "".join(f"<li>{escape(n)}</li>" for n in plan.get("notes", []))
    scenario = (
        f"<details><summary>Scenario</summary><pre>{escape(scenario_text)}</pre></details>"
        if scenario_text
        else ""
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>planner report: {name}</title>
<style>{css}
.report {{ max-width: 1000px; margin: 0 auto; padding: 16px; }}
table.plan {{ border-collapse: collapse; width: 100%; margin: 8px 0 16px; font-size: 0.9rem; }}
table.plan td, table.plan th {{ border: 1px solid var(--line); padding: 3px 6px; }}
</style></head>
<body><main class="report">
<h1>planner report: {name}</h1>
<p class="tagline">What to buy or rent, from <code>planner solve --report</code>. The numbers
are those of <code>planner solve --format json</code> for the same scenario.</p>
<div class="cards" data-cards="plan"></div>
{_plan_rows(plan)}
<figure><figcaption>The fleet: one square per GPU, grouped by server or instance</figcaption>
<svg data-picture="fleet" viewBox="0 0 640 160" role="img"></svg></figure>
<figure><figcaption>Cost per year of the best plan on each GPU type</figcaption>
<svg data-picture="frontier" viewBox="0 0 640 300" role="img"></svg></figure>
{f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""}
{scenario}
</main>
<script type="application/json" id="plan">{data}</script>
<script>{draw}
const d = JSON.parse(document.getElementById("plan").textContent);
document.querySelector('[data-cards="plan"]').innerHTML = planCards(d);
drawFleet(document.querySelector('[data-picture="fleet"]'), d);
drawFrontier(document.querySelector('[data-picture="frontier"]'), d);
</script></body></html>
"""
