"""``planner serve``: the local page and its JSON API."""

from __future__ import annotations

import ipaddress

import click

from estimator.errors import EstimatorError

from .common import PYTHON_GC_THRESHOLD, friendly_errors, presets_of


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--open/--no-open",
    "open_browser",
    default=True,
    show_default=True,
    help="Open the page in the default browser.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --host: anyone who reaches it can use the page.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(1, 3600),
    default=60.0,
    show_default=True,
    help="Seconds one request may compute.",
)
@click.pass_context
@friendly_errors
def serve_cmd(ctx, host, port, open_browser, allow_remote, timeout):
    """The page: Modelling, Workload and Curve tabs in the browser, on this machine.

    Nothing is saved or sent anywhere: the configuration lives in the page's URL, and the
    page asks only this server. Bound to loopback unless --allow-remote."""
    if not is_loopback(host):
        if not allow_remote:
            raise EstimatorError(
                f"--host {host} is not a loopback address: anyone who can reach it could use "
                "this server; add --allow-remote to mean it"
            )
        click.echo(f"warning: serving on {host}, reachable beyond this machine", err=True)
    import gc
    import threading
    import webbrowser

    import uvicorn

    # a server runs for hours: it collects at Python's own pace, not the one-shot commands'
    # (whose trigger would leave its cyclic garbage for millions of allocations)
    gc.set_threshold(*PYTHON_GC_THRESHOLD)

    from ..web.app import create_app

    app = create_app(presets_of(ctx), timeout, None if is_loopback(host) else ["*"])
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    click.echo(f"planner page at {url} (API reference at {url}docs); Ctrl-C stops it", err=True)
    if open_browser:
        threading.Timer(1.0, lambda: webbrowser.open(url)).start()
    uvicorn.run(
        app, host=host, port=port, log_level="warning", limit_concurrency=32, timeout_keep_alive=5
    )
