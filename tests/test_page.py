"""The page (`planner serve`): its API against the CLI's JSON and messages, and the page
itself in a real headless Chromium (Playwright driving the system browser). Browser tests
skip without Chromium on a developer's machine, never under CI=true."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.scenario import load_scenario
from planner.web.report import report_html, sizing_checks

ROOT = Path(__file__).resolve().parent.parent
# one configuration the API and page tests read back, as the CLI takes it
EST_8B = (
    "estimate",
    "--model",
    "llama-3.1-8b",
    "--gpu",
    "h100-sxm",
    "--batch",
    "16",
    "--input-tokens",
    "512",
)
SHOTS = ROOT / "docs" / "screenshots"


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


@pytest.fixture(scope="module")
def server():
    import uvicorn

    from planner.web.app import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(
        uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
    )
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.time() + 30
    while not srv.started:
        assert time.time() < deadline, "server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    t.join(10)


def get(url: str, data: bytes | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def cli_json(*args: str) -> dict:
    r = CliRunner().invoke(main, [*args, "--format", "json"])
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


# ---- the API -----------------------------------------------------------------------------
def test_api_payloads_are_the_clis(server):
    q = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "batch": 16, "input_tokens": 512}
    status, body = get(f"{server}/api/estimate?{urlencode(q)}")
    assert status == 200
    cli = cli_json(*EST_8B)
    assert body == cli
    status, body = get(f"{server}/api/curve?{urlencode({'model': 'llama-3.1-8b', 'gpu': 'l4'})}")
    assert status == 200 and body == cli_json("curve", "--model", "llama-3.1-8b", "--gpu", "l4")
    scenario = (ROOT / "scenarios" / "chat-assistant.yaml").read_bytes()
    status, body = get(f"{server}/api/solve", scenario)
    assert status == 200
    assert body == cli_json("solve", str(ROOT / "scenarios" / "chat-assistant.yaml"))


def test_the_pages_diffusion_switches_are_the_clis_flags(server):
    q = {"model": "flux1-dev", "gpu": "rtx-5090", "weights": "fp8"}
    base = ["estimate", "--model", "flux1-dev", "--gpu", "rtx-5090", "--weights", "fp8"]
    for key, flag in (("fast_accum", "--fast-accum"), ("offload", "--offload")):
        for value, extra in (("on", [flag]), ("off", [])):
            status, body = get(f"{server}/api/estimate?{urlencode({**q, key: value})}")
            assert status == 200 and body == cli_json(*base, *extra)
    for engine in ("torch-compile", "tensorrt"):
        status, body = get(f"{server}/api/estimate?{urlencode({**q, 'engine': engine})}")
        assert status == 200 and body == cli_json(*base, "--engine", engine)


def test_the_pages_encoder_engine_is_the_clis(server):
    q = {"model": "bge-m3", "gpu": "l4", "batch": "16", "input_tokens": "256"}
    base = ["estimate", "--model", "bge-m3", "--gpu", "l4", "--batch", "16"]
    for engine in ("tei", "transformers"):
        status, body = get(f"{server}/api/estimate?{urlencode({**q, 'engine': engine})}")
        assert status == 200 and body["engine"] == engine
        assert body == cli_json(*base, "--input-tokens", "256", "--engine", engine)
    status, body = get(f"{server}/api/estimate?{urlencode({**q, 'engine': 'transfomers'})}")
    assert status == 422 and "Did you mean: transformers?" in body["error"]


@pytest.mark.parametrize(
    "path,args",
    [
        (
            "/api/estimate?model=lama-3.1-8b&gpu=h100",
            ["estimate", "--model", "lama-3.1-8b", "--gpu", "h100"],
        ),
        (
            "/api/estimate?model=llama-3.1-8b&gpu=h100&tp=3",
            ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "3"],
        ),
        (
            "/api/estimate?model=llama-3.1-8b&gpu=h100&batch=x",
            ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "x"],
        ),
        (
            "/api/saturation?model=llama-3.1-8b&gpu=h100&compare_kv=fp7",
            ["saturation", "--model", "llama-3.1-8b", "--gpu", "h100", "--compare-kv", "fp7"],
        ),
    ],
)
def test_bad_input_is_422_with_the_clis_message(server, path, args):
    status, body = get(server + path)
    assert status == 422
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2
    assert body["error"] in r.output


@pytest.mark.parametrize(
    "path,data,status,needle",
    [
        ("/api/estimate?model=llama-3.1-8b&gpu=h100&gpus=abc", None, 422, "--gpus"),
        ("/api/estimate?model=llama-3.1-8b&gpu=h100&nope=1", None, 422, "no such option: --nope"),
        ("/api/solve", b"workloads: [1", 422, "scenario:1: malformed YAML"),
        ("/api/solve", b"\xff\xfe", 422, "UTF-8"),
        ("/api/estimate?" + "a=1&" * 3000, None, 414, "query longer"),
        ("/api/nothing", None, 404, "no such page"),
    ],
)
def test_bad_requests_never_500(server, path, data, status, needle):
    got, body = get(server + path, data)
    assert got == status and needle in body["error"]


def test_a_body_over_the_limit_is_refused_before_it_is_read(server):
    import http.client

    host, port = server.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.putrequest("POST", "/api/solve")
    conn.putheader("Content-Length", "2000000")
    conn.endheaders()
    r = conn.getresponse()
    assert r.status == 413 and "larger than" in json.loads(r.read())["error"]
    conn.close()


@pytest.mark.parametrize(
    "path,needle",
    [
        ("/api/estimate?model_config=/root&gpu=h100", "not file paths"),
        ("/api/estimate?model=/etc/passwd&gpu=h100", "not file paths"),
        ("/api/estimate?model=../x&gpu=h100", "not file paths"),
        ("/api/saturation?model=llama-3.1-8b&gpu=h100&kv=fp8&kv=bf16", "given twice"),
    ],
)
def test_the_api_reads_no_local_files_and_takes_each_option_once(server, path, needle):
    status, body = get(server + path)
    assert status == 422 and needle in body["error"]
    status, _ = get(f"{server}/api/estimate?model=meta-llama/Llama-3.1-8B-Instruct&gpu=h100")
    assert status == 200  # a Hugging Face id is a name, not a path


def test_only_loopback_host_names_are_answered(server):
    import http.client

    host, port = server.removeprefix("http://").split(":")
    for name, status in (("attacker.example", 400), (f"localhost:{port}", 200)):
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("GET", "/api/gpus", headers={"Host": name})
        assert conn.getresponse().status == status, name
        conn.close()
    got, body = get(f"{server}/api/solve?top=%C2%B2", b"workloads: []")
    assert got == 422 and "top" in body["error"]


def test_docs_and_page_reference_nothing_outside(server):
    for path in ("/", "/docs", "/static/app.js", "/static/draw.js", "/static/style.css"):
        with urllib.request.urlopen(server + path) as r:
            text = r.read().decode()
            assert "Content-Security-Policy" in r.headers
        for bad in ("http://", "https://", "//cdn", "fonts.googleapis"):
            assert bad not in text.replace("http://www.w3.org/2000/svg", ""), (path, bad)


def test_serve_refuses_a_public_host_without_the_flag():
    r = CliRunner().invoke(main, ["serve", "--host", "0.0.0.0", "--no-open"])
    assert r.exit_code == 2 and "--allow-remote" in r.output


def test_report_is_self_contained(tmp_path):
    out = tmp_path / "plan.html"
    scenario = ROOT / "scenarios" / "chat-assistant.yaml"
    r = CliRunner().invoke(main, ["solve", str(scenario), "--report", str(out)])
    assert r.exit_code == 0 and out.exists()
    html = out.read_text()
    plan = cli_json("solve", str(scenario))
    checks = sizing_checks(load_scenario(scenario), plan)
    assert html == report_html(plan, scenario.read_text(), checks)
    # the three checks for the plan's replica kind, as the commands give them
    (c,) = checks
    sat = cli_json(
        "saturation",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        c["gpu"],
        "--gpus",
        str(plan["plan"][0]["gpus_per_replica"]),
        "--tp",
        str(plan["plan"][0]["tp"]),
        "--weights",
        "fp8",
        "--kv",
        "fp8",
        "--input-tokens",
        "2000",
        "--output-tokens",
        "400",
        "--tokens-per-s",
        "25",
    )
    assert c["saturation"] == sat
    assert 'data-picture="saturation"' in html and 'data-card="minimum-gpu"' in html
    assert "<script src" not in html and "<link rel=" not in html
    assert "https://" not in html and "http://" not in html.replace(
        "http://www.w3.org/2000/svg", ""
    )


# ---- the page in a browser ----------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    path = _chromium()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is required under CI=true (apt-get install chromium)")
        pytest.skip("no Chromium on this machine")
    pw = pytest.importorskip("playwright.sync_api")
    with pw.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    # the tests' own waits evaluate script text, which the page's policy forbids; one test
    # below runs the page under its policy
    ctx = browser.new_context(viewport={"width": 1280, "height": 1400}, bypass_csp=True)
    pg = ctx.new_page()
    pg.requests = []
    pg.errors = []
    pg.on("request", lambda r: pg.requests.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    assert not pg.errors, pg.errors
    assert all(u.startswith(server) or u.startswith("data:") for u in pg.requests), pg.requests
    ctx.close()


def metric(pg, key: str) -> str:
    loc = pg.locator(f'section:not([hidden]) [data-metric="{key}"]').first
    loc.wait_for(timeout=60_000)
    return loc.get_attribute("data-value")


def test_modelling_ttft_card_names_the_serving_stacks_share(page, server):
    """The TTFT card says what the engine's own server adds (the CLI's line of its own):
    under SGLang its fitted time, under vLLM (none fitted) nothing."""
    for engine in ("sglang", "vllm"):
        page.goto(f"{server}/#tab=modelling&model=llama-3.1-8b&gpu=h100-sxm&engine={engine}")
        page.reload()
        cli = cli_json(
            "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", engine
        )
        metric(page, "ttft_s")
        label = page.locator('section:not([hidden]) [data-metric="ttft_s"] .k').first.inner_text()
        stack = cli["serving_stack_s"] * 1e3
        assert ("serving stack" in label) == (stack > 0), label
        if stack:
            assert f"{stack:.0f} ms" in label or f"{stack:.1f} ms" in label, label


def test_modelling_says_the_clis_notes(page, server):
    """What `planner estimate` and `planner curve` say beside their tables (here vLLM's
    unfitted front end, the caveat of published runs on that stack) the Modelling and Curve
    tabs say too, word for word."""
    page.goto(f"{server}/#tab=modelling&model=llama-3.1-8b&gpu=h100-sxm&engine=vllm")
    page.reload()
    cli = cli_json("estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm")
    assert any("vLLM's own time to a first token" in n for n in cli["notes"])
    assert json.loads(metric(page, "notes")) == cli["notes"]
    shown = page.locator('section:not([hidden]) [data-metric="notes"] .v').first.inner_text()
    assert "vLLM's own time to a first token" in shown
    # and the Curve tab, `planner curve`'s
    page.goto(f"{server}/#tab=curve&model=llama-3.1-8b&gpu=h100-sxm&engine=vllm")
    page.reload()
    cli = cli_json("curve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm")
    assert json.loads(metric(page, "notes")) == cli["notes"]


def test_modelling_shows_the_clis_numbers_and_moves_with_a_slider(page, server):
    page.goto(f"{server}/#tab=modelling&model=llama-3.1-8b&gpu=h100-sxm&batch=16&input-tokens=512")
    cli = cli_json(*EST_8B)
    page.wait_for_function("document.querySelector('[data-metric=\"tpot_s\"]') !== null")
    for key in ("tpot_s", "ttft_s", "per_user_tokens_per_s", "output_tokens_per_s", "max_batch"):
        assert float(metric(page, key)) == cli[key], key
    assert metric(page, "bottleneck") == cli["bottleneck"]
    for pic in ("memory-box", "pipe", "die", "interconnect", "saturation", "scaling"):
        page.wait_for_selector(f'[data-picture="{pic}"] *', state="attached", timeout=60_000)
    page.wait_for_selector('[data-metric="minimum_gpus"]', timeout=60_000)
    # every control carries its CLI option name
    names = page.eval_on_selector_all("[data-control]", "els => els.map(e => e.dataset.control)")
    assert {"model", "gpu", "gpus", "tp", "batch", "input-tokens", "output-tokens"} <= set(names)
    # drag the batch slider: the numbers and the address follow
    before = metric(page, "tpot_s")
    slider = page.locator('input[type="range"][data-control="batch"]')
    box = slider.bounding_box()
    page.mouse.move(box["x"] + 5, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()
    page.wait_for_function(
        f"document.querySelector('[data-metric=\"tpot_s\"]').dataset.value !== '{before}'"
    )
    h = page.evaluate("location.hash")
    batch = int(dict(x.split("=") for x in h[1:].split("&"))["batch"])
    assert batch > 16
    at = EST_8B.index("--batch") + 1  # the same configuration at the slider's batch
    cli = cli_json(*EST_8B[:at], str(batch), *EST_8B[at + 1 :])
    page.wait_for_function(
        f"document.querySelector('[data-metric=\"tpot_s\"]').dataset.value === '{cli['tpot_s']!r}'"
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    # the checks follow the slider after their own debounce; then the minimum-GPU card (one
    # H100 holds it) shows the same per-user speed as the estimate at this batch
    page.wait_for_function(
        '() => { const q = (k) => document.querySelector(`[data-metric="${k}"]`);'
        " const a = q('minimum_per_user_tokens_per_s'), b = q('per_user_tokens_per_s');"
        " return a && b && a.dataset.value === b.dataset.value; }"
    )
    page.screenshot(path=str(SHOTS / "modelling.png"), full_page=True)


def test_the_page_works_under_its_own_content_policy(browser, server):
    ctx = browser.new_context()
    pg = ctx.new_page()
    console = []
    pg.on("console", lambda m: console.append(m.text))
    pg.goto(f"{server}/#model=llama-3.1-8b&gpu=l4")
    pg.locator('[data-metric="tpot_s"]').wait_for(timeout=60_000)
    pg.locator('[data-picture="saturation"] polyline').first.wait_for(timeout=60_000)
    assert not [m for m in console if "Content Security Policy" in m], console
    ctx.close()


def test_a_failing_check_clears_its_picture_and_says_why(page, server):
    page.goto(f"{server}/#model=llama-3.1-8b&gpu=h100-sxm")
    page.wait_for_selector('[data-picture="saturation"] polyline', state="attached")
    page.select_option('[data-control="model"][data-group="modelling"]', "llama-3.1-405b")
    note = page.locator('[data-note="saturation"]')
    note.filter(has_text="does not fit").wait_for(timeout=60_000)
    assert page.locator('[data-picture="saturation"] polyline').count() == 0
    assert "llama-3.1-405b" in page.evaluate("location.hash")


def test_a_family_model_shows_its_own_units(page, server):
    page.goto(f"{server}/#model=flux1-dev&gpu=h100-sxm&batch=1")
    cli = cli_json("estimate", "--model", "flux1-dev", "--gpu", "h100-sxm")
    assert float(metric(page, "images_per_s")) == cli["images_per_s"]
    # the family's p10-p90 band, from the same estimate
    band = page.locator('[data-metric="images_per_s"] .b').inner_text()
    assert band.startswith("p10") and cli["bands"]["images_per_s"]["p10"] < cli["images_per_s"]
    assert page.locator('[data-control="steps"]').is_visible()
    assert not page.locator('[data-control="tp"]').is_visible()
    # the pipeline's engine: the diffusion engines offered, and the CLI's number under one
    page.select_option('[data-control="engine"][data-group="modelling"]', "torch-compile")
    fast = cli_json(
        "estimate", "--model", "flux1-dev", "--gpu", "h100-sxm", "--engine", "torch-compile"
    )
    page.wait_for_selector(
        f'section:not([hidden]) [data-metric="images_per_s"][data-value="{fast["images_per_s"]}"]',
        timeout=60_000,
    )
    assert fast["images_per_s"] > cli["images_per_s"]


def test_a_family_model_hides_the_language_model_checks(page, server):
    """Saturation and scaling take text language models: switching to a diffusion model
    hides them (no language model's numbers left beside its estimate), and the minimum GPU
    becomes `planner fit` on the diffusion model."""
    page.goto(f"{server}/#model=llama-3.1-8b&gpu=h100-sxm&batch=8")
    page.wait_for_selector('[data-picture="saturation"] polyline', state="attached")
    assert page.locator('[data-picture="saturation"]').is_visible()
    page.select_option('[data-control="model"][data-group="modelling"]', "flux1-dev")
    page.wait_for_selector('[data-metric="images_per_s"]')
    for sel in ('[data-picture="saturation"]', '[data-picture="scaling"]'):
        assert not page.locator(sel).is_visible()
    # the minimum GPU is `planner fit` on the family model
    page.wait_for_function(
        "document.querySelector('[data-metric=\"minimum_rate\"]') !== null", timeout=60_000
    )
    fit = cli_json("fit", "--model", "flux1-dev")
    best = next(f for f in fit["by_gpu"] if f["fits"])
    assert metric(page, "cheapest_fit") == best["gpu"]
    # nor the decode and prefill shares, which only a language model's estimate has
    assert not page.locator('[data-picture="pipe"]').is_visible()
    assert page.locator('[data-picture="memory-box"]').is_visible()
    page.select_option('[data-control="model"][data-group="modelling"]', "llama-3.1-8b")
    page.wait_for_selector('[data-metric="tpot_s"]')
    assert page.locator('[data-picture="pipe"]').is_visible()


def test_workload_solves_as_the_cli_does(page, server, tmp_path):
    bodies = []
    page.on("request", lambda r: bodies.append(r.post_data) if r.method == "POST" else None)
    page.goto(
        f"{server}/#tab=workload&model=llama-3.1-8b&w.users=500&w.basis=rental&w.confidence=0.9"
    )
    total = metric(page, "total_gpus")
    assert bodies
    f = tmp_path / "page.json"
    f.write_text(bodies[-1])
    assert json.loads(bodies[-1])["confidence"] == 0.9
    cli = cli_json("solve", str(f))
    assert int(total) == cli["total_gpus"]
    assert metric(page, "order") == cli["order"]
    assert float(metric(page, "cost_per_year_usd")) == cli["cost_per_year_usd"]
    page.wait_for_selector('[data-picture="fleet"] rect', state="attached")
    page.wait_for_selector('[data-picture="frontier"] rect', state="attached")
    page.screenshot(path=str(SHOTS / "workload.png"), full_page=True)


def _page_number(v: float) -> str:
    """A number as the page's fmt() shows it (draw.js)."""
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if a >= 10 else f"{v:.2f}" if a >= 1 else f"{v:.3g}"


def test_curve_marks_the_clis_knee(page, server):
    page.goto(f"{server}/#tab=curve&model=llama-3.1-8b&gpu=l4&c.ttft-s=1")
    cli = cli_json(
        "curve",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "l4",
        "--input-tokens",
        "1024",
        "--output-tokens",
        "256",
        "--ttft-s",
        "1",
    )
    assert int(metric(page, "knee_users")) == cli["knee_users"]
    assert int(metric(page, "max_users_fit")) == cli["max_users_fit"]
    page.wait_for_selector('[data-picture="curve"] polyline', state="attached")
    # every point's p10-p90 shaded: TTFT at the percentile and per-user speed, one polygon
    # each whose corners are the CLI's points (top edge the p90s, bottom the p10s)
    op = cli["operating_point"]
    for name in ("ttft_s", "per_user_tokens_per_s"):
        poly = page.locator(f'[data-picture="curve"] polygon[data-band="{name}"]')
        corners = poly.get_attribute("points").split()
        assert len(corners) == 2 * len(cli["points"]), name
        # a wider band where the CLI's is wider: the polygon is never a line
        heights = [
            float(lo.split(",")[1]) - float(hi.split(",")[1])
            for hi, lo in zip(corners, reversed(corners), strict=True)
        ][: len(cli["points"])]
        assert min(heights) > 0, name
        # the operating point's card carries the CLI's band, as the page formats numbers
        b = op["bands"][name]
        key, unit = ("ttft_pct_s", " s") if name == "ttft_s" else (name, "")
        text = page.locator(f'[data-metric="operating_point.{key}"] .b').inner_text()
        lo, hi, mid = (_page_number(b[q]) for q in ("p10", "p90", "p50"))
        assert text == f"p10–p90 {lo}–{hi}{unit} (median {mid}{unit})", (text, b)
    assert float(metric(page, "operating_point.ttft_pct_s")) == op["ttft_pct_s"]
    # TTFT spans orders of magnitude past the knee: a log axis, and the target across it
    labels = page.eval_on_selector_all(
        '[data-picture="curve"] text', "els => els.map(e => e.textContent)"
    )
    assert "TTFT s (log)" in labels and "TTFT target 1 s" in labels, labels
    page.screenshot(path=str(SHOTS / "curve.png"), full_page=True)


def test_keyboard_phone_width_and_dark(browser, server):
    ctx = browser.new_context(
        viewport={"width": 390, "height": 844}, color_scheme="dark", bypass_csp=True
    )
    pg = ctx.new_page()
    pg.goto(f"{server}/#model=llama-3.1-8b")
    pg.wait_for_selector('[data-metric="tpot_s"]')
    wide = pg.evaluate("document.documentElement.scrollWidth")
    assert wide <= 390, wide
    pg.focus("#tab-modelling")
    pg.keyboard.press("ArrowRight")
    pg.wait_for_function("location.hash.includes('tab=workload')")
    assert pg.evaluate("document.activeElement.id") == "tab-workload"
    bg = pg.evaluate("getComputedStyle(document.body).backgroundColor")
    assert bg == "rgb(21, 23, 26)"  # the dark palette
    pg.click("#theme")
    assert "theme=light" in pg.evaluate("location.hash")
    # the (i) explains its control
    pg.click("#tab-modelling")
    info = pg.locator('.control[data-for="batch"] .info')
    info.click()
    assert pg.locator('.control[data-for="batch"] .info-text').is_visible()
    ctx.close()


FAMILIES = [
    ("qwen3-30b-a3b", "output_tokens_per_s"),  # MoE
    ("qwen2.5-vl-7b", "output_tokens_per_s"),  # VLM
    ("flux1-dev", "images_per_s"),
    ("cogvideox-2b", "videos_per_hour"),
    ("var-d30", "images_per_s"),
    ("pi0", "robots_per_replica"),
    ("whisper-large-v3", "audio_s_per_s"),
    ("bge-m3", "docs_per_s"),
    ("vjepa-vitl", "clips_per_s"),
]


@pytest.mark.parametrize("model,key", FAMILIES)
def test_every_family_in_all_three_tabs(page, server, tmp_path, model, key):
    cli = cli_json("estimate", "--model", model, "--gpu", "h100-sxm", "--batch", "2")
    page.goto(f"{server}/#model={model}&gpu=h100-sxm&batch=2")
    assert float(metric(page, key)) == cli[key]
    bodies = []
    page.on("request", lambda r: bodies.append(r.post_data) if r.method == "POST" else None)
    page.click("#tab-workload")
    feasible = metric(page, "feasible")
    f = tmp_path / "page.json"
    f.write_text(bodies[-1])
    solved = cli_json("solve", str(f))
    assert feasible == str(solved["feasible"]).lower()
    if solved["feasible"]:
        assert int(metric(page, "total_gpus")) == solved["total_gpus"]
        # each replica in its workload's own unit (a language model's TTFT and speed)
        unit = solved["plan"][0]["unit"]
        row = page.locator('[data-metric="plan.0"] .v').inner_text()
        assert ("TTFT" in row) if unit == "seats" else (unit in row and "TTFT" not in row)
        # and its p10-p90, the CLI's (a pass for the families served in batches)
        r = solved["plan"][0]
        bands = page.locator('[data-metric="plan.0"] .b')
        if unit == "seats":
            assert (
                bands.inner_text().startswith("p10–p90 TTFT ")
                and "tok/s/user" in bands.inner_text()
            )
        elif r["pass_s"] is not None and "s_per_batch" in r["bands"]:
            assert bands.inner_text().startswith("p10–p90 pass ")
        else:  # the CLI's table gives none for such a row either
            assert bands.count() == 0
    page.click("#tab-curve")
    page.wait_for_selector('[data-picture="curve"] polyline', state="attached", timeout=60_000)
    assert metric(page, "max_batch" if model not in ("qwen3-30b-a3b",) else "knee_users")
    if model not in ("qwen3-30b-a3b", "qwen2.5-vl-7b"):  # served in batches: `planner curve`
        curve = cli_json("curve", "--model", model, "--gpu", "h100-sxm")
        assert int(metric(page, "max_batch")) == curve["max_batch"]
        assert (
            float(metric(page, f"{curve['rate_key']}@max"))
            == curve["points"][-1]["metrics"][curve["rate_key"]]
        )


def test_the_url_hash_round_trips(page, server):
    start = "#tab=curve&model=mixtral-8x7b&gpu=h200&gpus=2&kv=fp8&batch=32&c.ttft-s=2"
    page.goto(server + "/" + start)
    knee = metric(page, "knee_users")
    shown = page.evaluate("location.hash")
    assert dict(x.split("=") for x in shown[1:].split("&")) == dict(
        x.split("=") for x in start[1:].split("&")
    )
    page.goto("about:blank")
    page.goto(server + "/" + shown)  # the link reproduces the view
    assert metric(page, "knee_users") == knee
    assert page.locator('[data-control="kv"][data-group="modelling"]').input_value() == "fp8"
    cli = cli_json(
        "curve",
        "--model",
        "mixtral-8x7b",
        "--gpu",
        "h200",
        "--gpus",
        "2",
        "--kv",
        "fp8",
        "--ttft-s",
        "2",
    )
    assert int(knee) == cli["knee_users"]
