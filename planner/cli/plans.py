"""``planner solve``, ``compare`` and ``sweep``: scenarios in, fleets out. The planner is
imported when a command runs, so ``planner --help`` stays quick."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import EXIT_INFEASIBLE, FORMAT, OUT, dump, friendly_errors, presets_of

MAX_TOP = 50  # plans ranked at most: each is one more solver run
SCENARIO = click.argument("scenario_file", type=click.Path())


@click.command("solve")
@SCENARIO
@click.option(
    "--top",
    type=click.IntRange(1, MAX_TOP),
    default=5,
    show_default=True,
    help="Plans to rank: the recommendation and the next-best distinct fleets.",
)
@FORMAT
@OUT
@click.option("--explain", is_flag=True, help="Also list candidates excluded and why.")
@click.option(
    "--emit",
    type=click.Choice(["vllm", "sglang", "trtllm"]),
    help="Also print each language-model replica's launch command for this engine.",
)
@click.option(
    "--report",
    type=click.Path(dir_okay=False),
    help="Also write one self-contained HTML report (pictures and tables; prints to PDF).",
)
@click.pass_context
@friendly_errors
def solve_cmd(ctx, scenario_file, top, fmt, out, explain, emit, report):
    """The cheapest feasible fleet for a scenario, and ranked alternatives."""
    from estimator.files import write_csv

    from ..launch import launch_commands
    from ..render.plans import launch_text, result_table
    from ..scenario import load_scenario
    from ..solve import plan_scenario

    sc = load_scenario(scenario_file)
    res = plan_scenario(sc, presets_of(ctx), top=top)
    launches = launch_commands(sc, res, emit, presets_of(ctx)) if emit else None
    if fmt == "json":
        d = res.to_dict(explain)
        if launches is not None:
            d["launch"] = [x.to_dict() for x in launches]
        click.echo(dump(d))
    else:
        click.echo(result_table(res, top, explain), nl=False)
        if launches is not None:
            click.echo(launch_text(launches, emit), nl=False)
    if out:
        write_csv(res.rows(), out, inputs=(scenario_file,))
    if report:
        from estimator.files import atomic_write_text

        from ..web.report import report_html, sizing_checks
        from ..yaml_input import read_text

        d = res.to_dict(explain)
        checks = sizing_checks(sc, d, presets_of(ctx)) if res.feasible else []
        html = report_html(d, read_text(Path(scenario_file)), checks)
        atomic_write_text(report, html, inputs=(scenario_file,))
    if not res.feasible:
        if fmt == "json":
            click.echo(f"no feasible plan: {res.reason}", err=True)
        sys.exit(EXIT_INFEASIBLE)


@click.command("compare")
@SCENARIO
@click.option("--by", type=click.Choice(["vendor", "gpu"]), default="vendor", show_default=True)
@FORMAT
@OUT
@click.pass_context
@friendly_errors
def compare_cmd(ctx, scenario_file, by, fmt, out):
    """The best plan for each vendor or GPU type, side by side."""
    from estimator.files import write_csv

    from ..render.plans import compare_table
    from ..scenario import load_scenario
    from ..solve import compare

    c = compare(load_scenario(scenario_file), by, presets_of(ctx))
    click.echo(dump(c.to_dict()) if fmt == "json" else compare_table(c))
    if out:
        write_csv(c.rows(), out, inputs=(scenario_file,))
    if not c.feasible:
        sys.exit(EXIT_INFEASIBLE)


@click.command("sweep")
@SCENARIO
@click.option(
    "--set",
    "sets",
    multiple=True,
    help="KEY=V1,V2,... (repeatable), e.g. budget.max_usd=2e6,4e6 or "
    "workloads.chat.users=1000,2000",
)
@click.option(
    "--samples",
    type=click.IntRange(0, 100_000),
    default=0,
    help="Monte-Carlo draws of the scenario's distributions (e.g. users: {dist: lognormal, "
    "median: 2000, sigma: 0.4}) per combination; reports the spread of GPUs and cost.",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**32 - 1),
    default=0,
    show_default=True,
    help="Seed of the --samples draws (sample k of a seed is the same on any machine).",
)
@click.option(
    "--jobs",
    type=click.IntRange(0, 1024),
    default=1,
    show_default=True,
    help="Local processes solving points in parallel (this one and N-1 workers; 0: one per core).",
)
@click.option(
    "--cluster",
    help="Run the points on a Dask scheduler: tcp://HOST:8786, or 'local' to start a local "
    "cluster of --jobs workers.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Skip the points OUT.partial already holds (an interrupted sweep with --out).",
)
@FORMAT
@OUT
@click.pass_context
@friendly_errors
def sweep_cmd(ctx, scenario_file, sets, samples, seed, jobs, cluster, resume, fmt, out):
    """Rerun the solve for every combination of --set values (and --samples draws); one row
    per point. With --out, rows stream into OUT.partial as points finish and land in OUT
    when all are done; a progress bar shows on a terminal."""
    if not sets and not samples:
        raise click.UsageError("give --set KEY=V1,V2,... and/or --samples K")
    from ..workers import processes

    jobs = processes(jobs)
    if cluster is None:
        from ..workers import prestart

        prestart(jobs)  # loky's workers import the planner while this process does
    from ..errors import SweepStopped
    from ..render.plans import sweep_table
    from ..sweep import parse_sets, sweep

    try:
        s = sweep(
            scenario_file,
            parse_sets(sets),
            presets_of(ctx),
            jobs=jobs,
            cluster=cluster,
            out=out,
            resume=resume,
            samples=samples,
            seed=seed,
            progress=True,
        )
    except SweepStopped as e:  # stopped, as Ctrl-C is: exit 1 (its progress line ended)
        click.echo(("\n" if sys.stderr.isatty() else "") + f"error: {e}", err=True)
        sys.exit(1)
    if cluster is None:
        from ..workers import release

        release()
    click.echo(dump(s.to_dict()) if fmt == "json" else sweep_table(s))
    if not s.feasible:
        sys.exit(EXIT_INFEASIBLE)
