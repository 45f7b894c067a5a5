"""Tensor-parallel all-reduce over PCIe at the bus bandwidth NCCL measures (calibration/
collectives.py): the shares, hand-checked from the shipped rows, and how the ring uses them."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from calibration import collectives as cl
from estimator import Evaluator, Parallel, comm, get_gpu, get_model
from estimator.efficiency import calibration, efficiency_for, link_defaults


def test_pcie_shares_are_the_median_system_over_the_x16_rate():
    rows = cl.load()
    pcie = [r for r in rows if comm.link_of(get_gpu(r["gpu"]))[0] == "pcie"]
    # every source: AIConfigurator's measured L40S and RTX PRO 6000 servers and the published
    # nccl-tests runs on RTX PRO 6000 servers at NCCL's defaults
    assert {r["system"] for r in pcie} >= {"l40s", "rtx_pro_6000_server", "voipmonitor_festr_turin"}
    # 8 GPUs, one vote per system: 24.68/64, 1.45/32, 40.1/64, 22.2/64 -> median 0.366
    eight = {
        r["system"]: r["busbw_gb_s"] / get_gpu(r["gpu"]).pcie_gb_s for r in pcie if r["n_gpus"] == 8
    }
    assert len(eight) == 4
    want = statistics.median([24.68 / 64, 1.45 / 32, 40.1 / 64, 22.2 / 64])
    assert cl.bus_shares()["pcie"][8] == pytest.approx(want, abs=1e-4)
    assert cl.bus_shares()["pcie"][2] == pytest.approx((38.62 / 64 + 20.11 / 32) / 2, abs=1e-4)


def test_only_pcie_is_priced_at_nccls_ring():
    """Over NVLink the engines run their own all-reduce kernels below a few MB, which NCCL's
    ring does not measure: those fabrics keep their datasheet rate (their rows stay for
    reference)."""
    assert set(cl.bus_shares()) == {"pcie"}
    assert any(comm.link_of(get_gpu(r["gpu"]))[0] == "nvlink4" for r in cl.load())
    assert link_defaults().ring_shares("nvlink4") == (1.0, 1.0, 1.0)


def test_the_shipped_calibration_holds_the_measured_shares():
    shipped = calibration()["links"]["allreduce_bus_share"]
    assert {k: {int(n): v for n, v in t.items()} for k, t in shipped.items()} == cl.bus_shares()


def test_a_pcie_ring_runs_at_its_group_sizes_share():
    """2(n-1)a + 2(n-1)/n M / (s B) + the fixed cost, s the share at that group size (3 GPUs
    take 4's, 5-7 take 8's), B the card's x16 rate: hand-computed for an RTX PRO 6000."""
    g = get_gpu("rtx-pro-6000")
    eff = efficiency_for("blackwell-gddr")
    fab = comm.Fabric.of(g, eff)
    s2, s4, s8 = link_defaults().ring_shares("pcie")
    assert s2 > s4 > s8  # wider PCIe rings cross the CPUs' links
    a = g.scale_up.latency_us * 1e-6 * eff.comm_latency_scale
    base, msg, b = eff.collective_base_us * 1e-6, 64e6, g.pcie_gb_s * 1e9
    for n, s in ((2, s2), (3, s4), (4, s4), (6, s8), (8, s8)):
        want = base + 2 * (n - 1) * a + 2 * (n - 1) / n * msg / (s * b)
        assert comm.allreduce(fab, n, msg) == pytest.approx(want, rel=1e-12), n


def test_stacked_fabrics_price_each_gpus_ring_as_alone():
    """Two PCIe cards (a Gen4 and a Gen5 x16 rate) and an NVLink part in one stack."""
    eff = efficiency_for("ada-gddr")
    fabs = [comm.Fabric.of(get_gpu(n), eff) for n in ("l40s", "rtx-pro-6000", "h100-sxm")]
    stacked = comm.Fabric.stack(fabs)
    msg = np.array([1e6, 3e7])
    got = comm.allreduce(stacked, 8, msg)
    for i, f in enumerate(fabs):
        assert got[i] == pytest.approx(comm.allreduce(f, 8, msg), rel=1e-12)


def test_pcie_tensor_parallel_prefill_is_slower_for_it():
    """At the datasheet rate an 8-GPU PCIe ring looked 2.7x faster than any measured default
    server; a long prompt's all-reduces are bandwidth-bound, so its comm time grows by 1/s."""
    ev = Evaluator(get_model("llama-3.1-70b"), get_gpu("l40s"), Parallel(tp=8), weights="fp8")
    pre = ev.prefill(1, 8000)
    s8 = link_defaults().ring_shares("pcie")[2]
    assert s8 < 0.5
    assert pre.comm > 0.3 * pre.total  # the ring is most of an 8-GPU PCIe prefill


