"""The leaderboard's "detectable drop at 80% power" against the exact McNemar power, on 30 random (n, discordance,
comparisons) settings: before (main at 2082b24, a normal approximation with variance n·d under the alternative)
and after (``mara_bench.leaderboards.stats.minimum_detectable_drop``, bisection on the exact power), with statsmodels'
``normal_power_het`` (McNemar's variances: d + Δ under the null, d + Δ − Δ² under the alternative) beside, and a
simulation through the project's own ``mcnemar_drop`` at n 500, discordance 6%, 6 comparisons.

statsmodels is not a project dependency: install it apart (``pip install --target /tmp/sm statsmodels patsy``).
Run from the repository root: PYTHONPATH=.:/tmp/sm python docs/experiments/fidelity/mcnemar_power_agreement.py
"""

import math
import subprocess

import numpy as np
from scipy.stats import norm
from statsmodels.stats.power import normal_power_het

from mara_bench.leaderboards.stats import mcnemar_drop, mcnemar_power, minimum_detectable_drop

BEFORE = "2082b24"
old: dict = {}
exec(subprocess.check_output(["git", "show", f"{BEFORE}:leaderboards/stats.py"], text=True), old)  # noqa: S102


def statsmodels_drop(n: int, d: float, level: float) -> float:
    """The drop normal_power_het gives 80% power with McNemar's variances (bisection)."""

    def power(drop: float) -> float:
        null, alternative = math.sqrt(d + drop), math.sqrt(d + drop - drop * drop)
        return normal_power_het(
            drop, n, level, std_null=null, std_alternative=alternative, alternative="larger"
        )

    low, high = 1e-9, 1.0 - d
    while high - low > 1e-7:
        middle = (low + high) / 2
        low, high = (low, middle) if power(middle) >= 0.8 else (middle, high)
    return high


rng = np.random.default_rng(2035)
rows = []
for _ in range(30):
    n, d, m = int(rng.integers(100, 2000)), float(rng.uniform(0.02, 0.2)), int(rng.integers(1, 21))
    level = 0.05 / m
    before = old["minimum_detectable_drop"](n, d, 0.05, comparisons=m)
    after = minimum_detectable_drop(n, d, 0.05, comparisons=m)
    rows.append(
        (
            before,
            mcnemar_power(n, d, before, level),
            after,
            mcnemar_power(n, d, after, level),
            statsmodels_drop(n, d, level),
        )
    )
rows_array = np.array(rows)
for label, drop, power in (("before", 0, 1), ("after", 2, 3)):
    smaller = 1 - rows_array[:, drop] / rows_array[:, 2]
    print(
        f"{label}: exact power >= 0.8 on {int(np.sum(rows_array[:, power] >= 0.8))}/30 (power {rows_array[:, power].min():.3f}"
        f"-{rows_array[:, power].max():.3f}); drop smaller than the exact method's by {100 * smaller.min():.1f}-"
        f"{100 * smaller.max():.1f}%"
    )
ratio = 1 - rows_array[:, 4] / rows_array[:, 2]
print(
    f"statsmodels normal_power_het (McNemar's variances): drop smaller than the exact method's by "
    f"{100 * ratio.min():.1f} to {100 * ratio.max():.1f}%"
)

n, d, m, trials = 500, 0.06, 6, 2000
sim = np.random.default_rng(7)
for label, drop in (
    ("before", old["minimum_detectable_drop"](n, d, 0.05, m)),
    ("after", minimum_detectable_drop(n, d, 0.05, m)),
):
    caught = 0
    for _ in range(trials):
        pairs = sim.choice(3, size=n, p=[d / 2 + drop, d / 2, 1 - d - drop])  # lost, gained, concordant
        baseline = (pairs == 0).astype(float)
        candidate = (pairs == 1).astype(float)
        caught += mcnemar_drop(baseline, candidate).p_value < 0.05 / m
    print(
        f"n {n}, d {d}, m {m}, {label}: drop {100 * drop:.2f} points, exact power {mcnemar_power(n, d, drop, 0.05 / m):.3f},"
        f" simulated through mcnemar_drop {caught / trials:.3f} ({trials} runs)"
    )
print(
    "docstring powers (5 points, n 500, m 6):",
    {dd: round(mcnemar_power(500, dd, 0.05, 0.05 / 6), 3) for dd in (0.03, 0.045, 0.06, 0.08, 0.1)},
)
print(
    "normal approximation the docstring used:",
    {
        dd: round(
            float(norm.cdf((25 - norm.ppf(1 - 0.05 / 6) * math.sqrt(500 * dd + 25)) / math.sqrt(500 * dd))), 3
        )
        for dd in (0.03, 0.06, 0.08)
    },
)
