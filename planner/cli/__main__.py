"""``python -m planner.cli``: the same commands as the ``planner`` script."""

from . import main

main(prog_name="planner")
