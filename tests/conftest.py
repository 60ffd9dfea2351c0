import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def dask_client():
    """A real multi-process Dask cluster for the whole session: 2 single-thread workers (spawned,
    so numba's parallel kernels run). The tests ask for 1 numba thread per task (``n_threads=1``):
    a worker started with a different NUMBA_NUM_THREADS in its nanny ``env`` fails on its first
    numba compilation (numba re-reads the environment then).

    A worker whose process is killed is restarted by its nanny; LocalCluster closes a nanny whose
    worker has not come back within ``distributed.deploy.lost-worker-timeout`` (15 s by default),
    which a spawned worker on this shared 2-core machine can exceed (seen: the new worker
    registered just after its nanny was closed, leaving one worker for the rest of the session).
    The session raises it, so the fault tests' restarted workers always rejoin."""
    import dask
    from dask.distributed import Client, LocalCluster

    with dask.config.set({"distributed.deploy.lost-worker-timeout": "600s"}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=":0")
        client = Client(cluster)
        client.wait_for_workers(2, timeout=120)     # the worker processes are still importing
        try:
            yield client
        finally:
            client.close()
            cluster.close()
