#!/usr/bin/env python3
"""rliable 1.2.0's own aggregate estimates on seeded score matrices, written as the JSON samples
tests/aggregates_rliable.rs compares gridarena's aggregates (src/aggregate/) against.

    python3 python/scripts/rliable_sample.py

The script creates (or reuses) its own virtualenv at python/scripts/.venv-rliable with pinned
versions, re-runs itself inside it and writes tests/data/rliable/*.json. Per case: each
algorithm's score matrix (runs x tasks); rliable's point estimates and 95% stratified bootstrap
intervals (percentile method) of the IQM, median, mean and optimality gap; score-distribution
performance profiles at fixed thresholds with their intervals; and the probability of
improvement of each pair of algorithms with its interval. The number of bootstrap samples is
recorded beside each interval.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(HERE, ".venv-rliable")
PINS = [
    "absl-py==2.5.1",
    "arch==7.2.0",
    "contourpy==1.3.3",
    "cycler==0.12.1",
    "fonttools==4.68.0",
    "formulaic==1.2.2",
    "interface_meta==2.0.1",
    "kiwisolver==1.5.1",
    "matplotlib==3.11.2",
    "narwhals==2.29.0",
    "numpy==2.4.6",
    "packaging==26.4",
    "pandas==2.3.3",  # arch 7.2 does not import under pandas 3
    "patsy==1.0.3",
    "pillow==13.0.0",
    "pyparsing==3.3.3",
    "python-dateutil==4.0.0",
    "rliable==1.2.0",
    "scipy==1.17.1",
    "seaborn==0.13.2",
    "statsmodels==0.15.0",
    "typing_extensions==4.16.0",
    "tzdata==2026.6",
    "wrapt==2.5.2",
]
OUT = os.path.join(HERE, "..", "..", "tests", "data", "rliable")
REPS = 20000
PROFILE_REPS = 4000


def ensure_venv():
    """Re-runs this script inside the pinned venv (created on first use)."""
    py = os.path.join(VENV, "bin", "python")
    if os.path.abspath(sys.prefix) == os.path.abspath(VENV):
        return
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
    subprocess.check_call([py, "-m", "pip", "install", "-q", *PINS])
    os.execv(py, [py, os.path.abspath(__file__), *sys.argv[1:]])


def cases(np):
    """(name, {algorithm: runs x tasks scores}) with seeded scores: normal scores, scores with
    ties (rounded), and algorithms with different numbers of runs."""
    rng = np.random.RandomState(7)
    yield "normal_5x3", {
        "A": rng.normal(0.6, 0.3, (5, 3)),
        "B": rng.normal(0.5, 0.2, (5, 3)),
        "C": rng.normal(0.9, 0.4, (5, 3)),
    }
    yield "ties_10x8", {
        "A": np.round(rng.uniform(0, 1.5, (10, 8)), 1),
        "B": np.round(rng.uniform(0.2, 1.2, (10, 8)), 1),
    }
    yield "uneven_runs", {
        "A": rng.normal(1.0, 0.5, (7, 4)),
        "B": rng.normal(0.8, 0.5, (4, 4)),
    }


def main():
    ensure_venv()
    import numpy as np
    from rliable import library as rly
    from rliable import metrics

    funcs = {
        "iqm": metrics.aggregate_iqm,
        "median": metrics.aggregate_median,
        "mean": metrics.aggregate_mean,
        "optimality_gap": metrics.aggregate_optimality_gap,
    }
    os.makedirs(OUT, exist_ok=True)
    for name, scores in cases(np):
        taus = list(np.linspace(-0.5, 2.0, 11))
        record = {
            "generated_by": "python/scripts/rliable_sample.py (rliable 1.2.0)",
            "reps": REPS,
            "profile_reps": PROFILE_REPS,
            "scores": {k: v.tolist() for k, v in scores.items()},
            "aggregates": {},
            "taus": taus,
            "profiles": {},
            "improvement": [],
        }
        for fname, f in funcs.items():
            np.random.seed(1)
            points, intervals = rly.get_interval_estimates(
                scores, lambda x, f=f: np.array([f(x)]), reps=REPS)
            for alg in scores:
                record["aggregates"].setdefault(alg, {})[fname] = {
                    "point": float(points[alg][0]),
                    "lo": float(intervals[alg][0][0]),
                    "hi": float(intervals[alg][1][0]),
                }
        np.random.seed(2)
        profiles, cis = rly.create_performance_profile(scores, taus, reps=PROFILE_REPS)
        for alg in scores:
            record["profiles"][alg] = {
                "point": [float(v) for v in profiles[alg]],
                "lo": [float(v) for v in cis[alg][0]],
                "hi": [float(v) for v in cis[alg][1]],
            }
        algs = list(scores)
        for i, x in enumerate(algs):
            for y in algs[i + 1:]:
                np.random.seed(3)
                points, intervals = rly.get_interval_estimates(
                    {"pair": [scores[x], scores[y]]},
                    lambda a, b: np.array([metrics.probability_of_improvement(a, b)]),
                    reps=PROFILE_REPS)
                record["improvement"].append({
                    "x": x, "y": y,
                    "point": float(points["pair"][0]),
                    "lo": float(intervals["pair"][0][0]),
                    "hi": float(intervals["pair"][1][0]),
                })
        path = os.path.join(OUT, f"{name}.json")
        with open(path, "w") as f:
            json.dump(record, f, indent=1)
        print("wrote", path)


if __name__ == "__main__":
    main()
