"""The scheduler address check made before a run takes its folder, without importing
distributed (dask_client.address_problem), agrees with Dask's own parsing."""

from __future__ import annotations

import pytest

from pipeline.errors import UsageError
from pipeline.execute.dask_client import address_problem
from pipeline.execute.dask_cluster import check_address


@pytest.mark.parametrize("address", [
    "tcp://127.0.0.1:8786", "127.0.0.1:8786", "tls://host:1", "ws://[::1]:80",
    "inproc://x", "notaurl", "nonsense://x", "tcp://host", "tcp://host:", "tcp://:8786",
    "wss://h:port",
])
def test_address_problem_is_dask_s_verdict(address):
    try:
        check_address(address)
        dask_ok = True
    except UsageError:
        dask_ok = False
    assert (address_problem(address) is None) == dask_ok, address_problem(address)
