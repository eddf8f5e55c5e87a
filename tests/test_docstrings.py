"""Every public name has a numpydoc docstring with the sections its kind needs (issue 17):
functions Parameters (when they take any) and Returns, estimators Parameters and Privacy (the
cost of each stage), every other class and exception a summary line. The API reference
(docs/api.rst) is built from these docstrings."""

from __future__ import annotations

import inspect
import re

import pytest

import dpmean

# A numpydoc section: a title line underlined by dashes of at least three characters.
SECTION = re.compile(r"^([A-Z][A-Za-z ]*)\n-{3,}$", re.MULTILINE)


def sections(obj: object) -> set[str]:
    return set(SECTION.findall(inspect.getdoc(obj) or ""))


def needed(obj: object) -> set[str]:
    if inspect.isclass(obj):
        return {"Parameters", "Privacy"} if issubclass(obj, dpmean.MeanEstimator) else set()
    takes = [p for p in inspect.signature(obj).parameters.values() if p.name != "self"]
    return {"Parameters", "Returns"} if takes else {"Returns"}


@pytest.mark.parametrize("name", dpmean.__all__)
def test_public_name_has_a_summary(name: str) -> None:
    doc = inspect.getdoc(getattr(dpmean, name)) or ""
    summary = doc.split("\n\n")[0].strip()
    assert summary and not SECTION.match(summary), f"{name}: no summary line"


@pytest.mark.parametrize("name", dpmean.__all__)
def test_public_name_has_its_sections(name: str) -> None:
    obj = getattr(dpmean, name)
    missing = needed(obj) - sections(obj)
    assert not missing, f"{name}: docstring lacks {sorted(missing)}"


def test_estimators_are_told_apart_from_other_classes() -> None:
    # The sections test must not pass vacuously: the estimators are recognised as such.
    estimators = [n for n in dpmean.__all__ if "Privacy" in needed(getattr(dpmean, n))]
    assert {"MeanEstimator", "ShiftedClippedMean", "TrimmedMean", "LocalIOME"} <= set(estimators)
