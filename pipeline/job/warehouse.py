"""Scheduled runs: `pipeline run --incremental` keeps a warehouse of finished runs.

Each input file is solved into its own run folder, `WAREHOUSE/<stem>-<sha256[:12]>/`, and
recorded in `WAREHOUSE/catalog.parquet` (file, hash, rows, counts per status, when, and the
options that change what a run writes: `run.options`, as JSON). A file whose content hash is
in the catalog with the same options is skipped; a file that changed has a new hash, so it
is processed again as a new version. To stay quick when nothing is new, a file whose path,
size, mtime, ctime and inode (at a URL: size and ETag) match its catalog entry is not hashed
again. A file that changes while it is solved (its identity moved by its run's end; where
there is none, its hash) has its folder removed and is refused this time (done again at
the next run). The
same file with other options (`--canonical`, `--limit`, `--rate`, a puzzle column) is run
again into its folder, replacing the run there and its catalog row. A catalog row from before
`options` existed (null) matches any options, as it did.

A file that cannot be used (InputError: binary, no puzzle column, vanished) is refused: it
is recorded in the catalog with its reason and no run folder, skipped until it changes or
the options change (a refusal for `--puzzle-column nope` is that option's), and the others
are done; the Summary's exit code then says some input was refused.

Inputs and the warehouse may be local or at URLs, as for `run`; the catalog is written
whole (one PUT on an object store). The warehouse lock keeps overlapping runs out: a flock
on a local folder, on S3 a lock object created only if absent (RunFolder.lock).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import time
from dataclasses import replace

import polars as pl

from pipeline import testhooks
from pipeline.errors import DefinitionMismatch, InputChanged, InputError, UsageError
from pipeline.io import runfolder, timestamps
from pipeline.io.inputs import as_text, check_name, outside, resolve, stem
from pipeline.io.runfolder import RunFolder
from pipeline.io.storage import CONDITIONAL_STORES, READ_STEP, Location, redact, why
from pipeline.job.run import Hooks, Summary, options, run
from pipeline.job.settings import Settings
from pipeline.sudoku.status import STATUS_NAMES

log = logging.getLogger("pipeline.warehouse")

CATALOG = runfolder.CATALOG
CATALOG_SCHEMA = {
    "file": pl.String, "sha256": pl.String, "size": pl.Int64, "mtime_ns": pl.Int64,
    "etag": pl.String, "run_dir": pl.String, "rows": pl.Int64,
    **dict.fromkeys(STATUS_NAMES, pl.Int64), "finished_at": pl.String,
    "reason": pl.String,  # why the file was refused (null for a file done)
    "options": pl.String,  # run.options as JSON (null in a catalog written before it)
    "ctime_ns": pl.Int64, "inode": pl.Int64,  # a local file's (null before they were kept)
}
STEM_BYTES = 100  # of a file's stem in its folder's name (a name has at most 255 bytes)


def read_catalog(warehouse: str | os.PathLike) -> pl.DataFrame:
    """The catalog of finished runs (empty when there is none yet), in today's columns (a
    catalog written before a column existed reads with it null)."""
    loc = Location(str(warehouse)).child(CATALOG)
    try:
        data = loc.read_bytes()
    except FileNotFoundError:
        return pl.DataFrame(schema=CATALOG_SCHEMA)
    except OSError as exc:
        raise InputError(f"{loc.shown}: cannot be read ({why(exc)})") from None
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except Exception as exc:  # torn, or not Parquet: polars says it any way it can
        raise InputError(f"{loc.shown}: cannot be read ({type(exc).__name__})") from None
    return frame.select([pl.col(name).cast(kind) if name in frame.columns
                         else pl.lit(None, kind).alias(name)
                         for name, kind in CATALOG_SCHEMA.items()])


def run_incremental(settings: Settings, warehouse: str | None,
                    hooks: Hooks | None = None) -> Summary:
    """Solve the inputs not yet in the warehouse's catalog; one run folder per file."""
    if warehouse is None:
        raise UsageError("--incremental needs --output WAREHOUSE")
    root = RunFolder(Location(warehouse))
    if not root.loc.local and root.loc.url.split("://", 1)[0].lower() not in CONDITIONAL_STORES:
        raise UsageError(f"--incremental: a warehouse at {root.shown} cannot be locked (a "
                         f"local folder or {', '.join(CONDITIONAL_STORES)}:// can)")
    if root.loc.child(runfolder.MANIFEST).exists():  # its files are a run's, not files'
        raise UsageError(f"--incremental: {root.shown} is a run folder, not a warehouse; "
                         "give another folder")
    paths, _ = outside(resolve(settings.inputs), root.loc)
    globbed = set(paths) - set(settings.inputs)  # what a glob found exists, or did
    for path in paths:
        if path == "-" or Location(path).local and Location(path).kind() == "stream":
            raise UsageError(f"--incremental reads files, not standard input or pipes "
                             f"({'-' if path == '-' else redact(path)})")
        if path not in globbed and not Location(path).exists():  # named, not found: a typo
            raise InputError(f"{redact(path)}: no such file")
    root.open()
    total = Summary(fail_on=settings.fail_on, output=root.shown)
    started = time.perf_counter()
    root.lock(f"pid {os.getpid()} (incremental) since {timestamps.local()}", store=True)
    wanted = json.dumps(options(settings), sort_keys=True)
    try:
        catalog = read_catalog(root.loc.url)
        mine = _ours(catalog, wanted)  # (made again only when the catalog changes)
        known = set(mine["sha256"].to_list())
        for path in paths:
            loc, source = Location(path), as_text(redact(path))
            try:
                check_name(redact(path))
            except InputError as exc:  # its name's fault, not its content's: not recorded
                total.refused_files[source] = exc.message
                continue
            seen = _identity(loc)
            if seen is not None and _unchanged(mine, source, seen):
                total.skipped_files.append(source)
                continue
            try:
                digest = _sha256(loc)
            except InputError as exc:  # vanished since the glob, unreadable
                total.refused_files[source] = exc.message
                continue
            if digest in known:
                total.skipped_files.append(source)
                continue
            testhooks.pause("warehouse-hashed", 10)
            name = as_text(stem(path)).encode()[:STEM_BYTES].decode(errors="ignore")
            folder = root.child(f"{name}-{digest[:12]}")
            entry = {"file": source, "sha256": digest, **(seen or {}), "options": wanted}
            refused = None
            try:
                once = replace(settings, inputs=[path], folder=folder.url, overwrite=False)
                try:
                    summary = run(once, hooks)
                except DefinitionMismatch:  # the file's run with other options: replaced
                    # its row goes first: the folder holds that run no more, even if this
                    # one is stopped half-way (else the next run would skip the file)
                    catalog = catalog.filter(pl.col("run_dir").ne_missing(folder.name))
                    _write_catalog(root, catalog)
                    summary = run(replace(once, overwrite=True), hooks)
                # what the run read may not be what was hashed: its identity moved (ctime,
                # which no tool sets back; at a URL the ETag), else its hash
                changed = (_identity(loc) != seen if seen is not None
                           else _sha256(loc) != digest)
            except InputChanged:  # a range's bytes were not those hashed: caught mid-run
                changed = True
            except InputError as exc:
                changed, refused = False, exc.message
            if refused is None:  # the folder holds this run now, or nothing
                catalog = catalog.filter(pl.col("run_dir").ne_missing(folder.name))
            if changed:
                folder.remove_tree()
                _write_catalog(root, catalog)
                total.refused_files[source] = (f"{source}: changed while it was solved; "
                                               "done again at the next run")
                continue
            if refused is not None:
                _remove_if_empty(RunFolder(folder))
                entry.update(reason=refused, finished_at=timestamps.utc())
                total.refused_files[source] = refused
            else:
                entry.update(run_dir=folder.name, rows=summary.rows, **summary.counts,
                             finished_at=timestamps.utc())
                if summary.already_done:  # its folder was finished: only its row is new
                    total.skipped_files.append(source)
                else:
                    total.processed_files.append(source)
                    for name, n in summary.counts.items():
                        total.counts[name] += n
                    total.rows += summary.rows
                    total.resumed_rows += summary.resumed_rows
            catalog = pl.concat([catalog, pl.DataFrame([entry], schema=CATALOG_SCHEMA)])
            mine = _ours(catalog, wanted)
            known = set(mine["sha256"].to_list())
            _write_catalog(root, catalog)
    finally:
        root.unlock()
    total.wall_seconds = time.perf_counter() - started
    log.info("incremental: %d processed, %d skipped, %d refused", len(total.processed_files),
             len(total.skipped_files), len(total.refused_files))
    return total


