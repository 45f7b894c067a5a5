"""``python -m planner.cli``: the same commands as the ``planner`` script."""

from . import run

run()
