"""``python -m planner``: the same commands as the ``planner`` script."""

from .cli import main

main(prog_name="planner")
