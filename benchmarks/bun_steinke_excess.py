"""Bun-Steinke 2019 Sec. 4 headline figures: best excess variance n MSE - 1 per noise at eps = 1.

Run: .venv/bin/python benchmarks/bun_steinke_excess.py [--trials 2000] [--seed 0]
A NON-PRIVATE evaluation on synthetic N(0, 1) data clamped to [-50, 1050].
"""

from __future__ import annotations

import argparse

from dpmean.experiments.bun_steinke import (
    PAPER_CLAIMS,
    default_tuning_excess,
    headline_table,
    sampled_excess,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = headline_table(trials=args.trials, seed=args.seed)
    print(f"{'n':>5} {'noise':>14} {'excess':>10} {'m':>4} {'t':>8}   paper (LLN)")
    for row in rows:
        claim = PAPER_CLAIMS[row["n"]] if row["noise"] == "lln" else ""
        print(f"{row['n']:>5} {row['noise']:>14} {row['excess']:>10.4g} {row['m']:>4} "
              f"{row['t']:>8.4g}   {claim}")
    for row in rows:
        if row["noise"] == "lln":
            drawn = sampled_excess(row["n"], 1.0, "lln", row["m"], row["t"], trials=20000)
            print(f"n={row['n']}: LLN at (m, t) = ({row['m']}, {row['t']:.4g}) with the noise "
                  f"drawn (20000 fresh datasets): excess {drawn:.3f}")
            value, m, t = default_tuning_excess(row["n"], trials=args.trials, seed=args.seed)
            print(f"n={row['n']}: LLN at the estimator's default (m, t) = ({m}, {t:.4g}), tuned "
                  f"without data: excess {value:.3f}")


if __name__ == "__main__":
    main()
