"""Each subpackage imports on its own, in a fresh interpreter, and the layers do not import
upwards: estimators never import protocols (issue 17: each imported the other, and it worked
only by the order ``dpmean/__init__`` happened to import them in)."""

import ast
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "dpmean"
SUBPACKAGES = ["engines", "mechanisms", "transforms", "estimators", "protocols", "experiments"]
# What the lower layers must not load: everything that builds on them.
UPPER = {"estimators", "protocols", "experiments", "api", "registry", "session", "cli"}

# ``import dpmean.<sub>`` would run dpmean/__init__ first, which imports every subpackage in
# one fixed order and so hides a cycle. The probe puts an empty package in its place: only
# the subpackage's own imports run. It prints the dpmean modules that got loaded.
_PROBE = """
import importlib, importlib.util, json, sys, types
spec = importlib.util.find_spec("dpmean")
package = types.ModuleType("dpmean")
package.__path__ = list(spec.submodule_search_locations)
sys.modules["dpmean"] = package
importlib.import_module("dpmean." + sys.argv[1])
print(json.dumps(sorted({m.split(".")[1] for m in sys.modules if m.startswith("dpmean.")})))
"""


def run_probe(code: str, *args: str) -> list[str]:
    """Run ``code`` in a fresh interpreter with this checkout's src first on the path; return
    the JSON list it prints last."""
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": path}, timeout=120)
    assert done.returncode == 0, f"the probe {args} failed:\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@functools.cache
def loaded_by(subpackage: str) -> frozenset[str]:
    """The top-level dpmean modules importing ``dpmean.<subpackage>`` alone loads."""
    return frozenset(run_probe(_PROBE, subpackage))


@pytest.mark.parametrize("subpackage", SUBPACKAGES)
def test_subpackage_imports_alone(subpackage):
    assert subpackage in loaded_by(subpackage)


@pytest.mark.parametrize("subpackage", ["engines", "mechanisms", "transforms"])
def test_lower_layers_do_not_load_upper_ones(subpackage):
    assert not loaded_by(subpackage) & UPPER


def test_estimators_do_not_load_protocols():
    assert "protocols" not in loaded_by("estimators")
    assert "registry" not in loaded_by("estimators")


def _imported_modules(path: Path) -> set[str]:
    """Absolute names of every module a file imports, at top level or inside functions."""
    package = ".".join(path.relative_to(SRC).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module) if p)
            names |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return names


def test_no_estimator_module_imports_protocols_even_lazily():
    # The runtime check above misses imports inside functions; this one reads the source.
    offenders = {
        str(path.relative_to(SRC)): sorted(name for name in _imported_modules(path)
                                           if name.startswith(("dpmean.protocols",
                                                               "dpmean.registry")))
        for path in sorted((PACKAGE / "estimators").glob("*.py"))
    }
    assert not {path: names for path, names in offenders.items() if names}


def test_import_reader_resolves_relative_imports():
    # The source check is only as good as its resolution of "from ..protocols import x".
    names = _imported_modules(PACKAGE / "protocols" / "base.py")
    assert "dpmean.estimators.base" in names
    assert "dpmean.accounting" in names


# What the command line must not load to build its parser (issue 20: `dpmean --help` took
# seven times a bare `import numpy`); the commands import them when they run.
HEAVY = ("numpy", "scipy", "pyarrow", "matplotlib", "dask", "tqdm")
_HEAVY_PROBE = """
import json, sys
import dpmean.cli
dpmean.cli.build_parser()
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_the_command_line_starts_without_numpy_or_scipy():
    assert not set(run_probe(_HEAVY_PROBE)) & set(HEAVY)


def test_lazy_public_names_match_all_and_resolve():
    import dpmean

    assert sorted(dpmean._HOME) == sorted(dpmean.__all__)
    assert set(dpmean.__all__) <= set(dir(dpmean))
    for name in dpmean.__all__:
        assert getattr(dpmean, name).__name__ == name
    # The planning module once shared the function's name and, once imported, replaced it.
    import dpmean.planning

    assert callable(dpmean.accuracy) and dpmean.accuracy is dpmean.planning.accuracy
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        dpmean.nope  # noqa: B018
