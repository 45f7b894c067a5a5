"""``python -m planner``: the same commands as the ``planner`` script."""

from .cli import run

run()
