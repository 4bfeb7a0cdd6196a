"""`pipeline split`: the run's rows into files, whole equivalence classes to a split.

Within each stratum (the class's first occurrence's grade by default; null is a stratum of
its own) the classes are ranked by (u, words), u hashed from the seed -- a seeded random
order that does not depend on K or on the parts -- and cut at round(n_s * cumulative
fraction): each split holds within one class of its fraction of every stratum, so within S
classes of its fraction of the whole (S = the strata present, at most 6 for grades).
Deterministic for a seed; not stable when the run grows (ranks shift), which a pure hash
threshold would be, at the price of binomial noise in the fractions.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

from pipeline import testhooks
from pipeline.errors import RunFailed, UsageError
from pipeline.execute.lifecycle import stops_ignored
from pipeline.io.classes import (
    FATE,
    MEMORY_ROWS,
    RECORD,
    Spill,
    Strata,
    find_keys,
    form_hash,
    group_parts,
    grown,
    pass1,
    per_class,
    read_fates,
    sort_order,
    spill_folder,
)
from pipeline.io.outputs import OUTPUT_FORMATS, Outputs, check_output, scratch_near
from pipeline.io.runfolder import ROW_BITS, Run, open_parquet, open_run, part_batches
from pipeline.io.storage import why

DEFAULT_NAMES = {1: ("all",), 2: ("train", "test"), 3: ("train", "val", "test")}


@dataclass
class SplitSummary:
    run: str
    output: str
    names: list[str]
    fractions: list[float]
    seed: int
    stratify: str | None
    strata: list[str]  # stratum labels, by code
    classes: np.ndarray  # (splits, strata) classes, by each class's stratum
    rows: np.ndarray  # (splits,) rows written
    formless: int
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        total = int(self.classes.sum())
        parts = " / ".join(
            f"{n} {int(c):,} ({100 * c / max(total, 1):.1f}%)"
            for n, c in zip(self.names, self.classes.sum(axis=1), strict=True))
        how = f"stratified by {self.stratify}" if self.stratify else "not stratified"
        return (f"split {self.run} -> {self.output}: {total:,} classes, "
                f"{int(self.rows.sum()):,} rows: {parts} (seed {self.seed}, {how}; "
                f"{self.formless:,} malformed rows left out) in {self.seconds:.1f} s")

    def table(self) -> str:
        used = [s for s in [*range(1, len(self.strata)), 0] if self.classes[:, s].any()]
        heads = ["split", "rows", "classes", *(self.strata[s] for s in used)]
        body = []
        for i, name in enumerate(self.names):
            c = self.classes[i]
            body.append([name, f"{int(self.rows[i]):,}", f"{int(c.sum()):,}",
                         *(f"{int(c[s]):,}" for s in used)])
        tot = self.classes.sum(axis=0)
        body.append(["(total)", f"{int(self.rows.sum()):,}", f"{int(tot.sum()):,}",
                     *(f"{int(tot[s]):,}" for s in used)])
        widths = [max(len(r[j]) for r in [heads, *body]) for j in range(len(heads))]
        return "\n".join("  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                                   for j, (c, w) in enumerate(zip(r, widths, strict=True)))
                         for r in [heads, *body])

    def as_dict(self) -> dict:
        return {
            "run": self.run, "seed": self.seed, "stratify": self.stratify,
            "fractions": dict(zip(self.names, self.fractions, strict=True)),
            "files": dict(zip(self.names, self.files, strict=True)),
            "rows": {n: int(r) for n, r in zip(self.names, self.rows, strict=True)},
            "classes": {n: int(c) for n, c in zip(self.names, self.classes.sum(1),
                                                  strict=True)},
            "classes_by_stratum": {
                n: {self.strata[s]: int(self.classes[i, s]) for s in range(len(self.strata))
                    if self.classes[:, s].any()} for i, n in enumerate(self.names)},
            "malformed_rows_left_out": self.formless,
        }


def parse_fractions(fractions) -> list[float]:
    """'0.8,0.1,0.1' or numbers -> floats, each in (0, 1], adding up to 1 (UsageError)."""
    if isinstance(fractions, str):
        items = [x.strip() for x in fractions.split(",")]
        try:
            values = [float(x) for x in items]
        except ValueError:
            raise UsageError(f"--fractions {fractions}: not a list of numbers like "
                             "0.8,0.1,0.1") from None
    else:
        values = [float(x) for x in fractions]
        items = [repr(v).removesuffix(".0") for v in values]  # (shortest exact: not 1)
    shown = ",".join(items)  # as given: 1e-400 is not shown as 0, nor 1.0000001 as 1
    if not values:
        raise UsageError("--fractions: give at least one fraction")
    if not all(math.isfinite(v) and 0 < v <= 1 for v in values):
        raise UsageError(f"--fractions {shown}: each must be above 0 and at most 1")
    if abs(sum(values) - 1) > 1e-6:
        raise UsageError(f"--fractions {shown}: they add up to {sum(values):.10g}, not 1")
    return values


_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def parse_names(names, count: int) -> list[str]:
    """'train,val,test' or names -> a list of `count` distinct file-name-safe names."""
    if names is None:
        if count in DEFAULT_NAMES:
            return list(DEFAULT_NAMES[count])
        return [f"split{i}" for i in range(count)]
    values = [x.strip() for x in names.split(",")] if isinstance(names, str) else list(names)
    if len(values) != count:
        raise UsageError(f"--names {','.join(values)}: {len(values)} names for {count} "
                         "fractions")
    for v in values:
        if not _NAME.match(v):
            raise UsageError(f"--names: {v!r} is not a plain file name (letters, digits, "
                             "_ . -)")
    if len(set(values)) != len(values):
        raise UsageError(f"--names {','.join(values)}: a name given twice")
    return values


def _cuts(counts: np.ndarray, fractions: list[float]) -> np.ndarray:
    """(strata, splits-1) rank bounds. Each stratum's classes are shared out by the
    fractions, rounded down, and the classes left over go to the splits furthest behind
    their share, counting what earlier strata's rounding gave or took: each stratum within
    one class of its share, and the splits' sizes right in all (each stratum rounded alone
    sent every class of a stratum of one or two to the first split, none to the last)."""
    f = np.asarray(fractions, np.float64)
    cuts = np.zeros((len(counts), len(f) - 1), np.int64)
    behind = np.zeros(len(f))  # each split's share so far less what it was given
    for s, n in enumerate(counts):
        share = n * f
        k = np.floor(share).astype(np.int64)
        extra = int(n - k.sum())
        if extra > 0:
            k[np.argsort(-(share - k + behind), kind="stable")[:extra]] += 1
        behind += share - k
        cuts[s] = np.cumsum(k)[:-1]
    return cuts


def _match(cls: np.ndarray, rows: np.ndarray, seed: int) -> np.ndarray:
    """For each row record, the index of its class in `cls` (same form)."""
    words = np.concatenate([cls["w"], rows["w"]])
    u = form_hash(words, seed)
    flag = np.concatenate([np.zeros(len(cls), np.int8), np.ones(len(rows), np.int8)])
    p = sort_order(u, words, flag)
    del words, u
    is_cls = p < len(cls)
    last = np.maximum.accumulate(np.where(is_cls, np.arange(len(p)), 0))
    out = np.empty(len(rows), np.int64)
    out[p[~is_cls] - len(cls)] = p[last][~is_cls]
    if len(rows) and (not is_cls[0] or (cls["w"][out] != rows["w"]).any()):
        raise RuntimeError("split: a row whose class was not found (a bug)")
    return out


def split(run_dir, fractions, names=None, seed: int = 0, output_dir: str = ".",
          fmt: str = "parquet", stratify: str | None = "grade", *,
          memory_rows: int = MEMORY_ROWS, spill_dir: str | None = None) -> SplitSummary:
    """Every row with a class into OUTDIR/<name>.<fmt> per split, whole classes to a split;
    OUTDIR/split.json records the seed, fractions and counts."""
    import pyarrow as pa

    started = time.perf_counter()
    fractions = parse_fractions(fractions)
    names = parse_names(names, len(fractions))
    if fmt not in OUTPUT_FORMATS:
        raise UsageError(f"--format {fmt}: use parquet, csv or csv.gz")
    seed = check_seed(seed)
    stratify = None if stratify in (None, "", "none") else stratify
    outdir = check_output(output_dir, run_dir, is_folder=True)
    run = open_run(run_dir)
    strata = Strata(stratify)
    if strata.column is not None and strata.column not in run.columns:
        raise UsageError(f"--stratify {stratify}: no {strata.column} column in the results"
                         + (" (a run made with --rate has it)" if strata.column == "ser" else ""))
    k = max(1, math.ceil(run.rows / memory_rows))
    m = len(fractions)
    with spill_folder(spill_dir or scratch_near(outdir, is_folder=True), k > 1) as folder:
        buckets = pass1(run, folder, seed, memory_rows, strata)
        # Pass 2a: the classes of each bucket, and how many per stratum.
        kept = Spill(folder, "classes", buckets.k, RECORD, memory_rows)
        per_stratum = np.zeros(len(strata.labels), np.int64)
        for b in range(buckets.k):
            entries, starts = buckets.classes(b)
            cls = per_class(entries, starts)
            per_stratum = grown(per_stratum, len(strata.labels))
            per_stratum += np.bincount(cls["s"], minlength=len(strata.labels))
            kept.add(np.full(len(cls), b), cls)
        kept.finish()
        cuts = _cuts(per_stratum, fractions)
        # Pass 2b: ranks in (u, words) order within each stratum -> the split of each class,
        # then of each row.
        groups = group_parts(run, memory_rows)
        fates = Spill(folder, "fate", len(groups.parts), FATE, memory_rows)
        before = np.zeros(len(per_stratum), np.int64)
        classes = np.zeros((m, len(per_stratum)), np.int64)
        for b in range(buckets.k):
            cls = kept.read_all(b)
            s = cls["s"].astype(np.int64)
            order = np.argsort(s, kind="stable")
            first = np.searchsorted(s[order], np.arange(len(per_stratum)))
            rank = np.empty(len(cls), np.int64)
            rank[order] = before[s[order]] + np.arange(len(cls)) - first[s[order]]
            before += np.bincount(s, minlength=len(per_stratum))
            which = (rank[:, None] >= cuts[s]).sum(axis=1) if m > 1 else np.zeros(len(cls),
                                                                                 np.int64)
            np.add.at(classes, (which, s), 1)
            for chunk in buckets.spill.read(b, memory_rows):
                fate = np.empty(len(chunk), FATE)
                fate["key"] = chunk["key"]
                fate["v"] = which[_match(cls, chunk, seed)]
                fates.add(groups.of(fate["key"]), fate)
        fates.finish()
        # Pass 3: the rows, in input order, to their split's file.
        schema = schema_of(run)
        outdir.makedirs()
        outs = Outputs(outdir, names, fmt, schema, folder or tempfile.gettempdir())
        rows = np.zeros(m, np.int64)
        with _or_discarded(outs, outdir):
            for g, parts in enumerate(groups.parts):
                known, where = read_fates(g, fates)
                for part in parts:
                    for batch in part_batches(part, schema.names):
                        key = (run.source_index(batch.column("source")) << ROW_BITS
                               | batch.column("row").to_numpy(zero_copy_only=False))
                        _, go = find_keys(key, known, where)
                        t = pa.Table.from_batches([batch])
                        for j in range(m):
                            take = np.flatnonzero(go == j)
                            if len(take):
                                take = take[np.argsort(key[take], kind="stable")]
                                outs.writers[j].write(t.take(take).cast(schema))
                                rows[j] += len(take)
            outs.close()
    summary = SplitSummary(run.shown, outdir.shown, names, fractions, seed, stratify,
                           [strata.label(i) for i in range(len(per_stratum))], classes, rows,
                           int(buckets.formless.sum()), [loc.name for loc in outs.locs])
    summary.seconds = time.perf_counter() - started
    info = {**summary.as_dict(), "run_id": run.manifest.get("run_id"), "format": fmt}
    _publish(outdir, outs, (json.dumps(info, indent=2) + "\n").encode())
    return summary


def _publish(outdir, outs: Outputs, info: bytes) -> None:
    """The new split in place of an earlier one in the folder, never a mix of the two: its
    split.json goes, then every file it names, then the new files come, split.json last.
    A stop (Ctrl-C, SIGTERM) waits till the end; after a kill the folder holds no split.json
    and only new files."""
    with stops_ignored(), _or_discarded(outs, outdir):
        earlier = _files_of_earlier_split(outdir)
        outdir.child("split.json").remove()
        for name in sorted(earlier):  # (also those the new split names: a kill between
            outdir.child(name).remove()  # two renames would leave one of each)
        testhooks.pause("split-publish", 5)
        outs.publish()
        outdir.child("split.json").write_atomic(info)


@contextlib.contextmanager
def _or_discarded(outs: Outputs, outdir):
    """On any failure inside, the outputs' temporary files go (a write refused: one line)."""
    try:
        yield
    except BaseException as exc:
        outs.discard()
        if isinstance(exc, OSError):
            raise RunFailed(f"cannot write {outdir.shown}: {why(exc)}") from None
        raise


