"""``planner solve FILE --report plan.html``: one self-contained HTML file with the plan's
numbers, its fleet and its cost-by-GPU-type pictures, drawn by the page's own drawing code
(``static/draw.js``) from the plan's JSON (``solve --format json``), with the page's
stylesheet inline. No file or address outside it is referenced; it prints to PDF."""

from __future__ import annotations

import json
from html import escape

from .app import static_file


def _script_json(obj) -> str:
    """JSON that stays data inside a <script> block whatever the strings hold (a scenario
    named '<!--<script>' included): <, > and & as JSON escapes."""
    text = json.dumps(obj, default=float)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


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


def sizing_checks(sc, plan: dict, presets: tuple[str, ...] = ()) -> list[dict]:
    """The sizing calculator's three checks for each text language-model replica kind of the
    plan: where its throughput saturates (at the plan's split and formats), whether another
    GPU of its type helps (TP), and the fewest GPUs of each type that hold its load per
    replica: ``planner saturation``, ``scaling`` and ``fit`` for the same inputs."""
    import math
    from functools import partial

    from estimator.errors import EstimatorError
    from estimator.saturation import saturation
    from estimator.scaling import scaling

    from ..minimum import minimum_fit

    by_name = {w.name: w for w in sc.workloads}
    out, seen = [], set()
    for row in plan.get("plan", []):
        w = by_name.get(row["workload"])
        if w is None or w.kind != "llm" or (row["workload"], row["gpu"]) in seen:
            continue
        seen.add((row["workload"], row["gpu"]))
        users = max(1, math.ceil(row.get("load_per_replica") or 1))
        common = dict(
            weights=row["weights"],
            kv=w.kv_cache,
            engine=w.engine,
            input_tokens=w.input_tokens,
            output_tokens=w.output_tokens,
            presets=presets,
        )
        item: dict = {"workload": w.name, "gpu": row["gpu"], "users_per_replica": users}
        runs = {
            "saturation": partial(
                saturation,
                w.model,
                row["gpu"],
                row["gpus_per_replica"],
                tp=row["tp"],
                pp=row["pp"],
                ep=row["ep"],
                attention_dp=row["attention_dp"],
                tokens_per_s=w.tokens_per_s,
                **common,
            ),
            "scaling": partial(scaling, w.model, row["gpu"], batch=users, modes=("tp",), **common),
            "fit": partial(minimum_fit, w.model, users=users, **common),
        }
        for key, run in runs.items():  # each on its own: one that cannot run leaves the rest
            try:
                item[key] = run().to_dict()
            except EstimatorError as e:  # e.g. a vision-language model: no text-only checks
                item.setdefault("why_not", {})[key] = str(e)
        out.append(item)
    return out


def _checks_html(checks: list[dict]) -> str:
    parts = []
    for i, c in enumerate(checks):
        head = (
            f"<h2>Checks: {escape(c['workload'])} on {escape(c['gpu'])} "
            f"({c['users_per_replica']} users per replica)</h2>"
        )
        if "why_not" in c:
            parts.append(head + f"<p class=note>{escape(c['why_not'])}</p>")
            continue
        parts.append(
            head
            + f'<div class="checks" data-check="{i}">'
            + "<figure><figcaption>Where throughput saturates</figcaption><svg "
            'data-picture="saturation" viewBox="0 0 640 300" role="img"></svg>'
            '<p class="note" data-note="saturation"></p></figure>'
            + "<figure><figcaption>Whether another GPU helps (TP)</figcaption><svg "
            'data-picture="scaling" viewBox="0 0 640 300" role="img"></svg>'
            '<p class="note" data-note="scaling"></p></figure>'
            + '<div class="card minimum" data-card="minimum-gpu"><h3>Minimum GPU</h3>'
            '<div data-cards="minimum"></div></div></div>'
        )
    return "".join(parts)


def report_html(plan: dict, scenario_text: str = "", checks: list[dict] | None = None) -> str:
    """The report for ``plan`` (a ``PlanResult.to_dict()``); ``scenario_text`` is shown as
    the input it was solved from; ``checks`` (:func:`sizing_checks`) adds the three
    checks' pictures."""
    checks = checks or []
    check_data = _script_json(checks)
    data = _script_json(plan)
    css = static_file("style.css").decode()
    draw = static_file("draw.js").decode()
    name = escape(str(plan.get("scenario") or "plan"))
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
{_checks_html(checks)}
{scenario}
</main>
<script type="application/json" id="plan">{data}</script>
<script type="application/json" id="checks">{check_data}</script>
<script>{draw}
const d = JSON.parse(document.getElementById("plan").textContent);
document.querySelector('[data-cards="plan"]').innerHTML = planCards(d);
drawFleet(document.querySelector('[data-picture="fleet"]'), d);
drawFrontier(document.querySelector('[data-picture="frontier"]'), d);
JSON.parse(document.getElementById("checks").textContent).forEach((c, i) => {{
  const root = document.querySelector(`[data-check="${{i}}"]`);
  if (!root) return;
  if (c.saturation) drawSaturation(root, c.saturation);
  if (c.scaling) drawScaling(root, c.scaling);
  if (c.fit) drawMinimum(root, c.fit, c.gpu);
}});
</script></body></html>
"""