def _write_catalog(root: RunFolder, catalog: pl.DataFrame) -> None:
    root.child(CATALOG).write_atomic(lambda f: catalog.write_parquet(f, compression="zstd"))


def _identity(loc: Location) -> dict | None:
    """What tells a file unchanged without reading it: size and mtime, or size and ETag
    (None where the store says neither)."""
    try:
        return loc.identity()
    except Exception:  # http, a store that does not say: the file is hashed
        return None


def _ours(catalog: pl.DataFrame, wanted: str) -> pl.DataFrame:
    """The catalog's rows made with these options (or before options were recorded)."""
    return catalog.filter(pl.col("options").is_null() | (pl.col("options") == wanted))


def _unchanged(catalog: pl.DataFrame, source: str, seen: dict) -> bool:
    hit = catalog.filter(pl.col("file") == source)
    for name, value in seen.items():
        hit = hit.filter(pl.col(name) == value)
    return hit.height > 0


def _sha256(loc: Location) -> str:
    """The sha256 of a file as stored (what tells a new version from one already done)."""
    h = hashlib.sha256()
    try:
        with loc.open_stream() as f:
            while block := f.read(READ_STEP):
                h.update(block)
    except FileNotFoundError:
        raise InputError(f"{loc.shown}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{loc.shown}: is a folder, not a file") from None
    except OSError as exc:
        raise InputError(f"{loc.shown}: cannot be read ({why(exc)})") from None
    return h.hexdigest()


def _remove_if_empty(folder: RunFolder) -> None:
    """Remove a refused file's run folder when it holds nothing of a run (its lock, spill)."""
    if folder.previous().empty:
        for name in (runfolder.SPILL, runfolder.LOGS, runfolder.RESULTS):
            folder.child(name).remove_tree()
        folder.child(runfolder.LOCK).remove()
        if folder.loc.local:
            try:
                os.rmdir(folder.loc.path)
            except OSError:
                pass  # something else appeared in it: left alone
