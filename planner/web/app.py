"""The FastAPI app behind ``planner serve``: the static page and a JSON API whose payloads
are the CLI's ``--format json``. Bad input is a 422 carrying the CLI's message, never a
500; requests are bounded in size and in time; the page makes no request to anywhere but
the server that served it (its Content-Security-Policy says so to the browser)."""

from __future__ import annotations

import asyncio
import json
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from . import api

MAX_BODY = 1_000_000  # bytes of a POSTed scenario (the file limit of `planner solve`)
MAX_QUERY = 8_000  # characters of a query string
TIMEOUT_S = 60.0  # one request's computation
STATIC = ("index.html", "app.js", "draw.js", "style.css")
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
TYPES = {"html": "text/html; charset=utf-8", "js": "text/javascript", "css": "text/css"}


def _json(payload: Any, status: int = 200) -> Response:
    # the CLI's encoding (`planner.cli.common.dump` without the indent): same numbers
    return Response(json.dumps(payload, default=float), status, media_type="application/json")


def _error(message: str, status: int = 422) -> Response:
    return _json({"error": message}, status)


def host_of(header: str) -> str:
    """The host part of a Host header: 'localhost:8000' -> 'localhost', '[::1]:8000' ->
    '[::1]'."""
    if header.startswith("["):
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def static_file(name: str) -> bytes:
    return resources.files("planner.web").joinpath("static", name).read_bytes()


LOCAL_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]
MAX_IN_FLIGHT = 2  # computations at once: a request past its time limit still holds one


def create_app(
    presets: tuple[str, ...] = (),
    timeout_s: float = TIMEOUT_S,
    allowed_hosts: list[str] | None = None,
) -> FastAPI:
    """``allowed_hosts``: the Host headers answered (default: loopback names only, so a web
    page elsewhere cannot reach this server through DNS rebinding); ``["*"]`` for any."""
    app = FastAPI(
        title="planner",
        description=(
            "How many of which GPUs to serve an AI model. Every endpoint answers with the "
            "payload of the matching command's `--format json`; query parameters are named "
            "like the CLI's options (`input_tokens` is `--input-tokens`). Bad input: 422 with "
            "`{error}`, the CLI's message."
        ),
        version="1",
        docs_url=None,
        redoc_url=None,
    )

    slots = asyncio.Semaphore(MAX_IN_FLIGHT)

    async def bounded(fn, *a) -> Response:
        """Run ``fn`` on a worker thread, at most MAX_IN_FLIGHT at once, answering within
        ``timeout_s``. A computation past its time keeps its slot until it ends, so
        abandoned work never piles up beyond MAX_IN_FLIGHT threads."""
        try:
            await asyncio.wait_for(slots.acquire(), timeout_s)
        except TimeoutError:
            return _error("busy with earlier requests; try again", 503)
        task = asyncio.ensure_future(run_in_threadpool(fn, *a))
        task.add_done_callback(lambda _: slots.release())
        try:
            out = await asyncio.wait_for(asyncio.shield(task), timeout_s)
        except api.BadInput as e:
            return _error(str(e))
        except TimeoutError:
            return _error(f"took longer than {timeout_s:g} s; ask for less", 503)
        return _json(out)

    hosts = allowed_hosts or LOCAL_HOSTS

    @app.middleware("http")
    async def limits(request: Request, call_next):
        host = host_of(request.headers.get("host") or "")
        if "*" not in hosts and host not in hosts:
            return _error(f"host {host!r} is not served here (loopback only)", 400)
        if len(request.url.query) > MAX_QUERY:
            return _error(f"query longer than {MAX_QUERY:,} characters", 414)
        size = request.headers.get("content-length")
        if size is not None and not (size.isascii() and size.isdigit() and int(size) <= MAX_BODY):
            return _error(f"request body larger than {MAX_BODY:,} bytes", 413)
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    def command(name: str):
        async def endpoint(request: Request) -> Response:
            query = list(request.query_params.multi_items())
            return await bounded(lambda: api.run_command(name, query, presets).to_dict())

        endpoint.__name__ = name
        endpoint.__doc__ = f"`planner {name} ... --format json`; parameters as its options."
        return endpoint

    for name in api.commands():
        app.add_api_route(f"/api/{name}", command(name), methods=["GET"], summary=f"planner {name}")

    @app.post("/api/solve", summary="planner solve")
    async def solve(request: Request) -> Response:
        """`planner solve FILE --format json` for the scenario in the body (YAML or JSON)."""
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                return _error(f"request body larger than {MAX_BODY:,} bytes", 413)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return _error("the scenario must be UTF-8 text (YAML or JSON)")
        top = request.query_params.get("top", "5")
        if not (top.isascii() and top.isdigit() and 1 <= int(top) <= 50):
            return _error("top: a whole number from 1 to 50")
        return await bounded(api.solve_text, text, presets, int(top))

    @app.get("/api/models", summary="planner models list")
    async def models() -> Response:
        """`planner models list --format json`."""
        return await bounded(api.models, presets)

    @app.get("/api/gpus", summary="planner gpus list")
    async def gpus() -> Response:
        """`planner gpus list --format json`."""
        return await bounded(api.gpus, presets)

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Response:
        return HTMLResponse(docs_html(app.openapi()))

    @app.get("/", include_in_schema=False)
    async def index() -> Response:
        return HTMLResponse(static_file("index.html"))

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        if name not in STATIC:
            return _error("not found", 404)
        return Response(static_file(name), media_type=TYPES[name.rsplit(".", 1)[1]])

    @app.exception_handler(404)
    async def not_found(request: Request, exc) -> Response:
        return _error(f"no such page: {request.url.path}", 404)

    @app.exception_handler(405)
    async def not_allowed(request: Request, exc) -> Response:
        return _error(f"{request.method} is not allowed on {request.url.path}", 405)

    return app


def docs_html(spec: dict) -> str:
    """The API's reference, drawn from its OpenAPI document without any outside script (the
    usual Swagger page loads from a CDN, which this tool never calls)."""
    from html import escape

    rows = []
    for path, methods in spec.get("paths", {}).items():
        for method, op in methods.items():
            rows.append(
                f"<tr><td><code>{method.upper()} {escape(path)}</code></td>"
                f"<td>{escape(op.get('summary', ''))}</td>"
                f"<td>{escape(op.get('description', ''))}</td></tr>"
            )
    return (
        "<!doctype html><html lang=en><meta charset=utf-8><title>planner API</title>"
        '<link rel=stylesheet href="/static/style.css"><main class=docs>'
        f"<h1>planner API</h1><p>{escape(spec['info'].get('description', ''))}</p>"
        "<p>The machine-readable document: <a href=/openapi.json>/openapi.json</a>.</p>"
        "<table><tr><th>endpoint</th><th>command</th><th>what it returns</th></tr>"
        + "".join(rows)
        + "</table></main></html>"
    )
