"""How far the published TTFT rows can be predicted at all from what they publish: the
cross-validated estimator's TTFT residuals (log measured / predicted, leave-one-source-out)
handed to two flexible learners that see every input a row states (lengths, clients or
rate, split, size, formats, GPU family, engine, harness arrival pattern):

- ridge regressions over those inputs and all their pairwise products, at four strengths;
- nearest neighbours (the 7 rows closest in the same inputs, standardised).

Each learner corrects the estimator's prediction twice: leaving each publisher out (the
done-when's criterion: a publisher's rows corrected by what the others teach), and in five
random folds that also tell it the publisher (an easier test: the publisher's other runs
are in the training folds). If neither correction reaches a median error far below the
estimator's, what the TTFT rows still miss is not in their published inputs: no function
of them, physical or not, removes it. Not a speed benchmark: evidence, run by hand.

Run: python benchmarks/ttft_learnability.py
"""

from __future__ import annotations

import functools

import numpy as np

from calibration import shipped_dir
from calibration.report import run

FOLDS, SEED, NEIGHBOURS = 5, 0, 7
# ridge strengths tried; each is reported, so the best is the learner's most generous reading
RIDGES = (1.0, 10.0, 100.0, 1000.0)


def _features(cases) -> tuple[np.ndarray, list[str]]:
    """A row per case: numeric inputs (logs of the sizes) and one-hot categories."""
    num = np.array(
        [
            [
                np.log(c.isl),
                np.log(c.osl),
                np.log(max(c.clients, 1.0)),
                np.log1p(c.rate),
                np.log(c.ev.tp),
                np.log(c.ev.model.total_params / 1e9),
                np.log(c.ev.model.active_params / 1e9),
            ]
            for c in cases
        ]
    )
    cats = {
        "family": [c.family for c in cases],
        "precision": [c.precision for c in cases],
        "engine": [c.ev.engine.name for c in cases],
        "pattern": [c.kind if c.kind == "open" else c.arrivals for c in cases],
        "moe": [str(c.ev.model.is_moe) for c in cases],
    }
    cols = [num]
    for values in cats.values():
        levels = sorted(set(values))
        cols.append(np.array([[v == lv for lv in levels] for v in values], float))
    x = np.hstack(cols)
    publishers = [c.source_key for c in cases]
    return x, publishers


def _standardise(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu, sd = train.mean(0), train.std(0)
    sd[sd == 0] = 1.0
    return (train - mu) / sd, (test - mu) / sd


def _pairwise(x: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(x.shape[1])
    return np.hstack([x, x[:, i] * x[:, j]])


def ridge(xtr, ytr, xte, strength: float) -> np.ndarray:
    a, b = _standardise(xtr, xte)
    a, b = _pairwise(a), _pairwise(b)
    a1 = np.hstack([np.ones((len(a), 1)), a])
    b1 = np.hstack([np.ones((len(b), 1)), b])
    reg = strength * np.eye(a1.shape[1])
    reg[0, 0] = 0.0  # the intercept is not shrunk
    w = np.linalg.solve(a1.T @ a1 + reg, a1.T @ ytr)
    return b1 @ w


def neighbours(xtr, ytr, xte) -> np.ndarray:
    a, b = _standardise(xtr, xte)
    d = ((b[:, None, :] - a[None, :, :]) ** 2).sum(-1)
    near = np.argsort(d, axis=1)[:, :NEIGHBOURS]
    return np.median(ytr[near], axis=1)


def _score(measured, predicted) -> str:
    e = np.abs(predicted / measured - 1) * 100
    return f"median {np.median(e):5.1f}%  p90 {np.percentile(e, 90):6.1f}%"


GROUPS = {
    "TTFT": ("ttft_ms",),
    "time per token": ("itl_ms", "tpot_ms", "tok_s_per_user"),
    "throughput": ("output_tok_s_total", "output_tok_s_per_gpu", "throughput_tok_s_total"),
}


def learnability(rep, metrics: tuple[str, ...]) -> None:
    keep = [
        i
        for i, c in enumerate(rep.cases)
        if c.metric in metrics and np.isfinite(rep.cv_predicted[i]) and rep.cv_predicted[i] > 0
    ]
    cases = [rep.cases[i] for i in keep]
    pred = rep.cv_predicted[keep]
    meas = np.array([c.measured for c in cases])
    y = np.log(meas / pred)
    x, pubs = _features(cases)
    pubs = np.array(pubs)
    print(f"{len(cases)} rows from {len(set(pubs))} publishers")
    print(f"  the estimator alone, leave-one-source-out:      {_score(meas, pred)}")
    onehot = np.array([[p == q for q in sorted(set(pubs))] for p in pubs], float)
    fold = np.random.default_rng(SEED).permutation(len(cases)) % FOLDS
    xs = np.hstack([x, onehot])  # the inputs with the publisher told
    learners = [(f"ridge {s:g}, pairwise", functools.partial(ridge, strength=s)) for s in RIDGES]
    learners.append((f"{NEIGHBOURS} nearest rows", neighbours))
    for name, learner in learners:
        loso = np.empty(len(cases))
        for p in set(pubs):
            te = pubs == p
            loso[te] = learner(x[~te], y[~te], x[te])
        print(f"  + {name:20s} leave-one-source-out:      {_score(meas, pred * np.exp(loso))}")
        folds = np.empty(len(cases))
        for k in range(FOLDS):
            te = fold == k
            folds[te] = learner(xs[~te], y[~te], xs[te])
        print(f"  + {name:20s} 5 folds, publisher known: {_score(meas, pred * np.exp(folds))}")


def main() -> None:
    rep = run(sorted(shipped_dir().glob("llm_measured_*.csv")), cross_validation=True)
    for name, metrics in GROUPS.items():
        print(f"{name}: ", end="")
        learnability(rep, metrics)


if __name__ == "__main__":
    main()
