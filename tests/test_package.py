"""The package as a user installs it: a plain (non-editable) wheel in a fresh environment,
run from a folder that is not the checkout; and `python -m planner.cli` with every command."""

import json
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = [
    "solve",
    "compare",
    "sweep",
    "estimate",
    "curve",
    "saturation",
    "scaling",
    "fit",
    "serve",
    "models",
    "gpus",
    "servers",
    "instances",
    "validate",
]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv holding only the wheel; the dependencies come from this environment's
    site-packages (a .pth line), so the test needs no download beyond the build backend."""
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp), str(ROOT)],
        check=True,
    )
    wheel = next(tmp.glob("planner-*.whl"))
    env_dir = tmp / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    deps = [p for p in site.getsitepackages() if "site-packages" in p]
    (Path(purelib) / "deps.pth").write_text("\n".join(deps) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", purelib, wheel],
        check=True,
    )
    return env_dir, tmp


def _run(env_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    py = env_dir / "bin" / "python"
    return subprocess.run(
        [str(py), "-m", "planner.cli", *args], cwd=cwd, capture_output=True, text=True
    )


def test_wheel_carries_every_subpackage_and_its_data(installed):
    _, tmp = installed
    import zipfile

    names = zipfile.ZipFile(next(tmp.glob("planner-*.whl"))).namelist()
    for required in (
        "estimator/families/registry.py",
        "estimator/calibration.yaml",
        "planner/cli/__main__.py",
        "calibration/data/llm_measured_public.csv",
        "presets/gpus/nvidia.yaml",
        "presets/families/diffusion/flux1-dev.yaml",
        "presets/servers/servers.yaml",
        "presets/instances/clouds.yaml",
        "planner/web/static/index.html",
        "planner/web/static/app.js",
        "planner/web/static/draw.js",
        "planner/web/static/style.css",
    ):
        assert required in names, required


def test_installed_wheel_solves_validates_and_estimates_from_any_folder(installed, tmp_path):
    env_dir, _ = installed
    scenario = tmp_path / "chat.yaml"
    scenario.write_text((ROOT / "scenarios" / "chat-assistant.yaml").read_text())
    report = tmp_path / "plan.html"
    solved = _run(
        env_dir, tmp_path, "solve", str(scenario), "--format", "json", "--report", str(report)
    )
    assert solved.returncode == 0, solved.stderr
    assert json.loads(solved.stdout)["feasible"] is True
    assert "function drawFleet" in report.read_text()  # the page's drawing, from the wheel
    listed = _run(env_dir, tmp_path, "instances", "list", "--cloud", "aws", "--format", "json")
    assert listed.returncode == 0 and json.loads(listed.stdout), listed.stderr
    est = _run(env_dir, tmp_path, "estimate", "--model", "flux1-dev", "--gpu", "h100-sxm")
    assert est.returncode == 0, est.stderr
    val = _run(env_dir, tmp_path, "validate", "--format", "json")
    assert val.returncode == 0, val.stderr
    assert len(json.loads(val.stdout)["rows"]) > 500
    where = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c", "import planner; print(planner.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    ).stdout
    assert str(ROOT) not in where  # the installed copy ran, not the checkout


def test_python_m_planner_cli_lists_every_command():
    out = subprocess.run(
        [sys.executable, "-m", "planner.cli", "--help"], capture_output=True, text=True
    ).stdout
    for cmd in [*COMMANDS, "calibrate"]:
        assert f"  {cmd} " in out, cmd
    sub = subprocess.run(
        [sys.executable, "-m", "planner", "solve", "--help"], capture_output=True, text=True
    )
    assert sub.returncode == 0 and "SCENARIO_FILE" in sub.stdout
