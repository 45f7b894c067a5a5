"""The Python API a notebook calls gives the very numbers the CLI prints; the README's
example runs as written."""

import json
import re
from pathlib import Path

from click.testing import CliRunner

import estimator
import planner
from planner.cli import main

ROOT = Path(__file__).resolve().parent.parent
CHAT = str(ROOT / "scenarios" / "chat-assistant.yaml")


def cli_json(*args: str):
    res = CliRunner().invoke(main, [*args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def roundtrip(d):
    return json.loads(json.dumps(d, default=float))


def test_readme_python_example_runs(monkeypatch):
    text = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["result"].feasible
    assert len(scope["frame"]) >= 1


def test_solve_compare_sweep_equal_the_cli_json():
    sc = planner.load_scenario(CHAT)
    assert roundtrip(planner.solve(sc).to_dict()) == cli_json("solve", CHAT)
    assert roundtrip(planner.compare(sc, by="vendor").to_dict()) == cli_json("compare", CHAT)
    sets = {"workloads.chat.users": [1000, 2000]}
    assert roundtrip(planner.sweep(CHAT, sets).to_dict()) == cli_json(
        "sweep", CHAT, "--set", "workloads.chat.users=1000,2000"
    )


def test_result_frame_is_the_ranked_csv(tmp_path):
    res = planner.solve(CHAT)
    out = tmp_path / "plans.csv"
    CliRunner().invoke(main, ["solve", CHAT, "--out", str(out)])
    import pandas as pd

    csv = pd.read_csv(out)
    frame = res.to_frame()
    assert list(frame.columns) == list(csv.columns)
    assert len(frame) == len(csv)
    assert frame["plan_cost_usd"].tolist() == csv["plan_cost_usd"].tolist()


def test_estimate_and_curve_equal_the_cli_json():
    e = estimator.estimate("llama-3.1-70b", "h100-sxm", 2, weights="fp8", batch=8)
    assert roundtrip(e.to_dict()) == cli_json(
        "estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "2",
        "--weights", "fp8", "--batch", "8",
    )  # fmt: skip
    f = estimator.estimate("flux1-dev", "h100-sxm", family={"steps": 20})
    assert roundtrip(f.to_dict()) == cli_json(
        "estimate", "--model", "flux1-dev", "--gpu", "h100-sxm", "--steps", "20"
    )
    c = estimator.curve("llama-3.1-8b", "l4", users_max=16)
    assert roundtrip(c.to_dict()) == cli_json(
        "curve", "--model", "llama-3.1-8b", "--gpu", "l4", "--users-max", "16"
    )


def test_vlm_image_encoder_is_timed_alike_by_estimate_and_the_planner(tmp_path):
    """One implementation: a 1024x1024 image through qwen2.5-vl-7b's encoder on an H100
    takes the same time in `estimate` and in the planner's prefill (16-bit vision tower)."""
    from planner.capacity import steps_for

    e = estimator.estimate("qwen2.5-vl-7b", "h100-sxm", weights="fp8", input_tokens=200)
    enc = e.vision["vision_encoder_s"]
    sc = tmp_path / "vlm.yaml"
    sc.write_text(
        "workloads:\n- name: v\n  model: qwen2.5-vl-7b\n  weights: fp8\n  users: 10\n"
        "  hours_per_person: 8\n  utilisation: 0.5\n  input_tokens: 200\n"
        "  output_tokens: 100\n  images_per_request: 1\nfleet:\n  gpus: [h100-sxm]\n"
    )
    space = planner.options.SearchSpace(planner.load_scenario(sc))
    ev = next(o.ev for o in space.options if o.cand.gpus == 1)
    st = steps_for(ev, space.sc.workloads[0])
    alone = estimator.Evaluator(ev.model, ev.gpu, ev.par, "fp8").prefill(1, st.input_tokens)
    assert abs((st.s_alone - float(alone.total)) - enc) < 1e-12
    assert 0.010 < enc < 0.025  # bf16 math: ~15.5 ms (FP8 math would be ~9 ms)
