"""`planner fit` on the families served in batches: for each GPU type the fewest GPUs of a
TP replica that hold the model at batch 1, cheapest first, each figure `estimate`'s."""

import json

import pytest
from click.testing import CliRunner

import estimator
from planner.cli import main
from planner.family_fit import family_fit
from planner.web.api import run_command


def test_each_fit_is_the_smallest_replica_that_holds_it_cheapest_first():
    r = family_fit("flux1-dev", family={"steps": 20}, gpus=["h100-sxm", "l40s", "rtx-4090"])
    assert r.rate_key == "images_per_s" and r.family == "diffusion_image"
    fits = [f for f in r.by_gpu if f.fits]
    assert [f.gpu for f in fits] == ["l40s", "h100-sxm"]  # $0.86/h before $2.99/h
    for f in fits:
        e = estimator.estimate("flux1-dev", f.gpu, f.gpus, tp=f.gpus, family={"steps": 20})
        assert e.fits and f.max_batch == e.max_batch
        assert f.s_per_batch == e.metrics["s_per_batch"]
        top = estimator.estimate(
            "flux1-dev", f.gpu, f.gpus, tp=f.gpus, batch=f.max_batch, family={"steps": 20}
        )
        assert f.rate == top.metrics["images_per_s"]
    miss = next(f for f in r.by_gpu if f.gpu == "rtx-4090")
    assert not miss.fits and "needs 37.3 GB per GPU at batch 1 on TP1" in miss.why_not
    assert r.by_gpu[-1] is miss  # no fit last


def test_the_cli_and_the_api_give_the_same_fit():
    args = ["fit", "--model", "whisper-large-v3", "--gpu", "t4,l4", "--format", "json"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    cli = json.loads(r.output)
    assert cli["rate_key"] == "audio_s_per_s"
    api = run_command("fit", [("model", "whisper-large-v3"), ("gpu", "t4,l4")]).to_dict()
    assert api == cli
    table = CliRunner().invoke(main, ["fit", "--model", "whisper-large-v3", "--gpu", "t4"])
    assert "minimum GPU: 1x t4 (TP1)" in table.output


@pytest.mark.parametrize(
    "args,says",
    [
        (["--model", "flux1-dev", "--users", "4"], "--users applies to language models"),
        (["--model", "flux1-dev", "--kv", "fp8"], "--kv applies to language models"),
        (["--model", "llama-3.1-8b", "--steps", "4"], "--steps is an option"),
    ],
)
def test_options_of_the_other_kind_of_fit_are_named(args, says):
    r = CliRunner().invoke(main, ["fit", *args])
    assert r.exit_code == 2 and says in r.output and "Traceback" not in r.output


def test_no_gpu_holds_it_exits_1():
    r = CliRunner().invoke(main, ["fit", "--model", "flux1-dev", "--gpu", "t4,rtx-4090"])
    assert r.exit_code == 1
    assert "no GPU type holds it" in r.output
