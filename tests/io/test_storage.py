"""pipeline.io.storage: a URL's secrets removed before it is shown; a write is whole or
absent. (Runs on other storage: tests/e2e/test_storage.py.)"""

from __future__ import annotations

import os

import pytest

from pipeline.errors import RunFailed
from pipeline.io import storage
from pipeline.io.storage import Location


@pytest.mark.parametrize("url, shown", [
    ("s3://bucket/key.csv", "s3://bucket/key.csv"),
    ("s3://bkt/h/set#1.txt", "s3://bkt/h/set#1.txt"),  # an object store's key, whole
    ("s3://KEY:SECRET@bkt/q?x=1.csv", "s3://bkt/q?x=1.csv"),
    ("https://user:pa55@host:8443/p/x.csv?X-Amz-Signature=abc&a=1#frag",
     "https://host:8443/p/x.csv"),
    ("http://tok@example.org/x", "http://example.org/x"),
    ("data/local.csv", "data/local.csv"),
    ("C:\\data\\x.csv", "C:\\data\\x.csv"),
])
def test_redact(url, shown):
    assert storage.redact(url) == shown
    assert storage.scrub(f"cannot read {url} (gone)") == f"cannot read {shown} (gone)"


def test_local_write_is_whole_or_absent(tmp_path):
    target = Location(str(tmp_path / "x.bin"))
    target.write_atomic(b"12345")
    assert target.read_bytes() == b"12345"

    def half_then_fail(f):
        f.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(RunFailed, match="no space left"):
        target.write_atomic(half_then_fail)
    assert target.read_bytes() == b"12345"  # the old file, untouched
    assert sorted(os.listdir(tmp_path)) == ["x.bin"]  # no temporary left behind
