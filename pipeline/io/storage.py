"""Where bytes live: local paths and fsspec URLs behind one small interface.

`--input` and `--output` take local paths or URLs (`s3://`, `gs://`, `file://`, and
`http(s)://` for inputs). Credentials and endpoints come the way each store's library finds
them (for S3 the AWS environment variables and config files, AWS_ENDPOINT_URL included),
never from our options. A URL may still carry secrets (`user:password@`, a signed query
string): `redact` gives the form that may be written down anywhere (manifest, logs, stats,
results); the URL itself only ever travels inside tasks.

Writes are whole or absent: on local disk through a temporary sibling that is fsynced,
renamed into place, and its folder fsynced (a rename alone can leave an empty file after a
power cut); on an object store as one PUT.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pipeline.errors import InputError, RunFailed, UsageError

READ_STEP = 8 << 20


def is_url(text: str) -> bool:
    """True for 'scheme://...' with a scheme of two letters or more (not 'C:\\...')."""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and len(scheme) > 1 and scheme.replace("+", "").isalnum()


OBJECT_STORES = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl")


def redact(text: str) -> str:
    """A path or URL with its secrets removed: no user:password@, no query, no fragment;
    but an object store's `?` and `#` are its key's (s3://b/set#1.txt), kept."""
    if not is_url(text):
        return text
    parts = urlsplit(text)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    if parts.scheme.lower() in OBJECT_STORES:
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


_USERINFO = re.compile(r"\b([a-zA-Z][\w+.-]*://)[^/\s@]*@")
# a URL's query and fragment, but an object store's (part of its key)
_QUERY = re.compile(rf"\b(?!(?:{'|'.join(OBJECT_STORES)})://)"
                    r"([a-zA-Z][\w+.-]*://[^\s?#'\"]*)[?#][^\s'\"]*", re.IGNORECASE)
_SECRETS: set[str] = set()  # the secrets of every URL this process was given


def scrub(text: str) -> str:
    """Any text with the secrets of URLs removed: a URL's user:password@, query and
    fragment, and any secret of a URL given to this process wherever it appears (a
    library may quote one without its URL: 'Invalid bucket name "KEY:SECRET@bucket"')."""
    text = _QUERY.sub(r"\1", _USERINFO.sub(r"\1", text))
    for secret in _SECRETS:
        text = text.replace(secret, "***")
    return text


def _remember_secrets(text: str) -> None:
    """Note the secrets a URL carries, so that scrub() removes them anywhere."""
    parts = urlsplit(text)
    found = [parts.username, parts.password]
    if parts.scheme.lower() not in OBJECT_STORES:  # (there, a key's: no secret)
        found += [parts.query, parts.fragment]
        found += [v for _, _, v in (q.partition("=") for q in parts.query.split("&"))]
    if "@" in parts.netloc:
        found.append(parts.netloc.rsplit("@", 1)[0])
    _SECRETS.update(s for s in found if s and len(s) >= 4)


CONDITIONAL_STORES = ("s3", "s3a")  # conditional PUTs known to hold (Location.create)


def http_reason(exc: BaseException) -> str:
    """Why an http(s) request failed, in words: a TLS handshake with a plain-http server
    said as such, else the library's own line (secrets removed)."""
    text = scrub(str(exc)) or type(exc).__name__
    if "WRONG_VERSION_NUMBER" in text or "wrong version number" in text:
        return "the server does not speak TLS: is it an http:// URL?"
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return "the server's TLS certificate cannot be verified"
    return text


# The client libraries of the object stores, whose failures (no credentials, an endpoint
# that does not answer, access denied) are not OSErrors.
_STORE_LIBRARIES = frozenset({"botocore", "aiobotocore", "boto3", "s3fs", "gcsfs", "google",
                              "aiohttp", "adlfs", "azure"})


def store_failure(exc: BaseException) -> str | None:
    """An object store client's failure in words (`NoCredentialsError: Unable to locate
    credentials`), or None for an exception of another library."""
    if type(exc).__module__.split(".")[0] not in _STORE_LIBRARIES:
        return None
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@contextlib.contextmanager
def store_failures_as(error: type, shown: str, doing: str):
    """An object store's failure inside the block raised as `error`: `SHOWN: cannot be
    DOING (its words)`; any other exception as itself."""
    try:
        yield
    except Exception as exc:
        said = store_failure(exc)
        if said is None:
            raise
        raise error(f"{shown}: cannot be {doing} ({said})") from None


def why(exc: OSError) -> str:
    """An OSError's words without its errno number and path."""
    if exc.errno == errno.EROFS:
        return "read-only file system"
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    return exc.strerror or str(exc) or type(exc).__name__


class Location:
    """A file or folder on local disk or in an fsspec store."""

    def __init__(self, text: str):
        self.url = text
        self.local = not is_url(text) or text.startswith("file://")
        if not self.local:
            _remember_secrets(text)
            parts = urlsplit(text)
            if "@" in parts.netloc and parts.scheme.lower() in OBJECT_STORES:
                raise UsageError(
                    f"{redact(text)}: credentials in the URL (user:password@) are not used "
                    f"by {parts.scheme}://; give them as its library expects (for S3: "
                    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or ~/.aws)")
        if self.local:
            raw = text[len("file://"):] if text.startswith("file://") else text
            self.path = os.path.abspath(raw)
            self.shown = text
        else:
            self.path = ""
            self.shown = redact(text)
        self._fs = None

    def __repr__(self) -> str:
        return f"Location({self.shown!r})"

    def __getstate__(self) -> dict:
        return {"url": self.url, "local": self.local, "path": self.path, "shown": self.shown}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._fs = None
        if not self.local:
            _remember_secrets(self.url)

    # fsspec -------------------------------------------------------------------------

    @property
    def fs(self):
        """The fsspec filesystem of a URL (created on first use, in the process using it)."""
        if self._fs is None:
            import fsspec

            try:
                self._fs, self.path = fsspec.core.url_to_fs(self.url)
            except (ImportError, ValueError) as exc:
                raise UsageError(f"{self.shown}: {exc}") from None
        return self._fs

    def child(self, name: str) -> Location:
        """A file or folder inside this folder."""
        if self.local:
            return Location(os.path.join(self.path, name))
        base = self.url.rstrip("/")
        loc = Location(f"{base}/{name}")
        loc._fs = self._fs
        if self._fs is not None:
            loc.path = f"{self.path.rstrip('/')}/{name}"
        return loc

    @property
    def name(self) -> str:
        return os.path.basename((self.path if self.local else urlsplit(self.url).path)
                                .rstrip("/"))

    # Reading ------------------------------------------------------------------------

    def size(self) -> int:
        if self.local:
            return os.stat(self.path).st_size
        return int(self.fs.info(self.path)["size"])

    def identity(self) -> dict:
        """What changes when the file is replaced or edited: size, mtime, ctime and inode
        (ctime: an edit whose mtime is set back, by touch -d, cp -p or rsync -t, still
        moves it), or size and ETag."""
        if self.local:
            st = os.stat(self.path)
            return {"size": st.st_size, "mtime_ns": st.st_mtime_ns,
                    "ctime_ns": st.st_ctime_ns, "inode": st.st_ino}
        info = self.fs.info(self.path)
        return {"size": int(info.get("size", 0)),
                "etag": str(info.get("ETag") or info.get("etag") or info.get("md5Hash")
                            or info.get("mtime") or info.get("LastModified") or "")}

    def mtime(self) -> float:
        """When the file was last written, in seconds since the epoch (0.0 when unknown)."""
        if self.local:
            return os.stat(self.path).st_mtime
        info = self.fs.info(self.path)
        when = info.get("LastModified") or info.get("mtime") or info.get("updated") \
            or info.get("created")
        if hasattr(when, "timestamp"):
            return float(when.timestamp())
        try:
            return float(when)
        except (TypeError, ValueError):
            return 0.0

    def read_at(self, offset: int, n: int) -> bytes:
        """n bytes at an offset (fewer at the end)."""
        if self.local:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                return os.pread(fd, n, offset)
            finally:
                os.close(fd)
        return self.fs.cat_file(self.path, start=offset, end=offset + n)

    @contextlib.contextmanager
    def reader(self, start: int, end: int | None = None):
        """A read(n) function over bytes [start, end) (to the end of the file for None)."""
        if self.local:
            f = open(self.path, "rb", buffering=0)
            f.seek(start)
        else:
            f = self.fs.open(self.path, "rb", block_size=READ_STEP, cache_type="none")
            f.seek(start)
        left = [None if end is None else end - start]

        def read(n: int) -> bytes:
            if left[0] is not None:
                n = min(n, left[0])
                if n <= 0:
                    return b""
            out = f.read(n)
            if left[0] is not None:
                left[0] -= len(out)
            return out

        try:
            yield read
        finally:
            f.close()

    def open_stream(self):
        """A binary file object for reading from the start."""
        if self.local:
            return open(self.path, "rb")
        return self.fs.open(self.path, "rb", block_size=READ_STEP)

    def kind(self) -> str:
        """'file' (seekable, re-readable), 'stream' (read once: a pipe, a FIFO, http), or
        'missing' / 'folder'."""
        if self.local:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                return "missing"
            except OSError as exc:
                raise InputError(f"{self.shown}: cannot be read ({why(exc)})") from None
            if stat.S_ISDIR(st.st_mode):
                return "folder"
            return "file" if stat.S_ISREG(st.st_mode) else "stream"
        if self.http:
            return "stream" if self._http_exists() else "missing"
        try:
            info = self.fs.info(self.path)
        except FileNotFoundError:
            return "missing"
        except OSError as exc:
            raise InputError(f"{self.shown}: cannot be read ({why(exc)})") from None
        return "folder" if info.get("type") == "directory" else "file"

    # Folders and writing ------------------------------------------------------------

    def exists(self) -> bool:
        if self.local:
            return os.path.exists(self.path)
        if self.http:
            return self._http_exists()
        return self.fs.exists(self.path)

    @property
    def http(self) -> bool:
        return not self.local and urlsplit(self.url).scheme.lower() in ("http", "https")

    def _http_exists(self) -> bool:
        """Whether an http(s) URL is there (404 or 410: not); InputError with the reason
        when the server cannot be asked (refused, TLS with a plain-http server, ...)."""
        try:
            self.fs.info(self.path)
        except FileNotFoundError as exc:  # fsspec says so for every failure: which?
            cause = exc.__cause__ or exc.__context__
            if cause is None or getattr(cause, "status", None) in (404, 410):
                return False
            raise InputError(f"{self.shown}: cannot be read ({http_reason(cause)})") from None
        except Exception as exc:  # refused, a TLS handshake with a plain server, ...
            raise InputError(f"{self.shown}: cannot be read ({http_reason(exc)})") from None
        return True

    def is_dir(self) -> bool:
        if self.local:
            return os.path.isdir(self.path)
        try:
            return self.fs.isdir(self.path)
        except OSError:
            return False

    def listdir(self) -> list[str]:
        """Names in this folder ([] when it does not exist)."""
        if self.local:
            try:
                return sorted(os.listdir(self.path))
            except (FileNotFoundError, NotADirectoryError):
                return []
        try:
            self.fs.invalidate_cache(self.path)
            entries = self.fs.ls(self.path, detail=False)
        except FileNotFoundError:
            return []
        return sorted({e.rstrip("/").rsplit("/", 1)[-1] for e in entries})

    def store_exists(self) -> bool:
        """Whether the bucket (or container) of an object-store URL exists; True for
        anything else. A run creates its folder, never a bucket."""
        if self.local or urlsplit(self.url).scheme.lower() not in OBJECT_STORES:
            return True
        try:
            fs = self.fs  # (which also sets self.path, the URL's path for the store)
            bucket = self.path.strip("/").split("/", 1)[0]
            if not bucket:
                return False
            if fs.exists(bucket):
                return True
            # `exists` says False for any failure: ask again, so that no credentials or an
            # endpoint that does not answer is said as such (exits: "the object store
            # failed"), not as a missing bucket
            fs.info(bucket)
            return True
        except PermissionError:
            raise  # refused (wrong credentials, no right): it may well exist
        except OSError:  # FileNotFoundError among them: no such bucket
            return False

    def makedirs(self) -> None:
        """Make the folder (and its parents); RunFailed with one line when that fails."""
        try:
            if self.local:
                os.makedirs(self.path, exist_ok=True)
            else:
                self.fs.makedirs(self.path, exist_ok=True)
        except OSError as exc:
            raise RunFailed(f"cannot create folder {self.shown}: {why(exc)}") from None

    def read_bytes(self) -> bytes:
        if self.local:
            with open(self.path, "rb") as f:
                return f.read()
        return self.fs.cat_file(self.path)

    def remove(self) -> None:
        """Delete a file (nothing when it is absent)."""
        try:
            if self.local:
                os.unlink(self.path)
            else:
                self.fs.rm_file(self.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise RunFailed(f"cannot remove {self.shown}: {why(exc)}") from None

    def remove_tree(self) -> None:
        if self.local:
            import shutil

            shutil.rmtree(self.path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(self.path, recursive=True)

    def write_atomic(self, data: bytes | Callable[[object], None],
                     sync_folder: bool = True,
                     before_publish: Callable[[], None] | None = None) -> None:
        """Write a file whole or not at all (bytes, or a function writing to a binary file).

        RunFailed (exit 3) with one line naming the file when the store refuses. Locally the
        file is fsynced before its rename, and its folder after it unless `sync_folder` is
        False (the caller then syncs the folder once for many files). `before_publish` is
        called when the file is ready to appear under its name, and may still refuse it by
        raising (then nothing appears).
        """
        try:
            if self.local:
                _write_local(self.path, data, sync_folder, before_publish)
            else:
                if callable(data):
                    import io

                    buf = io.BytesIO()
                    data(buf)
                    data = buf.getvalue()
                if before_publish is not None:
                    before_publish()
                self.fs.pipe_file(self.path, data)
        except OSError as exc:
            raise RunFailed(f"cannot write {self.shown}: {why(exc)}") from None

    def create(self, data: bytes, replacing: str | None = None) -> None:
        """Write a small object only if no object has its name, or with `replacing` only if
        the one there still has that ETag: one conditional PUT (S3's If-None-Match and
        If-Match), so that of two writers one wins. FileExistsError when another got there
        first; UsageError for a store that cannot write on a condition."""
        if urlsplit(self.url).scheme.lower() not in CONDITIONAL_STORES:
            raise UsageError(f"{self.shown}: this store cannot write an object on a "
                             f"condition (only {', '.join(CONDITIONAL_STORES)}:// can)")
        try:
            if replacing is None:
                self.fs.pipe_file(self.path, data, mode="create")
            else:
                self.fs.pipe_file(self.path, data, IfMatch=replacing)
        except FileExistsError:
            raise
        except OSError as exc:  # s3fs says a failed If-Match only in words (HTTP 412)
            if "pre-condition" in str(exc) or "PreconditionFailed" in str(exc):
                raise FileExistsError(self.shown) from None
            raise RunFailed(f"cannot write {self.shown}: {why(exc)}") from None

    def etag(self) -> str:
        """An object's ETag ('' when the store gives none)."""
        self.fs.invalidate_cache(self.path)
        return str(self.fs.info(self.path).get("ETag") or "")

    def sync(self) -> None:
        """Make the renames in this (local) folder durable."""
        if self.local:
            fsync_dir(self.path)


def _write_local(path: str, data, sync_folder: bool = True, before_publish=None) -> None:
    folder, name = os.path.split(path)
    # A name of its own per attempt: two attempts of one task may write at the same time.
    tmp = os.path.join(folder, f".{name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if before_publish is not None:
            before_publish()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync_folder:
        fsync_dir(folder)


def fsync_dir(path: str) -> None:
    """fsync a folder, so the names created in it survive a power cut."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def stdin_stream():
    """Standard input as a binary stream."""
    return sys.stdin.buffer


def within(loc: Location, folder: Location) -> bool:
    """Whether `loc` is `folder` or inside it (the same store, a path under its path)."""
    if loc.local != folder.local:
        return False
    if loc.local:
        here, there = os.path.realpath(loc.path), os.path.realpath(folder.path)
        return here == there or here.startswith(there.rstrip(os.sep) + os.sep)
    a, b = urlsplit(loc.url), urlsplit(folder.url)
    if (a.scheme, a.hostname, a.port) != (b.scheme, b.hostname, b.port):
        return False
    here, there = a.path.rstrip("/"), b.path.rstrip("/")
    return here == there or here.startswith(there + "/")


def as_location(text: str | Path | Location) -> Location:
    return text if isinstance(text, Location) else Location(str(text))
