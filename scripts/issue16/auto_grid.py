"""`auto` alone on the PLAN grids' own datasets, set against the candidates' means that
docs/results.md holds for the same datasets (NON-PRIVATE evaluation: l2 errors against the
true mean).

    python scripts/issue16/auto_grid.py run NAME DIR [JOBS]   # appends DIR/NAME-auto.csv
    python scripts/issue16/auto_grid.py compare DIR           # auto / best per cell
    python scripts/issue16/auto_grid.py update DIR            # ... written into the tables
    python scripts/issue16/auto_grid.py draws NAME CASE D RHO  # more noise draws, one cell

`run` draws each (setting, trial)'s dataset exactly as `dpmean reproduce NAME` does (the task
seed's first draws) and runs `auto` on it with its own noise seed ([index, trial, 99]), so a
change to `auto` alone is measured without rerunning the other methods. The runs resume.
`compare` reads the grid tables of docs/results.md (PLAN, IOME and CM means over the same 50
datasets; the Gaussian mechanism is never the best there) and prints, per cell, the new
auto's mean, the best candidate, their ratio and the ratio the table had; `update` writes the
new auto mean, median and auto / best into those tables (nothing else in them changes);
`draws` runs plan, auto and iome twice more on each of one cell's datasets (noise seeds
[index, trial, 97 or 98, k]; CASE "-" for a spec without cases) and prints their means and
medians over the 100 releases.
"""
import csv
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from grid_extra import append_trials

from dpmean.experiments.figures import _plan_box
from dpmean.experiments.runner import get_spec, task_seed
from dpmean.experiments.spec import METRICS, Method


def grid_method(method: str) -> Method:
    """``method`` on a PLAN grid setting, in the grid's own box."""
    return Method(method, method, lambda s, data: _plan_box(s))


def best_of(row: dict) -> float:
    """The best candidate's mean in a results.md grid row (the Gaussian mechanism is never the
    best on these grids, and its column is not in the tables)."""
    return min(float(row[k]) for k in ("PLAN", "IOME", "CM") if row.get(k))


AUTO = grid_method("auto")
GRIDS = {  # spec: (the results.md heading it sits under, the tables' x column, the case of
    # each of the heading's tables in order; None for a spec without cases)
    "plan-gaussian-a": ("### Gaussian A:", "d", (None,)),
    "plan-gaussian-b": ("### Gaussian B:", "alpha", (None,)),
    "plan-gaussian-c": ("### Gaussian C:", "d", (None,)),
    "plan-appendix-e-a": ("### Appendix E:", "d", (None, "skip")),
    "plan-appendix-e-c": ("### Appendix E:", "d", ("skip", None)),
    "plan-appendix-g": ("### Appendix G:", "d", ("A", "C")),
}
RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results.md"


def task(name: str, index: int, trial: int) -> list[dict]:
    spec = get_spec(name)
    setting = spec.settings[index]
    data = spec.data(setting, np.random.default_rng(task_seed(spec, index, trial)))
    value = METRICS[spec.metric][1](
        AUTO.run(setting, data, np.random.default_rng([index, trial, 99])), data)
    return [{**setting, "trial": trial, "method": "auto", "value": value}]


def run(name: str, out: Path, jobs: int) -> None:
    append_trials(name, out / f"{name}-auto.csv", task, jobs)


def grid_rows(lines: list[str]):
    """(line number, spec, case, header, cells) of every grid table row of docs/results.md."""
    heading, count, header = "", 0, None
    for i, line in enumerate(lines):
        if line.startswith("#"):
            heading, count, header = line, 0, None
            continue
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| rho |") and "auto/best" in line:
            header, count = cells, count + 1
        elif header is not None and re.match(r"^[0-9.]+$", cells[0]):
            for name, (title, _, cases) in GRIDS.items():
                if heading.startswith(title) and cases[count - 1:count] not in ([], ["skip"]):
                    yield i, name, cases[count - 1], header, cells


def tables() -> dict:
    """(spec, case, rho, x) -> the row of its results.md table, by column name."""
    found = {}
    for _, name, case, header, cells in grid_rows(RESULTS.read_text().splitlines()):
        keys = [f"{h} {i}" if header.count(h) > 1 else h for i, h in enumerate(header)]
        found[(name, case, float(cells[0]), float(cells[1]))] = dict(zip(keys, cells, strict=True))
    return found


def auto_runs(out: Path) -> dict:
    """(spec, case, rho, x) -> the auto errors of DIR/NAME-auto.csv."""
    values = defaultdict(list)
    for name, (_, x, _) in GRIDS.items():
        path = out / f"{name}-auto.csv"
        if path.exists():
            with path.open(newline="") as f:
                for r in csv.DictReader(f):
                    values[(name, r.get("case") or None, float(r["rho"]), float(r[x]))].append(
                        float(r["value"]))
    return values


def update(out: Path) -> None:
    """Rewrite the auto, its median and auto/best cells of every grid row with new runs."""
    values = auto_runs(out)
    lines = RESULTS.read_text().splitlines(keepends=True)
    changed = 0
    for i, name, case, header, cells in list(grid_rows(lines)):
        v = values.get((name, case, float(cells[0]), float(cells[1])))
        if not v:
            continue
        at = header.index("auto")
        best = best_of(dict(zip(header, cells, strict=True)))
        cells[at], cells[at + 1] = f"{np.mean(v):.4g}", f"{np.median(v):.4g}"
        cells[header.index("auto/best")] = f"{np.mean(v) / best:.2f}"
        lines[i] = "| " + " | ".join(cells) + " |\n"
        changed += 1
    RESULTS.write_text("".join(lines))
    print(changed, "rows updated")


def compare(out: Path) -> None:
    stored = tables()
    worst = []
    for key, v in sorted(auto_runs(out).items(), key=lambda kv: str(kv[0])):
        row = stored.get(key)
        if row is None:
            print(key, "not in docs/results.md")
            continue
        best = best_of(row)
        ratio = np.mean(v) / best
        worst.append((round(ratio, 3), *key))
        print(*key, len(v), f"auto {np.mean(v):.4g} best {best:.4g} auto/best {ratio:.3f} "
              f"(table: {row['auto/best']})")
    worst.sort(reverse=True)
    print("\nabove 1.05:", [w for w in worst if w[0] > 1.05] or "none")
    print("largest five:", worst[:5])


def draws(name: str, case: str, d: int, rho: float) -> None:
    spec = get_spec(name)
    index = next(i for i, s in enumerate(spec.settings)
                 if s.get("case", "-") == case and s["d"] == d and s["rho"] == rho)
    setting = spec.settings[index]
    methods = {name: grid_method(name) for name in ("plan", "auto", "iome")}
    errors: dict[str, list[float]] = {name: [] for name in methods}
    for trial in range(spec.trials):
        data = spec.data(setting, np.random.default_rng(task_seed(spec, index, trial)))
        for k, (name, method) in enumerate(methods.items()):
            for seed in (97, 98):
                rng = np.random.default_rng([index, trial, seed, k])
                errors[name].append(METRICS[spec.metric][1](method.run(setting, data, rng), data))
    for method, v in errors.items():
        print(method, len(v), f"mean {np.mean(v):.4g} median {np.median(v):.4g}")


def main() -> None:
    if sys.argv[1] == "run":
        run(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    elif sys.argv[1] == "update":
        update(Path(sys.argv[2]))
    elif sys.argv[1] == "draws":
        draws(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    else:
        compare(Path(sys.argv[2]))


if __name__ == "__main__":
    main()
