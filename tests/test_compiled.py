"""pipeline.compiled: the ahead-of-time module, its name, its guard, and that it says what
numba's compilation of the same sources says."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, SAMPLE_CSV, comparable, needs_aot, read_results

from pipeline import compiled


def _declared(signature: str, calls: list):
    def fn(*args):
        calls.append(args)
        return "called"

    d = compiled._Declared("pipeline.example", "_fn", fn, signature, {})
    return compiled._guarded(fn, d)


def test_guard_passes_the_declared_types_through():
    calls: list = []
    f = _declared("(readonly u1[:, ::1], i8, b1, i4[::1]) -> void", calls)
    grids = np.zeros((2, 81), np.uint8)
    grids.flags.writeable = False  # readonly: a read-only array is fine
    out = np.zeros(3, np.int32)
    assert f(grids, 5, True, out) == "called"
    assert f(np.zeros((0, 81), np.uint8), np.int64(1), np.bool_(False), out) == "called"
    assert len(calls) == 2


@pytest.mark.parametrize("bad", [
    "dtype", "ndim", "strided", "fortran", "readonly-out", "float-int", "int-bool", "count",
])
def test_guard_refuses_what_the_compiled_function_would_misread(bad):
    calls: list = []
    f = _declared("(readonly u1[:, ::1], i8, b1, i4[::1]) -> void", calls)
    grids, out = np.zeros((4, 81), np.uint8), np.zeros(3, np.int32)
    args = [grids, 5, True, out]
    if bad == "dtype":
        args[0] = grids.astype(np.int64)
    elif bad == "ndim":
        args[0] = grids.reshape(-1)
    elif bad == "strided":
        args[0] = grids[::2]
    elif bad == "fortran":
        args[0] = np.asfortranarray(grids)
    elif bad == "readonly-out":
        out.flags.writeable = False
    elif bad == "float-int":
        args[1] = 5.0
    elif bad == "int-bool":
        args[2] = 1
    else:
        args = args[:3]
    with pytest.raises(TypeError):
        f(*args)
    assert calls == []


def test_signatures_are_c_contiguous_arrays_or_scalars():
    assert compiled._parse("(u1[:, ::1], i8) -> b1[::1]") == (["u1[:, ::1]", "i8"], "b1[::1]")
    assert compiled._parse("() -> i8") == ([], "i8")
    assert compiled._arg("readonly i8[::1]") == compiled._Arg(np.dtype(np.int64), 1, False)
    with pytest.raises(ValueError):
        compiled._arg("u1[:, :]")  # any layout: the module would not know the strides
    with pytest.raises(ValueError):
        compiled._parse("u1[::1] -> void")


def test_every_kernel_signature_reads_as_numba_types():
    """What the build hands to numba.pycc, for every declared entry point."""
    for name in compiled.MODULES:
        __import__(f"pipeline.{name}")
    assert {d.export for d in compiled._DECLARED} >= {"engine_solve_all", "check_is_solution",
                                                      "records_scan", "reader_gather"}
    for d in compiled._DECLARED:
        args, result = compiled._parse(d.signature)
        compiled._numba_type(result)
        for a in args:
            compiled._numba_type(a)


def test_every_module_of_compiled_code_is_in_the_digest():
    """A module with compiled helpers or kernels that MODULES leaves out is not in the
    digest: an edit of it left the built module in use, stale (rate/plus.py was)."""
    root = Path(compiled.HERE)
    declaring = {".".join(p.relative_to(root).with_suffix("").parts)
                 for p in root.rglob("*.py")
                 if p.name != "compiled.py" and "@compiled." in p.read_text()}
    assert declaring <= set(compiled.MODULES), declaring - set(compiled.MODULES)


def test_module_name_follows_the_sources_and_the_cpu(tmp_path, monkeypatch):
    for name in ("compiled", *compiled.MODULES):
        dest = tmp_path.joinpath(*name.split(".")).with_suffix(".py")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(compiled.source_path(name), dest)
    monkeypatch.setattr(compiled, "HERE", tmp_path)
    first = compiled.module_name()
    assert first is not None and first.startswith("_kernels_")
    # Words change nothing: a comment, a docstring, a message in a Python function.
    engine = tmp_path / "sudoku" / "engine.py"
    engine.write_text(engine.read_text() + "\n# an edit\n")
    assert compiled.module_name() == first
    grid = tmp_path / "sudoku" / "grid.py"
    text = grid.read_text()
    message, docstring = '"grid has no clash"', '"""Encode puzzle strings'
    assert text.count(message) == 1 and text.count(docstring) == 1
    grid.write_text(text.replace(message, '"no digit repeats in this grid"')
                    .replace(docstring, '"""Turn puzzle strings'))
    assert compiled.module_name() == first
    head = '"""Compiled Sudoku solver kernel (numba).'  # the module's own docstring
    assert engine.read_text().startswith(head)
    engine.write_text(engine.read_text().replace(head, '"""The solver kernel, compiled.', 1))
    assert compiled.module_name() == first
    # Code does: a kernel, a table a kernel reads.
    engine.write_text(engine.read_text() + "\n\n@compiled.helper()\ndef _more(x):\n"
                      "    return x + 1\n")
    second = compiled.module_name()
    assert second != first
    engine.write_text(engine.read_text() + "\nMORE = np.arange(3)\n")
    assert compiled.module_name() not in (first, second)
    monkeypatch.setattr(compiled, "_cpu_flags", lambda: "fpu sse2")
    other_cpu = compiled.module_name()
    assert other_cpu not in (None, first)
    monkeypatch.setattr(compiled, "_cpu_flags", lambda: None)
    assert compiled.module_name() is None  # features unknown: never a compiled module


