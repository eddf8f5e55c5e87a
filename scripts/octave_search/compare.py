"""Tables old vs new from scripts/octave_search/results/box_{old,new}.json (measure_box.py).

    PYTHONPATH=src python scripts/octave_search/compare.py [old] [new] [methods]
"""
import json
import sys

import numpy as np

a = sys.argv[1] if len(sys.argv) > 1 else "old"
b = sys.argv[2] if len(sys.argv) > 2 else "new"
old = json.load(open(f"scripts/octave_search/results/box_{a}.json"))
new = json.load(open(f"scripts/octave_search/results/box_{b}.json"))
methods = sys.argv[3].split(",") if len(sys.argv) > 3 else ["cm", "iome", "auto", "plan"]
boxes = ["5", "50", "10000", "1e+08", "1e+12"]
for m in methods:
    print(f"\n### {m}: mean l2 error over 20 releases, old -> new (ratio new/old)\n")
    print("| data | n | d | rho | " + " | ".join(f"box +-{B}" for B in boxes) + " |")
    print("|" + "---|" * (4 + len(boxes)))
    for mu in ("0.0", "5.0"):
        for n in ("500", "20000"):
            for d in ("3", "64"):
                for rho in ("0.1", "1", "1e+06"):
                    cells = []
                    for B in boxes:
                        k = f"{mu}|{n}|{d}|{B}|{rho}|{m}"
                        ko = f"{mu}|{n}|{d}|{B}|{rho}|{m.replace('-when-short', '')}"
                        if k not in new or ko not in old:
                            cells.append("-")
                            continue
                        o, w = np.mean(old[ko]), np.mean(new[k])
                        cells.append(f"{o:.3g} -> {w:.3g} ({w / o:.3g})")
                    print(f"| N({mu[0]},1) | {n} | {d} | {rho} | " + " | ".join(cells) + " |")
