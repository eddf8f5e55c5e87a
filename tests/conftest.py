"""Shared fixtures: a small Dask cluster (2 worker processes) for the Dask engine's tests."""

import pytest


@pytest.fixture(scope="session")
def dask_client():
    """A LocalCluster of 2 single-threaded worker processes, and a client that makes it Dask's
    scheduler for the tests that take this fixture."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client
