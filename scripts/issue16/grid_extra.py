"""Extra curves on a PLAN grid's own data: `cm` and `gaussian` (the other two candidates of
issue 16's `auto` goal) run on exactly the datasets of `dpmean reproduce NAME` (same task seeds,
so the same draws), appended to DIR/NAME-extra.csv in the grid CSV's format (resumable).

    python scripts/issue16/grid_extra.py plan-gaussian-a DIR [JOBS]

NON-PRIVATE evaluation: the values are l2 errors against the true mean."""
import csv
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from dpmean.experiments.figures import _plan_box
from dpmean.experiments.runner import columns, get_spec, task_seed
from dpmean.experiments.spec import METRICS, Method

EXTRA = (Method("CM", "cm", lambda s, data: _plan_box(s)),
         Method("gaussian", "gaussian", lambda s, data: _plan_box(s)))


def task(name: str, index: int, trial: int) -> list[dict]:
    spec = get_spec(name)
    setting = spec.settings[index]
    rng = np.random.default_rng(task_seed(spec, index, trial))
    data = spec.data(setting, rng)
    metric = METRICS[spec.metric][1]
    return [{**setting, "trial": trial, "method": m.label,
             "value": metric(m.run(setting, data, np.random.default_rng([index, trial, k])),
                             data)}
            for k, m in enumerate(EXTRA)]


def main() -> None:
    name, out = sys.argv[1], Path(sys.argv[2])
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    append_trials(name, out / f"{name}-extra.csv", task, jobs)


def append_trials(name: str, path: Path, task, jobs: int) -> None:
    """Run ``task(name, index, trial)`` (a list of CSV rows) for every (setting, trial) of the
    spec ``name`` not yet in ``path``, appending each trial's rows as it finishes (resumable)."""
    spec = get_spec(name)
    header = columns(spec)
    done = set()
    if path.exists():
        with path.open(newline="") as f:
            done = {(int(r["trial"]), tuple(r[p] for p in header[:-3])) for r in csv.DictReader(f)}
    todo = [(i, t) for t in range(spec.trials) for i, s in enumerate(spec.settings)
            if (t, tuple(str(s.get(p, "")) for p in header[:-3])) not in done]
    fresh = not path.exists()
    indices, trials = zip(*todo, strict=True) if todo else ((), ())
    with path.open("a", newline="") as f, ProcessPoolExecutor(jobs) as pool:
        writer = csv.DictWriter(f, fieldnames=header)
        if fresh:
            writer.writeheader()
        for rows in pool.map(task, [name] * len(todo), indices, trials):
            writer.writerows(rows)
            f.flush()
    print(path, len(todo), "trials run")


if __name__ == "__main__":
    main()
