"""pipeline.io.outputs: the output files of the commands are whole or absent (a write that
fails leaves nothing, for dedup and for split).
"""

from __future__ import annotations

import pytest

from pipeline.io.outputs import TableWriter
from pipeline.tools import dedup, split


def test_a_failed_write_leaves_nothing(planted, tmp_path, monkeypatch):
    def boom(self, table):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(TableWriter, "write", boom)
    from pipeline.errors import RunFailed

    with pytest.raises(RunFailed):
        dedup.dedup(planted["run"], str(tmp_path / "d.parquet"))
    with pytest.raises(RunFailed, match="cannot write .*no space left"):
        split.split(planted["run"], "0.5,0.5", None, 1, str(tmp_path / "s"))
    assert [p.name for p in tmp_path.iterdir()] == ["s"]
    assert list((tmp_path / "s").iterdir()) == []
