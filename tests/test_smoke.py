"""The whole catalogue through `planner estimate` and `planner curve`: never a traceback."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "smoke_cli.py"


def test_every_preset_on_every_kind_of_gpu_ends_in_a_clean_exit_code(capsys):
    spec = importlib.util.spec_from_file_location("smoke_cli", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main_() == 0, capsys.readouterr().out
