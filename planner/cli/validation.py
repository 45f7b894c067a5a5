"""``planner validate`` and ``planner calibrate``: the estimator against published runs."""

from __future__ import annotations

import click

from .common import dump, friendly_errors

DATA = click.option(
    "--data",
    "data",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="CSV of measurements in the validation columns (default: the shipped set).",
)


@click.command("validate")
@DATA
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
@click.option("--cv", is_flag=True, help="Also leave-one-source-out cross-validation.")
@click.option("--report", type=click.Path(dir_okay=False), help="Write the Markdown report here.")
@friendly_errors
def validate_cmd(data, fmt, cv, report):
    """Predict every published measurement and report the error."""
    from calibration.report import validate
    from estimator.files import atomic_write_text

    from ..render.validation import validation_text

    v = validate(list(data), cv=cv or bool(report))
    if fmt == "json":
        click.echo(dump(v.to_dict()))
    elif fmt == "csv":
        import pandas as pd

        from estimator.files import safe_frame

        frame = safe_frame(pd.DataFrame(v.records()))
        click.echo(frame.to_csv(index=False), nl=False)
    else:
        click.echo(validation_text(v))
    if report:
        atomic_write_text(report, v.markdown(), inputs=tuple(v.files))


@click.command("calibrate")
@DATA
@click.option("--write", is_flag=True, help="Write estimator/calibration.yaml.")
@friendly_errors
def calibrate_cmd(data, write):
    """Fit the efficiency factors to the measurements (least squares on log error)."""
    from calibration import writer

    click.echo(dump(writer.calibrate(list(data), write)))
