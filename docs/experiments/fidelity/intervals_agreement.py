"""The leaderboard's intervals against the standard ones, before (main at 2082b24) and after, on generated data:

* the paired 95% CI of McNemar comparisons against the textbook Wald interval for paired proportions (Agresti,
  Categorical Data Analysis, 3rd ed., 11.1.1) computed from the discordant counts, on 30 random paired 0/1 runs;
* the 95% CI of a mean score over 4 epochs against Inspect's own ``ci(cluster=...)`` over the epoch-level scores
  clustered by sample, on 30 random suites (before: ``value ± 1.96 · stderr`` over the per-sample means).

Run from the repository root: PYTHONPATH=. python docs/experiments/fidelity/intervals_agreement.py
"""

import math
import subprocess

import numpy as np
from inspect_ai.scorer import SampleScore, Score, ci
from scipy.stats import norm

from mara_bench.leaderboards.stats import mcnemar_drop, sample_mean_interval

BEFORE = "2082b24"
old: dict = {}
exec(subprocess.check_output(["git", "show", f"{BEFORE}:leaderboards/stats.py"], text=True), old)  # noqa: S102

rng = np.random.default_rng(3535)
paired = {"before": 0, "after": 0}
for _ in range(30):
    n = int(rng.integers(2, 600))
    baseline = (rng.random(n) < 0.6).astype(float)
    candidate = np.where(rng.random(n) < 0.1, 1 - baseline, baseline)
    lost = int(np.sum((baseline == 1) & (candidate == 0)))
    gained = int(np.sum((baseline == 0) & (candidate == 1)))
    delta = (gained - lost) / n
    half = norm.ppf(0.975) * math.sqrt((lost + gained) / n - delta**2) / math.sqrt(n)
    textbook = (delta - half, delta + half)
    for label, test in (("before", old["mcnemar_drop"]), ("after", mcnemar_drop)):
        result = test(baseline, candidate)
        paired[label] += bool(np.allclose((result.ci_low, result.ci_high), textbook, atol=1e-12))
print(
    f"paired CI = textbook Wald for paired proportions: before {paired['before']}/30, after {paired['after']}/30"
)

clustered = {"before": 0, "after": 0}
for _ in range(30):
    solve = rng.beta(0.3, 0.3, size=int(rng.integers(10, 400)))
    per_epoch = (rng.random((solve.size, 4)) < solve[:, None]).astype(float)
    scores = [
        SampleScore(score=Score(value=float(v)), sample_id=i, sample_metadata={"sample": i})
        for i, row in enumerate(per_epoch)
        for v in row
    ]
    reference = ci(cluster="sample")(scores)
    means = per_epoch.mean(axis=1)
    stderr = float(means.std(ddof=1)) / math.sqrt(means.size)
    before = (means.mean() - 1.959963984540054 * stderr, means.mean() + 1.959963984540054 * stderr)
    for label, interval in (("before", before), ("after", sample_mean_interval(list(means)))):
        clustered[label] += bool(np.allclose(interval, (reference["lower"], reference["upper"]), atol=1e-12))
print(
    f"mean CI over 4 epochs = Inspect's ci(cluster=sample): before {clustered['before']}/30, "
    f"after {clustered['after']}/30"
)