def test_an_estimate_over_pcie_says_what_its_ring_is_priced_at():
    def notes(gpu, tp):
        return " ".join(Evaluator(get_model("llama-3.1-8b"), get_gpu(gpu), Parallel(tp=tp)).notes)

    s4 = link_defaults().ring_shares("pcie")[1]
    assert f"TP=4 over PCIe: its all-reduces run at {s4:.0%} of the x16 rate" in notes("l40s", 4)
    assert "over PCIe" not in notes("l40s", 2)  # two cards: one hop, no note
    assert "over PCIe" not in notes("h100-sxm", 4)


def test_a_preset_can_carry_its_own_servers_measured_busbw(tmp_path):
    """A user's nccl-tests busbw (in a --presets folder) prices that server's ring instead of
    the median; a group size it does not give keeps the median share."""
    import yaml

    base = get_gpu("l40s").model_dump()
    base.update(name="l40s-mybox", aliases=[], display_name="L40S in my box")
    base["scale_up"]["allreduce_bus_gb_s"] = {8: 24.0}
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "mine.yaml").write_text(yaml.safe_dump([base]))
    g = get_gpu("l40s-mybox", (str(tmp_path),))
    fab = comm.Fabric.of(g, efficiency_for("ada-gddr"))
    assert fab.ring(8) == pytest.approx(24.0 / 32)
    assert fab.ring(4) == link_defaults().ring_shares("pcie")[1]
    ev = Evaluator(get_model("llama-3.1-8b"), g, Parallel(tp=8))
    assert not any("over PCIe" in n for n in ev.notes)
    with pytest.raises(Exception, match="groups of 2, 4 and/or 8"):
        type(g.scale_up).model_validate({**base["scale_up"], "allreduce_bus_gb_s": {3: 10.0}})


def test_gpus_show_says_what_its_all_reduce_runs_at():
    import json

    from click.testing import CliRunner

    from planner.cli import main

    def share(gpu):
        out = CliRunner().invoke(main, ["gpus", "show", gpu, "--format", "json"]).output
        return json.loads(out)["efficiency"]["allreduce_share"]

    pcie = zip((2, 4, 8), link_defaults().ring_shares("pcie"), strict=True)
    assert share("l40s") == {str(n): pytest.approx(s, abs=1e-4) for n, s in pcie}
    assert share("h100-sxm") == {"2": 1.0, "4": 1.0, "8": 1.0}  # NVLink: its datasheet rate


def test_bridged_cards_join_their_pairs_over_the_hosts_pcie():
    """H100 NVL: NVLink-bridged pairs, eight cards a server. A TP4 all-reduce reduce-scatters
    inside each pair over the bridge, all-reduces half the data across the two pairs over
    the host's PCIe (x16 rate at the PCIe share for 2, 1 us a hop), and all-gathers inside:
    hand-computed. Past the server (TP16) the NIC carries it."""
    g = get_gpu("h100-nvl")
    eff = efficiency_for("hopper")
    fab = comm.Fabric.of(g, eff)
    assert (fab.domain, fab.host) == (2, 8)
    a_nv = g.scale_up.latency_us * 1e-6 * eff.comm_latency_scale
    a_pcie = comm.PCIE_HOP_US * 1e-6 * eff.comm_latency_scale
    base, msg = eff.collective_base_us * 1e-6, 32e6
    s2 = link_defaults().ring_shares("pcie")[0]
    pair = 2 * a_nv + msg / (g.scale_up.bandwidth_gb_s * 1e9)
    across = 2 * a_pcie + (msg / 2) / (g.pcie_gb_s * 1e9 * s2)
    assert comm.allreduce(fab, 4, msg) == pytest.approx(2 * base + pair + across, rel=1e-12)
    links = [comm.group_link(fab, n) for n in (2, 4, 8, 16)]
    assert links == ["nvlink4", "pcie", "pcie", "nic"]
    sxm = comm.Fabric.of(get_gpu("h100-sxm"), eff)  # a board's 8 share NVSwitch: no PCIe hop
    assert comm.group_link(sxm, 8) == "nvlink4" and sxm.host == sxm.domain


def test_a_plan_over_pcie_rings_says_what_they_are_priced_at(tmp_path):
    """The chat scenario on L40S alone runs Llama-3.1-70B at TP4 over PCIe: the plan carries
    the estimate's note; its recommendation on all its GPU types (MI300X boards) does not."""
    from pathlib import Path

    import yaml

    from planner.scenario import load_scenario
    from planner.solve import plan_scenario

    chat = Path(__file__).resolve().parents[1] / "scenarios" / "chat-assistant.yaml"
    res = plan_scenario(load_scenario(chat), top=1)
    assert not any("over PCIe" in n for n in res.notes)
    sc = yaml.safe_load(chat.read_text())
    sc["fleet"]["gpus"] = ["l40s"]
    (path := tmp_path / "l40s.yaml").write_text(yaml.safe_dump(sc))
    res = plan_scenario(load_scenario(path), top=1)
    assert res.feasible and max(a.tp for a in res.plan.assignments) > 2
    assert any(n.startswith("l40s: TP=") and "over PCIe" in n for n in res.notes), res.notes
