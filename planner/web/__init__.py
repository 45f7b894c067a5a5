"""The local page (``planner serve``): a JSON API over the same command functions as the CLI
(:mod:`planner.web.api`), the FastAPI app that serves it with the static page
(:mod:`planner.web.app`), and the shareable HTML report (:mod:`planner.web.report`)."""
