"""How the kernels are compiled: ahead of time where setup could, else by numba at first use.

Every numba function of the package is declared through this module:

    @kernel("(u1[:, ::1], readonly u1[::1]) -> b1[::1]")   an entry point, called from Python
    @helper() / @helper(inline="always")                   called only from other kernels
    @intrinsic                                             LLVM code for a helper

`make kernels` (run by `make solve-dataset`, `test` and `bench`) runs `python -m
pipeline.compiled`, which compiles every entry point with numba's ahead-of-time compiler
(numba.pycc, for this CPU and its features) into one extension module,
`pipeline/_kernels_<digest>.so`. The digest hashes the kernels' own code (`kernel_code`:
the decorated functions, the module-level tables they read and the plain functions that
make them, without docstrings, comments or layout, so that a message in a Python function
beside the kernels asks for no new build), numpy's version and the CPU's feature flags: a
module can be loaded only by the code it was built from, on a CPU that runs it. Each
file's digest is kept in `.kernels-digests.json` by its size and mtime, so a process
parses a source only after it changed. A process that finds its module calls those
functions and never imports numba: numba's import and the typing context it builds before
its first cache load are about half a second of every worker's start. Anywhere else (no C
compiler at setup, an edited kernel, another CPU, `PIPELINE_KERNELS=jit`) the decorators
hand the functions to numba, which compiles them at first use and caches them in a folder
named by the same digest (`.numba-cache/<digest>/`: numba's own key, a function's file,
misses a constant imported from another kernel module).

Signatures: the arguments in numba's notation, arrays C-contiguous (`u1[:, ::1]`), the
ones a kernel only reads marked `readonly` (then a writable array is accepted too), then
`->` and the result. The compiled module's functions check no argument (a wrong dtype
would be read as the wrong type), so each is called through a guard that checks the
dtype, dimensions, contiguity, alignment and, for the others, writability.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import operator
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MODE_ENV = "PIPELINE_KERNELS"  # "jit": never load the compiled module
# The modules that declare kernels, in the order the build imports them. Their sources
# (and this file's) make the digest.
MODULES = ("sudoku.check", "sudoku.intrinsics", "sudoku.engine", "sudoku.grid",
           "sudoku.symmetry", "sudoku.canonical", "sudoku.rate.board", "sudoku.rate.techniques",
           "sudoku.rate.chains", "sudoku.rate.plus", "sudoku.rate.nested", "sudoku.rate.dynamic",
           "sudoku.rate.path", "io.reader", "io.records", "io.classes")
HERE = Path(__file__).resolve().parent


@dataclass
class _Declared:
    module: str
    name: str
    fn: object
    signature: str
    options: dict

    @property
    def export(self) -> str:
        """Its name in the compiled module."""
        return f"{self.module.rsplit('.', 1)[-1]}_{self.name.lstrip('_')}"


_DECLARED: list[_Declared] = []
_LOADED: list = []  # [module or None], once a process


def kernel(signature: str, lazy: bool = False, **options):
    """An entry point: the compiled module's function when there is one, else numba's
    njit(cache=True, **options) of it (compiled at its first call). `lazy`: numba is not
    even imported before that call (for a module the parent imports too)."""

    def wrap(fn):
        declared = _Declared(fn.__module__, fn.__name__, fn, signature, options)
        _DECLARED.append(declared)
        aot = loaded()
        if aot is not None:
            return _guarded(getattr(aot, declared.export), declared)
        return _Lazy(fn, options) if lazy else _jit(fn, options)

    return wrap


def _jit(fn, options):
    from numba import njit

    _cache_by_digest()
    return _typed_plainly(njit(cache=True, **options)(fn))


def _typed_plainly(dispatcher):
    """numba compiles a function called from a kernel once for each set of argument types,
    and types a constant argument as its own value (`walk(..., -1, ...)`: Literal[int](-1)),
    so each constant passed meant one more compilation of the function, its callees' code
    optimised again inside it: about half the build's time. Its calls are typed here by the
    plain types instead."""
    from numba.core import types

    typed = dispatcher.get_call_template

    def get_call_template(args, kws):
        return typed(tuple(types.unliteral(a) for a in args),
                     {k: types.unliteral(v) for k, v in kws.items()})

    dispatcher.get_call_template = get_call_template
    return dispatcher


CACHE_DIR = HERE / ".numba-cache"  # numba's cache, a folder per digest of the kernels' code


def _cache_by_digest() -> None:
    """Point numba's cache at a folder named by the digest of every kernel module's code.

    numba keys a cached function by its own source file only: a constant a kernel imports
    from another module (a technique's number, a table) can change under a cached
    function, which then runs the old machine code, and the ahead-of-time build would
    compile that code in too. A folder per digest makes any change of kernel code a cold
    cache. A NUMBA_CACHE_DIR of the user's gets the digest's folder inside it."""
    from numba.core import config

    if getattr(_cache_by_digest, "done", False):
        return
    _cache_by_digest.done = True
    base = Path(os.environ["NUMBA_CACHE_DIR"]) if os.environ.get("NUMBA_CACHE_DIR") \
        else CACHE_DIR
    config.CACHE_DIR = str(base / _sources_digest())


def _sources_digest() -> str:
    """A digest of the kernel modules' code and numpy's version (not the CPU's: numba's
    own cache index tells CPUs apart)."""
    h = hashlib.blake2b(digest_size=8)
    h.update(np.__version__.encode())
    h.update((HERE / "compiled.py").read_bytes())
    known = _load_digests()
    before = json.dumps(known, sort_keys=True)
    for name in MODULES:
        h.update(_code_digest(source_path(name), known).encode())
    if json.dumps(known, sort_keys=True) != before:
        _save_digests(known)
    return h.hexdigest()


class _Lazy:
    """numba's function, made at the first call."""

    def __init__(self, fn, options):
        self.fn, self.options, self.jitted = fn, options, None

    def __call__(self, *args):
        if self.jitted is None:
            self.jitted = _jit(self.fn, self.options)
        return self.jitted(*args)


def helper(**options):
    """A function only kernels call: numba's when kernels are compiled here, else unused.
    Its options stay on it (`helper_options`), for a copy compiled the same way."""

    def wrap(fn):
        if loaded() is not None:
            return fn
        jitted = _jit(fn, options)
        jitted.helper_options = options
        return jitted

    return wrap


def intrinsic(fn=None, *, python=None):
    """LLVM code generation for kernels (numba.extending.intrinsic). With the compiled
    module, `python`: the same in Python, for a helper run as Python (tests call some)."""
    if fn is None:
        return lambda f: intrinsic(f, python=python)
    if loaded() is not None:
        return python if python is not None else fn
    from numba.extending import intrinsic as numba_intrinsic

    return numba_intrinsic(fn)


def loaded():
    """The compiled module of these sources and this CPU, or None (then numba compiles)."""
    if not _LOADED:
        _LOADED.append(_load())
    return _LOADED[0]


def _load():
    if os.environ.get(MODE_ENV, "") == "jit":
        return None
    name = module_name()
    if name is None or not any(HERE.glob(f"{name}.*")):
        return None
    import importlib

    try:
        return importlib.import_module(f"pipeline.{name}")
    except ImportError:  # built against another numpy, say: numba compiles instead
        return None


def module_name() -> str | None:
    """`_kernels_<digest>`; None where the CPU's features cannot be read."""
    flags = _cpu_flags()
    if flags is None:
        return None
    h = hashlib.blake2b(digest_size=8)
    h.update(flags.encode())
    h.update(_sources_digest().encode())  # the kernels' code, numpy, the build itself
    return f"_kernels_{h.hexdigest()}"


def source_path(module: str) -> Path:
    """The source file of a module of the package ('sudoku.engine')."""
    return HERE.joinpath(*module.split(".")).with_suffix(".py")


def _cpu_flags() -> str | None:
    """The CPU feature flags the kernel reports (Linux), sorted."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return " ".join(sorted(value.split()))
    except OSError:
        pass
    return None


# ---------------------------------------------------------------------------------------
# What a kernel module's compiled code depends on


KERNEL_DECORATORS = ("kernel", "helper", "intrinsic")
DIGESTS = ".kernels-digests.json"  # per source file: its stat -> its kernel code's digest


def kernel_code(source: str) -> str:
    """The part of a module's source that its compiled kernels are made of, as a canonical
    text: the kernels, helpers and intrinsics, the module-level statements (imports, the
    constants and tables they read) and every plain function those use, without docstrings,
    comments or layout. A message in a Python function beside the kernels is not in it, so
    editing one does not ask for a new build."""
    tree = _without_docstrings(ast.parse(source))  # the module's own too
    defs = {n.name: n for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
    kept: set[int] = set()
    wanted: set[str] = set()
    for node in tree.body:
        if node in defs.values() and not _is_kernel(node):
            continue
        kept.add(id(node))
        wanted |= _names(node)
    while wanted:
        node = defs.get(wanted.pop())
        if node is not None and id(node) not in kept:
            kept.add(id(node))
            wanted |= _names(node)
    # in the source's order: the set's order changes with each process's hash seed, and
    # the digest must not (a process that cannot read the digests' file computes its own)
    return "\n".join(ast.dump(n) for n in tree.body if id(n) in kept)


def _is_kernel(node) -> bool:
    for d in getattr(node, "decorator_list", ()):
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in KERNEL_DECORATORS:
            return True
    return False


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _without_docstrings(node):
    for n in ast.walk(node):
        body = getattr(n, "body", None)
        if (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module)
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            n.body = body[1:] or [ast.Pass()]
    return node


def _code_digest(path: Path, known: dict) -> str:
    """The digest of a source file's kernel code, from `known` when the file is as it was
    (its mtime, size and inode), else computed (and put in `known`)."""
    st = path.stat()
    key = str(path.relative_to(HERE))
    stamp = [st.st_mtime_ns, st.st_size, st.st_ino]
    entry = known.get(key)
    if entry and entry[:3] == stamp:
        return entry[3]
    digest = hashlib.blake2b(kernel_code(path.read_text()).encode(), digest_size=16).hexdigest()
    known[key] = [*stamp, digest]
    return digest


def _load_digests() -> dict:
    try:
        return json.loads((HERE / DIGESTS).read_text())
    except (OSError, ValueError):
        return {}


def _save_digests(known: dict) -> None:
    """Written to a temporary file and renamed: a reader never sees half of it. A package
    folder that cannot be written (an installed, read-only one) just recomputes."""
    tmp = HERE / f"{DIGESTS}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps(known, sort_keys=True))
        os.replace(tmp, HERE / DIGESTS)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


# ---------------------------------------------------------------------------------------
# Signatures and the guard


_ARRAY = re.compile(r"(readonly\s+)?(\w+)\[([^\]]*)\]$")


@dataclass(frozen=True)
class _Arg:
    dtype: np.dtype
    ndim: int  # 0: a scalar
    writable: bool


def _parse(signature: str) -> tuple[list[str], str]:
    args, _, result = signature.partition("->")
    inner = args.strip()
    if not (inner.startswith("(") and inner.endswith(")")):
        raise ValueError(f"not a kernel signature: {signature!r}")
    parts = [p.strip() for p in re.split(r",(?![^\[]*\])", inner[1:-1]) if p.strip()]
    return parts, result.strip()


def _arg(text: str) -> _Arg:
    m = _ARRAY.match(text)
    if m is None:
        return _Arg(np.dtype(text), 0, False)
    dims = [d.strip() for d in m.group(3).split(",")]
    if dims[-1] != "::1" or any(d != ":" for d in dims[:-1]):
        raise ValueError(f"kernel arrays are C-contiguous ([:, ::1]): {text!r}")
    return _Arg(np.dtype(m.group(2)), len(dims), m.group(1) is None)


def _guarded(fn, declared: _Declared):
    """The compiled function behind a check of every argument's type."""
    specs = [_arg(a) for a in _parse(declared.signature)[0]]
    what = f"{declared.module}.{declared.name}"

    def call(*args):
        if len(args) != len(specs):
            raise TypeError(f"{what} takes {len(specs)} arguments, got {len(args)}")
        for k, (a, s) in enumerate(zip(args, specs, strict=True)):
            if s.ndim == 0:
                if s.dtype.kind == "b" and not isinstance(a, bool | np.bool_):
                    raise TypeError(f"{what}: argument {k} must be a bool")
                if s.dtype.kind in "iu":
                    operator.index(a)  # an integer, not a float or an array
                continue
            if not (isinstance(a, np.ndarray) and a.dtype == s.dtype and a.ndim == s.ndim
                    and a.flags.c_contiguous and a.flags.aligned
                    and (a.flags.writeable or not s.writable)):
                raise TypeError(f"{what}: argument {k} must be a C-contiguous"
                                f"{' writable' if s.writable else ''} {s.dtype} array of "
                                f"{s.ndim} dimension(s)")
        return fn(*args)

    call.__name__ = declared.name
    call.__doc__ = getattr(declared.fn, "__doc__", None)
    return call


def _numba_type(text: str):
    """A type of a signature, as numba's."""
    from numba import from_dtype, types

    if text == "void":
        return types.void
    if text.startswith("(") and text.endswith(")"):
        return types.Tuple([_numba_type(t.strip()) for t in text[1:-1].split(",") if t.strip()])
    a = _arg(text)
    scalar = from_dtype(a.dtype)
    if a.ndim == 0:
        return scalar
    return types.Array(scalar, a.ndim, "C", readonly=not a.writable)


# ---------------------------------------------------------------------------------------
# The build


def build(quiet: bool = False) -> str:
    """Compile every declared entry point into `_kernels_<digest>`, unless it is there
    already; returns what happened, in one line."""
    name = module_name()
    if name is None:
        return "kernels: this CPU's features cannot be read; numba compiles them at first use"
    if any(HERE.glob(f"{name}.*")):
        return f"kernels: {name} is up to date"
    os.environ[MODE_ENV] = "jit"  # the build needs numba's functions, not a module
    _LOADED[:] = [None]
    import importlib
    import tempfile
    import warnings

    for module in MODULES:
        importlib.import_module(f"pipeline.{module}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc's pending deprecation: it still works
        from numba.core import codegen
        from numba.core.types import Tuple, UniTuple
        from numba.pycc import CC

    # pycc compiles for the CPU model's features; this machine may lack some of them (a
    # VM): ask for exactly the ones it has, as numba's JIT does.
    codegen.AOTCPUCodegen._customize_tm_features = codegen.CPUCodegen._get_host_cpu_features
    exports = [d.export for d in _DECLARED]
    if len(set(exports)) != len(exports):
        raise RuntimeError(f"two kernels share a name in the module: {sorted(exports)}")
    with tempfile.TemporaryDirectory(dir=HERE, prefix=".kernels-") as tmp:
        cc = CC(name)
        cc.output_dir = tmp
        cc.target_cpu = "host"
        cc.verbose = not quiet
        for d in _DECLARED:
            args, result = _parse(d.signature)
            ret = _numba_type(result)
            if isinstance(ret, Tuple) and len(set(ret.types)) == 1:
                ret = UniTuple(ret.types[0], len(ret.types))
            cc.export(d.export, ret(*[_numba_type(a) for a in args]))(d.fn)
        cc.compile()
        built = next(Path(tmp).glob(f"{name}.*"))
        for old in HERE.glob("_kernels_*"):
            old.unlink()
        os.replace(built, HERE / built.name)
    return f"kernels: compiled ahead of time into pipeline/{built.name}"


def main(argv: list[str] | None = None) -> int:
    """`python -m pipeline.compiled [--strict]`: build the module. A module not built is not
    an error (numba compiles at first use), unless --strict finds the C compiler Python
    names (CI): then it exits 1, so the tests that need the module cannot skip quietly."""
    strict = "--strict" in (sys.argv[1:] if argv is None else argv)
    try:
        said = build(quiet=True)
        built = module_name() is not None
    except Exception as exc:  # noqa: BLE001  (any failure leaves numba to compile)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        said = f"kernels: not compiled ahead of time ({first}); numba compiles them at first use"
        built = False
    print(said, file=sys.stdout if built else sys.stderr)
    return 1 if strict and not built and _c_compiler() else 0


def _c_compiler() -> str | None:
    """The C compiler Python's build tools would call (numba.pycc's), if it is here."""
    import shutil
    import sysconfig

    cc = (sysconfig.get_config_var("CC") or "cc").split()
    return shutil.which(cc[0]) if cc else None


if __name__ == "__main__":  # run as pipeline.compiled, whose list the kernel modules fill
    from pipeline import compiled

    sys.exit(compiled.main())
