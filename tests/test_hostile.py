"""Hostile and careless input: each is a clear error (exit 2) or a correct result, never a
traceback; files are written safely."""

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from estimator.files import csv_safe
from planner.cli import main
from planner.errors import ScenarioError
from planner.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent
CHAT = (ROOT / "scenarios" / "chat-assistant.yaml").read_text()


def _load(tmp_path, text: str | bytes):
    p = tmp_path / "s.yaml"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return load_scenario(p)


@pytest.mark.parametrize(
    "change, message",
    [
        (("users: 2000", "users: yes"), "valid number"),
        (("users: 2000", "users: '2000'"), "valid number"),
        (("users: 2000", "users: .inf"), "finite number"),
        (("users: 2000", "users: .nan"), "finite number"),
        (("users: 2000", "users: 1e12"), "less than or equal to 1000000000"),
        (("name: chat", "name: chat\n    name: again"), "repeats the one at line"),
    ],
)
def test_bad_values_are_named_with_file_line_and_key(tmp_path, change, message):
    text = CHAT.replace(*change)
    assert text != CHAT
    with pytest.raises(ScenarioError) as e:
        _load(tmp_path, text)
    assert message in str(e.value) and "s.yaml:" in str(e.value)


def test_encodings(tmp_path):
    assert _load(tmp_path, CHAT.encode("utf-16")).workloads[0].name
    assert _load(tmp_path, b"\xef\xbb\xbf" + CHAT.encode()).workloads[0].name
    with pytest.raises(ScenarioError, match="not UTF-8 text .*save the file as UTF-8"):
        _load(tmp_path, CHAT.replace("Internal", "Intérnal").encode("latin-1"))


def test_size_depth_and_error_count_are_bounded(tmp_path):
    with pytest.raises(ScenarioError, match="nested more than"):
        _load(tmp_path, "a: " + "[" * 1000 + "]" * 1000)
    with pytest.raises(ScenarioError, match="at most 1,000,000 bytes"):
        _load(tmp_path, "#" * 1_000_001)
    many = CHAT + "".join(f"junk{i}: 1\n" for i in range(40_000))
    with pytest.raises(ScenarioError) as e:
        _load(tmp_path, many[:999_000])
    assert "more" in str(e.value) and str(e.value).count("\n") <= 22


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ScenarioError, match="not a regular file"):
        load_scenario(fifo)


@pytest.mark.parametrize(
    "args",
    [
        ["curve", "--model", "llama-3.1-8b", "--gpu", "l4", "--think-time", "nan"],
        ["curve", "--model", "llama-3.1-8b", "--gpu", "l4", "--ttft-s", "inf"],
        ["estimate", "--model", "llama-3.1-8b", "--gpu", "l4", "--batch", "9999999"],
        ["estimate", "--model", "llama-3.1-8b", "--gpu", "l4", "--gpus", "100000"],
        ["solve", "scenarios/chat-assistant.yaml", "--top", "1000"],
    ],
)
def test_cli_refuses_unbounded_or_non_finite_numbers(args, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2 and r.exception is None or isinstance(r.exception, SystemExit)
    assert r.exit_code == 2


def test_csv_cells_never_run_as_formulas():
    for evil in ("=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "x\r=1+1", "x\n@cmd", "＝1"):
        out = io.StringIO()
        csv.writer(out).writerow([csv_safe(evil)])
        for line in csv_safe(evil).split("\n"):
            assert not line.startswith(("=", "+", "-", "@", "\t", "＝")), evil


def test_validate_csv_is_escaped(monkeypatch):
    r = CliRunner().invoke(main, ["validate", "--format", "csv"])
    assert r.exit_code == 0
    for row in csv.reader(io.StringIO(r.output)):
        for cell in row:
            assert not cell.startswith(("=", "+", "@")), cell


def test_outputs_never_overwrite_inputs_follow_links_and_honour_the_umask(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text(CHAT)
    r = CliRunner().invoke(main, ["solve", str(sc), "--out", str(sc)])
    assert r.exit_code == 2 and "input of this command" in r.output
    assert sc.read_text() == CHAT
    real, link = tmp_path / "real.csv", tmp_path / "link.csv"
    real.write_text("old")
    link.symlink_to(real)
    old = os.umask(0o022)
    try:
        assert CliRunner().invoke(main, ["solve", str(sc), "--out", str(link)]).exit_code == 0
        fresh = tmp_path / "fresh.csv"
        assert CliRunner().invoke(main, ["solve", str(sc), "--out", str(fresh)]).exit_code == 0
    finally:
        os.umask(old)
    assert link.is_symlink() and real.read_text().startswith("rank,")
    assert oct(fresh.stat().st_mode & 0o777) == oct(0o644)


def test_a_closed_pipe_is_not_an_error():
    p = subprocess.run(
        f"{sys.executable} -m planner models list | head -1",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert "Traceback" not in p.stderr and p.returncode == 0
    reader = (
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-m', 'planner', 'models', 'list'],"
        " stdout=subprocess.PIPE)\n"
        "p.stdout.read(10); p.stdout.close(); sys.exit(p.wait())"
    )
    q = subprocess.run([sys.executable, "-c", reader], cwd=ROOT, capture_output=True, text=True)
    assert q.returncode == 0, q.stderr


def test_negative_prices_in_user_presets_are_refused(tmp_path):
    import yaml

    from estimator.catalog import gpu_catalog

    g = gpu_catalog().items["l4"].model_dump()
    g.update(name="cheap-l4", aliases=[], price_usd=-100.0)
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "mine.yaml").write_text(yaml.safe_dump([g]))
    r = CliRunner().invoke(main, ["--presets", str(tmp_path), "gpus", "show", "cheap-l4"])
    assert r.exit_code == 2 and "price_usd" in r.output


def test_a_huge_but_valid_demand_is_planned_with_a_warning(tmp_path):
    from planner import solve

    text = CHAT.replace("users: 2000", "users: 900000000")
    res = solve(_load(tmp_path, text), top=1)
    assert any("unusually large" in n for n in res.notes)


@pytest.mark.parametrize("split", [[], ["--disaggregate", "1:2"]])
def test_one_output_token_has_a_finite_per_user_speed(split):
    """A request of one output token has no time between tokens: its curve (aggregated or
    disaggregated) reads the decode step's time, as the load model does, in valid JSON (the
    fuzzer found a division by zero in the bands and an infinite speed in disaggregation)."""
    import json

    args = ["curve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--input-tokens", "16"]
    r = CliRunner().invoke(main, [*args, "--output-tokens", "1", *split, "--format", "json"])
    assert r.exit_code == 0, r.output

    def refuse(name):  # Infinity / NaN are not JSON
        raise ValueError(name)

    out = json.loads(r.output, parse_constant=refuse)
    speed = out["operating_point"]["per_user_tokens_per_s"]
    assert 0 < speed < 1e6
