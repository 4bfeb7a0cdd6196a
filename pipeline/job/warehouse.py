"""Scheduled runs: `pipeline run --incremental` keeps a warehouse of finished runs.

Each input file is solved into its own run folder, `WAREHOUSE/<stem>-<sha256[:12]>/`, and
recorded in `WAREHOUSE/catalog.parquet` (file, hash, rows, counts per status, when). A file
whose content hash is in the catalog is skipped; a file that changed has a new hash, so it is
processed again as a new version. The warehouse lock keeps overlapping runs out. To stay
quick when nothing is new, a file whose path, size and mtime match its catalog entry is not
hashed again.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import replace
from pathlib import Path

import polars as pl

from pipeline.errors import InputError, UsageError
from pipeline.io import timestamps
from pipeline.io.inputs import resolve, stem
from pipeline.io.runfolder import RunFolder
from pipeline.io.storage import Location, why
from pipeline.job.run import Hooks, Summary, run
from pipeline.job.settings import Settings
from pipeline.sudoku.status import STATUS_NAMES

log = logging.getLogger("pipeline.warehouse")

CATALOG = "catalog.parquet"
CATALOG_SCHEMA = {
    "file": pl.String, "sha256": pl.String, "size": pl.Int64, "mtime_ns": pl.Int64,
    "run_dir": pl.String, "rows": pl.Int64, **dict.fromkeys(STATUS_NAMES, pl.Int64),
    "finished_at": pl.String,
}


def read_catalog(warehouse: Path) -> pl.DataFrame:
    """The catalog of finished runs (empty when there is none yet)."""
    path = warehouse / CATALOG
    if path.exists():
        return pl.read_parquet(path)
    return pl.DataFrame(schema=CATALOG_SCHEMA)


def run_incremental(settings: Settings, warehouse: str | None,
                    hooks: Hooks | None = None) -> Summary:
    """Solve the inputs not yet in the warehouse's catalog; one run folder per file."""
    if warehouse is None:
        raise UsageError("--incremental needs --output WAREHOUSE")
    paths = resolve(settings.inputs)
    if "-" in paths:
        raise UsageError("--incremental reads files, not standard input")
    root = Path(warehouse)
    total = Summary(fail_on=settings.fail_on, output=str(root))
    started = time.perf_counter()
    lock = RunFolder(Location(str(root)))
    lock.open()
    lock.lock(f"pid {os.getpid()} (incremental) since {timestamps.local()}")
    try:
        catalog = read_catalog(root)
        known = set(catalog["sha256"].to_list())
        for path in paths:
            st = os.stat(path) if os.path.isfile(path) else None
            if st is not None and _unchanged(catalog, path, st):
                total.skipped_files.append(path)
                continue
            digest = _sha256(path)
            if digest in known:
                total.skipped_files.append(path)
                continue
            folder = root / f"{stem(path)}-{digest[:12]}"
            summary = run(replace(settings, inputs=[path], folder=str(folder),
                                  overwrite=False), hooks)
            entry = {
                "file": path, "sha256": digest, "size": st.st_size if st else None,
                "mtime_ns": st.st_mtime_ns if st else None,
                "run_dir": folder.name, "rows": summary.rows, **summary.counts,
                "finished_at": timestamps.utc(),
            }
            catalog = pl.concat([catalog, pl.DataFrame([entry], schema=CATALOG_SCHEMA)])
            known.add(digest)
            _write_catalog(root / CATALOG, catalog)
            total.processed_files.append(path)
            for name, n in summary.counts.items():
                total.counts[name] += n
            total.rows += summary.rows
    except InputError:  # a warehouse this run made holds nothing yet: leave none behind
        lock.unlock()
        lock.remove_if_made()
        raise
    finally:
        lock.unlock()
    total.wall_seconds = time.perf_counter() - started
    log.info("incremental: %d processed, %d skipped", len(total.processed_files),
             len(total.skipped_files))
    return total


def _unchanged(catalog: pl.DataFrame, path: str, st: os.stat_result) -> bool:
    hit = catalog.filter((pl.col("file") == path) & (pl.col("size") == st.st_size)
                         & (pl.col("mtime_ns") == st.st_mtime_ns))
    return hit.height > 0


def _sha256(path: str) -> str:
    """The sha256 of a file as stored (what tells a new version from one already done)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while block := f.read(8 << 20):
                h.update(block)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({why(exc)})") from None
    return h.hexdigest()


def _write_catalog(path: Path, catalog: pl.DataFrame) -> None:
    Location(str(path)).write_atomic(lambda f: catalog.write_parquet(f, compression="zstd"))
