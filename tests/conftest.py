"""Shared fixtures: a small Dask cluster (2 worker processes) for the Dask engine's tests."""

import pytest


@pytest.fixture(scope="session")
def _dask_cluster_client():
    """A LocalCluster of 2 single-threaded worker processes and its client, started once, never
    made Dask's default scheduler (tests that do not ask for it keep the local threads, which
    see their monkeypatched module settings)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        yield client


@pytest.fixture
def dask_client(_dask_cluster_client):
    """The cluster's client, Dask's scheduler for the duration of the test that takes it."""
    import dask

    with dask.config.set(scheduler=_dask_cluster_client):
        yield _dask_cluster_client


@pytest.fixture
def old_target_rank(monkeypatch):
    """For tests against stored releases, which predate the radius search's escape margin
    (``ESCAPE_BETA``, sized below beta): with it at beta or above, the target rank is the old
    one and every bit of the old release must come back."""
    monkeypatch.setattr("dpmean.estimators.clipped.ESCAPE_BETA", 1.0)
