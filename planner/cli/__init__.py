"""`planner` command line: thin commands over functions a notebook user can call too. Each
command parses its options, makes one call into the library and one into a renderer.

Exit codes: 0 success, 1 no feasible configuration, 2 bad input.
"""

from __future__ import annotations

import gc
import os
import sys
from contextlib import contextmanager

import click

from .catalog import gpus_group, instances_group, models_group, servers_group
from .estimate import curve_cmd, estimate_cmd
from .plans import compare_cmd, solve_cmd, sweep_cmd
from .serve import serve_cmd
from .sizing import fit_cmd, saturation_cmd, scaling_cmd
from .validation import calibrate_cmd, validate_cmd

GC_THRESHOLD = 10_000  # allocations between young-generation collections (Python: 700)


@contextmanager
def _reader_may_go():
    """A reader that goes away mid-output (``planner ... | head``) ends the command with exit
    0 and no traceback: click's own handler of a closed pipe exits 1."""
    try:
        yield
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # flush on exit: no-op
        raise click.exceptions.Exit(0) from None


class _Commands(click.Group):
    """The command group: a closed pipe is no error, whether in a command's output or in
    the parsing's own (``--help``, ``--version``)."""

    def make_context(self, *args, **kwargs) -> click.Context:
        with _reader_may_go():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context):
        with _reader_may_go():
            return super().invoke(ctx)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--presets",
    "presets",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Extra folder of preset YAML (gpus/, models/); overrides shipped entries.",
)
@click.version_option(package_name="planner")
@click.pass_context
def main(ctx: click.Context, presets: tuple[str, ...]) -> None:
    """Size GPU fleets for AI model serving."""
    ctx.obj = {"presets": presets}


for _cmd in (
    solve_cmd,
    compare_cmd,
    sweep_cmd,
    estimate_cmd,
    curve_cmd,
    saturation_cmd,
    scaling_cmd,
    fit_cmd,
    serve_cmd,
    models_group,
    gpus_group,
    servers_group,
    instances_group,
    validate_cmd,
    calibrate_cmd,
):
    main.add_command(_cmd)


def run() -> None:
    """The ``planner`` script: ``main`` with clean exits. A reader that goes away (``planner
    ... | head``) is not an error of ours: exit 0, with no traceback."""
    # the planner's arrays are small (candidates x batch sizes): BLAS threads only spin,
    # about 0.2 s of CPU per command. Set before numpy loads; a user's own setting stays
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    # a command allocates many small short-lived objects (arrays, dicts) and few cycles: the
    # default 700-allocation trigger ran the collector thousands of times a solve, and the
    # interpreter's last collections at exit walked every object the command made (cold
    # `planner solve three_workloads.yaml`: ~1.26 -> ~1.17 s of CPU). This process only;
    # the library leaves a notebook's collector alone
    gc.set_threshold(GC_THRESHOLD, 20, 20)
    sys.exit(_command())


def _command() -> int:
    """Run the command line; its exit code. What is alive at the end is frozen: the exit's
    collections skip it (the process frees its memory as it ends)."""
    try:
        rv = main.main(prog_name="planner", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        return 1
    finally:
        gc.freeze()


__all__ = ["main", "run"]
