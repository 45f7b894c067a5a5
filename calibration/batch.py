"""All the fit's cases as arrays, predicting every row's metric under any parameters at once
with the harness formulas (``estimator.harness``) on their decomposed steps. Every closed loop
is read as the synchronised harness here, those scored with spread arrivals too
(``Case.arrivals``): the spread load model is a fixed point per row, too slow for a fit's
thousands of evaluations, and its light-load limit in their place (a prompt's own prefill)
cross-validated worse (throughput 12.0 -> 13.1%)."""

from __future__ import annotations

import numpy as np

from estimator.harness import lockstep, saturated_tokens_per_s

from .cases import Case, Parts
from .params import Params, request_key


class Batch:
    """All cases as arrays, for fast prediction under any parameters."""

    def __init__(self, cases: list[Case]):
        self.cases = cases
        self.dec = Parts.stack([c.dec for c in cases])
        self.pre = Parts.stack([c.pre for c in cases])
        self.b = np.array([c.batch for c in cases])
        self.clients = np.array([c.clients for c in cases])
        self.osl = np.array([c.osl for c in cases], float)
        self.isl = np.array([c.isl for c in cases], float)
        self.rep = np.array([c.replicas for c in cases], float)
        self.ngpu = np.array([c.n_gpus for c in cases], float)
        self.pp = np.array([c.ev.pp for c in cases], float)
        self.measured = np.array([c.measured for c in cases])
        self.family = np.array([c.family for c in cases])
        self.kind = np.array([c.kind for c in cases])
        self.metric = np.array([c.metric for c in cases])
        self.engine = [c.ev.engine.name for c in cases]
        self.server = [request_key(c) for c in cases]
        pairs = [(c.family, c.precision) for c in cases]
        self.pairs = sorted(set(pairs))
        self.pair_of = np.array([self.pairs.index(q) for q in pairs], int)

    def predict(self, p: Params) -> np.ndarray:
        me = np.array([p.eff(f)[0] for f in self.family])
        ce = np.array([p.compute(f, q) for f, q in self.pairs])[self.pair_of]
        host = np.array([p.host(e) for e in self.engine]).reshape(-1, 2)
        k = (
            p.collective_base_us * 1e-6,
            p.layer_overhead_us * 1e-6,
            host[:, 0] * 1e-3,
            host[:, 1] * 1e-6,
        )
        t_dec = self.dec.time(me, ce, *k, p.int4_stream)
        # a prompt's marginal prefill: one PP stage's share (prompts pipeline through the
        # stages, as `estimator.steps.prepare_steps` has it)
        s = (self.pre.all_compute / ce + self.pre.comm + self.pre.collectives * k[0]) / self.pp
        s_alone = self.pre.time(me, ce, *k, p.int4_stream)
        out = np.empty(len(self.cases))
        for i in range(len(self.cases)):
            osl = int(self.osl[i])
            if self.kind[i] == "offline":
                tok = self.rep[i] * saturated_tokens_per_s(t_dec[i], s[i], self.b[i], osl)
                tpot = ttft = float("nan")
            else:
                lt = lockstep(
                    t_dec[i],
                    s[i],
                    s_alone[i],
                    self.clients[i],
                    osl,
                    self.b[i],
                    request_s=p.request(self.server[i]) * 1e-3,
                )
                tok = self.rep[i] * float(lt.output_tokens_per_s)
                tpot, ttft = float(lt.tpot_s), float(lt.ttft_mean_s)
            m = self.metric[i]
            out[i] = {
                "output_tok_s_total": tok,
                "output_tok_s_per_gpu": tok / self.ngpu[i],
                "throughput_tok_s_total": tok * (self.isl[i] + osl) / osl,
                "ttft_ms": ttft * 1e3,
                "itl_ms": tpot * 1e3,
                "tpot_ms": tpot * 1e3,
                "tok_s_per_user": 1.0 / tpot if tpot == tpot else float("nan"),
            }[m]
        return out
