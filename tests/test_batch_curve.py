"""`planner curve` on the families served in batches (diffusion, speech, encoders, VLA...):
their time and throughput against the batch, each point the estimate at that batch."""

import json

import pytest
from click.testing import CliRunner

import estimator
from estimator.batch_curves import MAX_BATCH, batch_ladder
from planner.cli import main


def _cli(*args: str):
    return CliRunner().invoke(main, ["curve", *args])


def test_the_ladder_doubles_up_to_the_largest_batch_that_fits():
    assert batch_ladder(18) == [1, 2, 4, 8, 16, 18]
    assert batch_ladder(16) == [1, 2, 4, 8, 16]
    assert batch_ladder(1) == [1] and batch_ladder(0) == [1]
    assert batch_ladder(10**6)[-1] == MAX_BATCH


def test_each_point_is_the_estimate_at_its_batch():
    """The curve reads the very estimate `planner estimate --batch B` prints."""
    c = estimator.batch_curve("flux1-dev", "h100-sxm", family={"steps": 20})
    assert c.rate_key == "images_per_s" and c.latency_key == "s_per_batch"
    assert [p["batch"] for p in c.points] == batch_ladder(c.max_batch)
    for p in c.points:
        e = estimator.estimate("flux1-dev", "h100-sxm", batch=p["batch"], family={"steps": 20})
        assert p["metrics"]["images_per_s"] == e.metrics["images_per_s"]
        assert p["bands"]["images_per_s"] == e.bands["images_per_s"]
        assert p["fits"]


def test_the_cli_curve_of_a_speech_model():
    """Whisper on an L4 batches its windows: the stream rate at the largest batch that
    fits is well above batch 1's (the decoder streams its weights once per step)."""
    r = _cli("--model", "whisper-large-v3", "--gpu", "l4", "--format", "json")
    assert r.exit_code == 0, r.output
    c = json.loads(r.output)
    assert c["rate_key"] == "audio_s_per_s"
    first, last = c["points"][0]["metrics"], c["points"][-1]["metrics"]
    assert last["audio_s_per_s"] > 3 * first["audio_s_per_s"]
    table = _cli("--model", "whisper-large-v3", "--gpu", "l4")
    assert "audio_s_per_s p10-p90" in table.output and "batching from 1 to" in table.output


@pytest.mark.parametrize(
    "args,says",
    [
        (["--model", "flux1-dev", "--gpu", "h100-sxm", "--users", "4"], "--users applies"),
        (["--model", "flux1-dev", "--gpu", "h100-sxm", "--ttft-s", "1"], "--ttft-s applies"),
        (["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--steps", "4"], "--steps is an"),
        (["--model", "flux1-dev", "--gpu", "rtx-4090"], "does not fit"),
    ],
)
def test_options_of_the_other_kind_of_curve_are_named(args, says):
    r = _cli(*args)
    assert r.exit_code == 2
    assert says in r.output and "Traceback" not in r.output


def test_a_language_models_curve_is_unchanged():
    r = _cli("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--format", "json")
    assert r.exit_code == 0, r.output
    assert "knee_users" in json.loads(r.output)
