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