def test_module_name_is_the_same_in_every_process():
    """A process that cannot use the digests' file (a read-only package, a copy on another
    machine, files touched) works the name out again: whatever its hash seed (the order
    of Python's sets), it must find the module that was built."""
    code = ("from pipeline import compiled\n"
            "compiled._load_digests = dict\n"
            "compiled._save_digests = lambda known: None\n"
            "print(compiled.module_name())\n")
    names = set()
    for seed in ("0", "1", "2", "3", "4"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, cwd=REPO, env={**os.environ, "PYTHONHASHSEED": seed})
        names.add(out.stdout.strip())
    assert len(names) == 1 and names.pop().startswith("_kernels_")


def test_a_module_not_built_is_an_error_only_when_strict(monkeypatch, capsys):
    def fails(quiet=False):
        raise RuntimeError("error: command 'gcc' failed\nmore lines")

    monkeypatch.setattr(compiled, "build", fails)
    monkeypatch.setattr(compiled, "_c_compiler", lambda: "/usr/bin/gcc")
    assert compiled.main([]) == 0  # numba compiles at first use: a user's make goes on
    err = capsys.readouterr().err
    assert err == ("kernels: not compiled ahead of time (error: command 'gcc' failed); numba "
                   "compiles them at first use\n")
    assert compiled.main(["--strict"]) == 1  # CI: the tests that need it must not skip
    assert "not compiled ahead of time" in capsys.readouterr().err
    monkeypatch.setattr(compiled, "_c_compiler", lambda: None)  # no compiler: nothing to insist on
    assert compiled.main(["--strict"]) == 0
    monkeypatch.setattr(compiled, "_c_compiler", lambda: "/usr/bin/gcc")
    monkeypatch.setattr(compiled, "build", lambda quiet=False: "kernels: x is up to date")
    assert compiled.main(["--strict"]) == 0
    assert capsys.readouterr().out == "kernels: x is up to date\n"
    monkeypatch.setattr(compiled, "_cpu_flags", lambda: None)  # features unknown: no module
    assert compiled.main(["--strict"]) == 1


