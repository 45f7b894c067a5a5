"""The page's API without the web framework: a command's query parameters, named like its
CLI options, run through the very click command the CLI runs (its parsing, its checks, its
library call), and the result object handed back instead of printed. So a number on the page
is the number `planner ... --format json` prints, and bad input gets the CLI's message."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import click

from estimator.errors import EstimatorError

TRUE = {"1", "true", "on", "yes"}
FALSE = {"0", "false", "off", "no", ""}


class BadInput(Exception):
    """Input the command refuses; the message is the CLI's."""


@functools.cache
def commands() -> dict[str, click.Command]:
    """The commands the API runs, by name (its routes: ``/api/<name>``)."""
    from ..cli.estimate import curve_cmd, estimate_cmd
    from ..cli.sizing import fit_cmd, saturation_cmd, scaling_cmd

    return {c.name: c for c in (estimate_cmd, curve_cmd, saturation_cmd, scaling_cmd, fit_cmd)}


def to_args(cmd: click.Command, query: Iterable[tuple[str, str]]) -> list[str]:
    """Query pairs -> the command's argv: ``input_tokens=512`` is ``--input-tokens 512``; a
    flag is given by a true value (``attention_dp=1``); ``--guidance/--no-guidance`` takes
    ``guidance=true|false``."""
    by_opt = {o: p for p in cmd.params if isinstance(p, click.Option) for o in p.opts}
    flags = {o: p for p in cmd.params if isinstance(p, click.Option) for o in p.secondary_opts}
    args: list[str] = []
    given: set[str] = set()
    for key, value in query:
        if key == "format":
            continue  # the API always answers with the JSON payload
        if key in given:
            raise BadInput(f"{key} given twice; give each option once")
        given.add(key)
        if key == "model_config" or (key == "model" and _path_like(value)):
            raise BadInput(
                "the page's API takes preset names, not file paths: run `planner` on this "
                "machine for a local config.json"
            )
        name = "--" + key.replace("_", "-")
        p = by_opt.get(name)
        if p is None:
            raise BadInput(f"no such option: {name} (for `planner {cmd.name}`)")
        if p.is_flag:
            v = value.strip().lower()
            if v not in TRUE | FALSE:
                raise BadInput(f"{name}: expected true or false, not {value!r}")
            if v in TRUE:
                args.append(name)
            elif p.secondary_opts:
                args.append(next(o for o in flags if flags[o] is p))
            continue
        args += [name, value]
    return args


def _path_like(text: str) -> bool:
    """A file path rather than a preset name or a Hugging Face id (org/name)."""
    t = text.strip()
    return t.startswith(("/", ".", "~", "\\")) or ".." in t or "\\" in t or t.count("/") > 1


def run_command(name: str, query: Iterable[tuple[str, str]], presets: tuple[str, ...] = ()) -> Any:
    """The result object of ``planner NAME`` with these options (its ``to_dict()`` is the
    command's ``--format json``)."""
    cmds = commands()
    if name not in cmds:
        raise BadInput(f"unknown command {name!r}; the API runs {', '.join(cmds)}")
    cmd = cmds[name]
    obj: dict[str, Any] = {"presets": presets, "collect": True}
    try:
        ctx = cmd.make_context(name, to_args(cmd, query), obj=obj)
        with ctx:
            cmd.invoke(ctx)
    except click.ClickException as e:
        raise BadInput(e.format_message()) from None
    except EstimatorError as e:
        raise BadInput(str(e)) from None
    except click.exceptions.Exit:  # --help and the like: not an API call
        raise BadInput(f"`planner {name}` options only") from None
    return obj["result"]


def solve_text(text: str, presets: tuple[str, ...] = (), top: int = 5) -> dict:
    """``planner solve FILE --format json`` for a scenario given as YAML or JSON text."""
    from ..scenario import scenario_from_text
    from ..solve import plan_scenario

    try:
        sc = scenario_from_text(text, "scenario")
        paths = [w.model for w in sc.workloads if _path_like(w.model)]
        if paths:
            raise BadInput(f"model {paths[0]!r}: the page's API takes preset names, not file paths")
        return plan_scenario(sc, presets, top=top).to_dict()
    except EstimatorError as e:
        raise BadInput(str(e)) from None


def models(presets: tuple[str, ...] = ()) -> list[dict]:
    """``planner models list --format json``."""
    from estimator.describe import list_models

    return list_models(presets)


def gpus(presets: tuple[str, ...] = ()) -> list[dict]:
    """``planner gpus list --format json``."""
    from estimator import gpu_catalog

    cat = gpu_catalog(presets)
    return [cat.items[n].model_dump() for n in cat.names()]