def _files_of_earlier_split(outdir) -> set[str]:
    """The files an earlier split into this folder wrote (its split.json says), if any."""
    try:
        files = json.loads(outdir.child("split.json").read_bytes()).get("files", {})
    except (OSError, ValueError, AttributeError):
        return set()
    return {f for f in files.values() if isinstance(f, str) and "/" not in f and f} \
        if isinstance(files, dict) else set()


def schema_of(run: Run):
    with open_parquet(run.parts[0].loc) as pf:
        return pf.schema_arrow.remove_metadata()


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise UsageError(f"--seed {seed}: must be a whole number, 0 or more")
    return int(seed)


def main(run_dir: str, fractions: str, output_dir: str, names: str | None = None,
               seed: int = 0, fmt: str = "parquet", stratify: str | None = "grade",
               quiet: bool = False, memory_rows: int = MEMORY_ROWS,
               spill_dir: str | None = None) -> int:
    """`pipeline split DIR --fractions ... --output OUTDIR`: write the splits and
    OUTDIR/split.json, print a line and a table (classes per stratum) on stderr, return 0."""
    summary = split(run_dir, fractions, names, seed, output_dir, fmt, stratify,
                    memory_rows=memory_rows, spill_dir=spill_dir)
    if not quiet:
        print(summary.line(), file=sys.stderr)
        print(summary.table(), file=sys.stderr)
    return 0