def test_numbas_cache_is_a_folder_per_digest_of_every_kernel_module(tmp_path):
    """numba keys a cached function by its own file: a constant a kernel imports from
    another module (here: the rater's technique numbers, when a name is added to the list)
    must not leave the old machine code in use, in numba's cache or in the compiled
    module built from it. A JIT process's cache folder is named by the digest of every
    kernel module's code, which that edit changes."""
    pkg = tmp_path / "pipeline"
    shutil.copytree(compiled.HERE, pkg, ignore=shutil.ignore_patterns(
        "__pycache__", "_kernels_*", ".numba-cache", ".kernels-digests.json"))
    code = ("from numba.core import config\nfrom pipeline import compiled\n"
            "compiled._cache_by_digest()\nprint(config.CACHE_DIR)")
    env = {**os.environ, "PIPELINE_KERNELS": "jit", "PYTHONPATH": str(tmp_path)}
    env.pop("NUMBA_CACHE_DIR", None)

    def cache_dir() -> str:
        return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=True).stdout.strip()

    first = cache_dir()
    assert first.startswith(str(pkg / ".numba-cache"))
    assert cache_dir() == first  # the same code, the same cache
    techniques = pkg / "sudoku" / "rate" / "techniques.py"
    text = techniques.read_text()
    techniques.write_text(text.replace('"Naked Quad", ', '"Naked Quad", "Another", ', 1))
    assert cache_dir() != first  # a cold cache
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    assert cache_dir().startswith(str(tmp_path / "mine"))


def test_a_function_called_with_constants_compiles_once_per_plain_types():
    """numba types a constant argument as its own value and compiled a function once for
    each constant a kernel passed it (the rater's `walk` sixteen times): the package's
    numba functions are typed by the plain types of their arguments."""
    from numba import njit

    def add(x, y):
        return x + y

    plain = njit(add)
    ours = compiled._typed_plainly(njit(add))

    @njit
    def calls(x):
        return plain(x, 1) + plain(x, 2) + plain(3, x) + ours(x, 1) + ours(x, 2) + ours(3, x)

    assert calls(5) == 2 * (6 + 7 + 8)
    assert len(plain.signatures) == 3  # numba's own way: one for each constant
    assert [tuple(map(str, s)) for s in ours.signatures] == [("int64", "int64")]


@needs_aot
def test_compiled_kernels_refuse_wrong_arrays_instead_of_misreading_them():
    from pipeline.sudoku import engine

    n = 1
    args = [np.zeros((n, 81), np.uint8), 2, np.zeros((n, 81), np.uint8), np.zeros(n, np.int8),
            np.zeros(n, np.int64), np.zeros(0, np.int64), np.zeros(engine.NODE, np.int32),
            np.zeros(4, np.int64), np.empty((engine.STACK_DEPTH, engine.NODE), np.int32)]
    engine._solve_all(*args)  # as declared: fine
    args[0] = np.zeros((n, 81), np.int64)
    with pytest.raises(TypeError):
        engine._solve_all(*args)


@needs_aot
def test_a_worker_starts_without_numba():
    code = ("import sys\n"
            "import pipeline.job.preload\n"
            "print(sorted(m for m in ('numba', 'llvmlite') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.split() == ["[]"]


@needs_aot
@pytest.mark.slow
def test_compiled_and_numba_kernels_give_the_same_results(run_process, tmp_path):
    """The bundled sample, canonical forms and all, through `pipeline run` once with the
    compiled module and once with numba's compilation of the same sources."""
    frames = []
    for mode in ("aot", "jit"):
        out = tmp_path / mode
        res = run_process("run", "--input", SAMPLE_CSV, "--output", out, "--canonical",
                          "--workers", "2", "--quiet",
                          env={compiled.MODE_ENV: mode})
        assert res.returncode == 0, res.stderr
        frames.append(comparable(read_results(out)))
    aot, jit = frames
    assert aot.height == jit.height > 0
    assert aot.equals(jit)
    assert set(aot["status"].unique()) >= {"solved"}


def test_public_functions_take_read_only_arrays():
    """Whatever compiled them: a kernel's inputs are declared `readonly` where it only
    reads them, so frozen arrays (Arrow buffers, memory maps) go in as they are."""
    from pipeline.sudoku import canonical, check, engine

    grids = np.zeros((3, 81), np.uint8)
    grids[:, :9] = np.arange(1, 10)
    grids.flags.writeable = False
    solutions, counts, _, _ = engine.solve_batch(grids, 2)
    assert list(counts) == [2, 2, 2]
    solutions.flags.writeable = False
    assert check.is_solution(grids, solutions).all()
    forms, autos = canonical.minlex(grids)
    assert forms.shape == (3, 81) and (autos >= 1).all()
