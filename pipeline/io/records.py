"""Records: where each one starts and ends in the bytes of an input, and which are rows.

One set of rules, used both by the planner (which counts the rows of every range) and by
the reader (which cuts a range into rows), so that the two can never disagree:

* A record ends at a line end: LF, CRLF or a lone CR (old Mac files).
* In a CSV, a field that starts with a quote runs to its closing quote, a doubled quote
  being a quote character, so that line ends and commas inside it are data (RFC 4180).
  Two limits keep one stray quote from swallowing the rest of a file: a quote opens a
  field only within the first MAX_RECORD bytes of its record, and a quote that finds no
  closing quote within MAX_RECORD bytes is an ordinary character. So past 2 x MAX_RECORD
  bytes no quote is open, and the end of any record is found with bounded memory.
* A record of whitespace only is blank; in a text or fixed-width file a record whose first
  other character is '#' is a comment. Records before the shape's `data_start` (a CSV
  header, leading comments, a count or title line) are the preamble. The rest are rows.

    bytes   |1,Q,"a\\nb"\\n|\\n|2,Q,ok\\r\\n|# x\\n|
    records  ^row          ^blank ^row       ^row in a CSV (a comment in a text file)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from pipeline import compiled


def hasher(data: bytes = b""):
    """The hash of a range's bytes: XXH3-128, a strong non-cryptographic hash at memory
    speed (sha256 cost as much as the rest of planning). It tells an edited input; it is
    no defence against someone forging one."""
    import xxhash

    return xxhash.xxh3_128(data)


MAX_RECORD = 1 << 20  # a longer record is one malformed row, its text kept truncated
KEEP = 200  # characters of an over-long record kept as its text
BLOCK = 8 << 20  # bytes read at a time

ROW, BLANK, COMMENT, PREAMBLE = 0, 1, 2, 3
# _scan's reasons for stopping
AT_STOP, AT_END, NEED_MORE, FULL = 0, 1, 2, 3

_LF, _CR, _QUOTE, _COMMA, _HASH = 10, 13, 34, 44, 35


def scan(buf, pos, stop, end, final, quotes, comments, data_start, max_record,
         starts, ends, kinds):
    """Records of buf[:end] starting at `pos` (a record start) and before `stop`.

    Fills starts/ends (the end excludes the line end) and kinds; returns (count, next, why)
    where `next` is where scanning stopped: the first record start at or after `stop`
    (AT_STOP), `end` (AT_END, only when `final`), the start of a record that needs more
    bytes to be decided (NEED_MORE), or the next record start when the arrays are full.

    Workers run it compiled (`_compiled`); the parent, deciding a shape on a file's first
    bytes, runs this very code as Python, so that the two cannot disagree and the parent
    need not load numba.
    """
    n = 0
    p = pos
    cap = len(starts)
    while p < end:
        if p >= stop:
            return n, p, AT_STOP
        if n == cap:
            return n, p, FULL
        s = p
        first = -1  # first byte that is not white space
        field_start = True
        q = p
        content_end = -1
        following = -1
        while q < end:
            c = buf[q]
            if c > _COMMA:  # a digit, a dot, a letter: nothing to decide (the common case)
                if first < 0:
                    first = c
                field_start = False
                q += 1
                continue
            if c == _LF:
                content_end = q
                following = q + 1
                break
            if c == _CR:
                if q + 1 < end:
                    content_end = q
                    following = q + 2 if buf[q + 1] == _LF else q + 1
                    break
                if final:
                    content_end = q
                    following = q + 1
                    break
                return n, s, NEED_MORE  # a CR last: is an LF next?
            if first < 0 and not (c == 32 or c == 9 or c == 11 or c == 12):
                first = c
            if quotes and c == _QUOTE and field_start and q - s < max_record:
                # Look for the closing quote within max_record bytes.
                r = q + 1
                closed = -1
                limit = q + max_record
                while r < end and r < limit:
                    if buf[r] == _QUOTE:
                        if r + 1 < end and buf[r + 1] == _QUOTE:
                            r += 2
                            continue
                        if r + 1 == end and not final:
                            break  # undecided: "" or a closing quote?
                        closed = r
                        break
                    r += 1
                if closed >= 0:
                    q = closed + 1
                    field_start = False
                    continue
                if r < limit and not final:
                    return n, s, NEED_MORE
                # No closing quote in reach: this quote is an ordinary character.
            field_start = c == _COMMA
            q += 1
        if content_end < 0:
            if not final:
                return n, s, NEED_MORE
            content_end = end
            following = end
        starts[n] = s
        ends[n] = content_end
        if s < data_start:
            kinds[n] = PREAMBLE
        elif first < 0:
            kinds[n] = BLANK
        elif comments and first == _HASH:
            kinds[n] = COMMENT
        else:
            kinds[n] = ROW
        n += 1
        p = following
    if final:
        return n, end, AT_END
    return n, p, NEED_MORE


# `scan` compiled (numba is imported only by its first call, if at all: the parent, which
# imports this module, runs `scan` as Python)
_compiled = compiled.kernel(
    "(readonly u1[::1], i8, i8, i8, b1, b1, b1, i8, i8, i8[::1], i8[::1], i1[::1]) "
    "-> (i8, i8, i8)", lazy=True, nogil=True)(scan)


def warm_up() -> None:
    """Load the compiled scanner and line counter (from numba's cache, without the
    compiled module)."""
    arr = np.frombuffer(b"a\n", dtype=np.uint8)
    out = np.empty(2, np.int64), np.empty(2, np.int64), np.empty(2, np.int8)
    _compiled(arr, 0, 2, 2, True, True, True, 0, MAX_RECORD, *out)
    _plain_counts(arr, True)


@dataclass
class Block:
    """Records found in one buffer: positions are offsets into `data`."""

    data: bytes
    base: int  # the input offset of data[0]
    starts: np.ndarray  # (n,) int64
    ends: np.ndarray  # (n,) int64, line end excluded
    kinds: np.ndarray  # (n,) int8
    long: dict[int, int]  # record index -> its length, for records over MAX_RECORD
    next_start: int = -1  # the input offset where the record after the last one starts

    def rows(self) -> np.ndarray:
        """Indices of the records that are rows."""
        return np.flatnonzero(self.kinds == ROW)


@dataclass
class Scan:
    """What a pass over records found: where it stopped, how many rows, the bytes' hash."""

    next_start: int
    rows: int
    digest: str  # of its bytes (records.hasher)
    quotes: bool  # a quote character was seen (in a CSV the record ends may depend on it)


class Rules:
    """How records are told apart in one input (from its shape)."""

    def __init__(self, quotes: bool, comments: bool, data_start: int,
                 max_record: int = MAX_RECORD):
        self.quotes = quotes
        self.comments = comments
        self.data_start = data_start
        self.max_record = max_record


Read = Callable[[int], bytes]  # read(n) -> up to n bytes, b"" only at the end


def first_start(read_at: Callable[[int, int], bytes], pos: int) -> int:
    """The first record start at or after input offset `pos`, by line ends alone (quotes
    aside); read_at(offset, n) reads n bytes there (fewer only at the end of the input)."""
    if pos == 0:
        return 0
    prev = read_at(pos - 1, 2)
    if len(prev) < 2:
        return pos  # at or past the end
    if prev[0] == _LF:
        return pos
    if prev[0] == _CR:
        return pos + 1 if prev[1] == _LF else pos
    at = pos
    step = 64 << 10
    while True:
        chunk = read_at(at, step)
        if not chunk:
            return at
        hits = [i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0]
        if not hits:
            at += len(chunk)
            continue
        i = min(hits)
        if chunk[i] == _LF:
            return at + i + 1
        after = chunk[i + 1 : i + 2] or read_at(at + i + 1, 1)
        return at + i + 2 if after == b"\n" else at + i + 1


def iter_batches(read: Read, start: int, stop: int, rules: Rules, *,
                 hasher=None, block: int | None = None, out: list | None = None
                 ) -> Iterator[Block]:
    """Batches of the records that start in [start, stop), `read` being positioned at
    `start` (a record start). The bytes consumed (up to the next record start at or after
    `stop`, or the end) go into `hasher`; `out`, if given, receives that next start and the
    bytes already read past it."""
    block = block or BLOCK
    pending = b""
    base = start
    eof = False
    cap = max(1024, block // 64)
    starts = np.empty(cap, np.int64)
    ends = np.empty(cap, np.int64)
    kinds = np.empty(cap, np.int8)
    while True:
        if not eof:
            more = read(block)
            eof = len(more) == 0
            data = pending + more if pending else more
        else:
            data = pending
        arr = np.frombuffer(data, dtype=np.uint8)
        n, nxt, why = _compiled(arr, 0, stop - base, len(arr), eof, rules.quotes,
                                rules.comments, rules.data_start - base, rules.max_record,
                                starts, ends, kinds)
        if n:
            yield Block(data, base, starts[:n].copy(), ends[:n].copy(), kinds[:n].copy(),
                        _long(starts[:n], ends[:n], rules.max_record), base + nxt)
        if hasher is not None:
            hasher.update(memoryview(data)[:nxt])
        if why in (AT_STOP, AT_END):
            if out is not None:
                out.extend((base + nxt, data[nxt:]))
            return
        pending = data[nxt:]
        base += nxt
        if why == NEED_MORE and eof:
            raise AssertionError("records: the scanner wants bytes past the end")
        if why == NEED_MORE and len(pending) > 2 * rules.max_record + 1:
            # No quote can be open this far into a record: find its end by line ends.
            batch, pending, consumed = _skip_long(pending, base, read, rules, hasher)
            yield batch
            base += consumed
            if pending is None or base >= stop:  # the input ended, or we are past stop
                if out is not None:
                    out.extend((base, pending or b""))
                return


def _long(starts: np.ndarray, ends: np.ndarray, max_record: int) -> dict[int, int]:
    lengths = ends - starts
    return {int(i): int(lengths[i]) for i in np.flatnonzero(lengths > max_record)}


def _long_batch(head: bytes, base: int, length: int, rules: Rules, taken: int) -> Block:
    """One over-long record, of which only the head is kept (`taken`: its bytes with its
    line end)."""
    keep = head[: 4 * KEEP]
    stripped = keep.lstrip(b" \t\x0b\x0c")
    kind = ROW if stripped and not (rules.comments and stripped[:1] == b"#") else (
        COMMENT if stripped else BLANK)
    if base < rules.data_start:
        kind = PREAMBLE
    return Block(keep, base, np.array([0]), np.array([len(keep)]),
                 np.array([kind], np.int8), {0: length}, base + taken)


def _skip_long(pending: bytes, base: int, read: Read, rules: Rules, hasher):
    """Read on to the end of an over-long record: (its batch, the bytes read after it or
    None when the input ended inside it, the bytes it took with its line end)."""
    head = pending[: 4 * KEEP]
    seen = len(pending)  # bytes of the record read so far
    if hasher is not None:
        hasher.update(pending[:-1])
    tail = pending[-1:]  # a CR last must see the byte after it
    while True:
        more = read(BLOCK)
        if not more:
            if hasher is not None:
                hasher.update(tail)
            return _long_batch(head, base, seen, rules, seen), None, seen
        chunk = tail + more
        hits = [i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0]
        e = min(hits) if hits else -1
        if e < 0 or (e == len(chunk) - 1 and chunk[e] == _CR):
            if hasher is not None:
                hasher.update(chunk[:-1])
            seen += len(more)
            tail = chunk[-1:]
            continue
        after = e + 2 if chunk[e] == _CR and chunk[e + 1 : e + 2] == b"\n" else e + 1
        length = seen - 1 + e  # chunk[0] is the record's byte number seen - 1
        if hasher is not None:
            hasher.update(chunk[:after])
        taken = length + after - e
        return _long_batch(head, base, length, rules, taken), chunk[after:], taken


def read_exactly(read: Read, n: int) -> bytes:
    """n bytes (fewer only at the end of the input)."""
    parts, got = [], 0
    while got < n:
        block = read(min(n - got, BLOCK))
        if not block:
            break
        parts.append(block)
        got += len(block)
    return b"".join(parts)


class Pushback:
    """A read(n) function over a stream, with bytes read too far handed back."""

    def __init__(self, read: Read):
        self._read = read
        self._back = b""

    def unread(self, data: bytes) -> None:
        self._back = data + self._back

    def read(self, n: int) -> bytes:
        if self._back:
            out, self._back = self._back[:n], self._back[n:]
            return out
        return self._read(n)


def count(read: Read, start: int, stop: int, rules: Rules, stream: Pushback | None = None,
          plain_only: bool = False) -> Scan | None:
    """Rows among the records starting in [start, stop), the next record start at or after
    stop, and the hash of the bytes in between (what a range of the plan holds). With a
    Pushback `stream`, the bytes read past that start are handed back to it. With
    `plain_only`, None where the bytes are not plain (see plain_lines): the full scan, the
    compiled one, is not run."""
    if stream is None:
        plain = _count_plain(read, start, stop, rules)
        if isinstance(plain, Scan):
            return plain
        if plain_only:
            return None
        read = Pushback(read)  # bytes looked at, handed back to the full scan below
        read.unread(plain)
        read = read.read
    elif plain_only:
        return None
    digest = hasher()
    out: list = []
    rows = 0
    quotes = False
    for batch in iter_batches(read, start, stop, rules, hasher=digest, out=out):
        rows += int(np.count_nonzero(batch.kinds == ROW))
        quotes = quotes or b'"' in batch.data
    if stream is not None and out and out[1]:
        stream.unread(out[1])
    return Scan(out[0] if out else start, rows, digest.hexdigest(), quotes)


def plain_counts(buf, after_lf):
    """(LFs, bytes below 33, LFs right after an LF) in buf; `after_lf`: as if an LF came
    just before buf.

    Eight bytes a step, as one little-endian word x, without a branch: a byte's high bit
    is set in `lf` where the byte is an LF and in `low` where it is below 33 (exact per
    byte: no carry crosses a byte), and each count is the sum of those bits.

        bytes of x  a    \n   \n   b  ...   (byte 0 is the word's low byte; y = x ^ 0A..)
        lf          0    80   80   0  ...   ~((y & 7F..) + 7F.. | y) & 80..
        low         0    80   80   0  ...   ~((x & 7F..) + 5F.. | x) & 80..  (5F = 128 - 33)
        after       0    0    80   0  ...   lf & (lf << 8 | the previous word's byte 7)
        a count     the high bits summed: (bits >> 7) * 01.. >> 56
    """
    ones = np.uint64(0x0101010101010101)
    low7 = np.uint64(0x7F7F7F7F7F7F7F7F)
    high = np.uint64(0x8080808080808080)
    lf8 = np.uint64(_LF) * ones
    under = np.uint64(128 - 33) * ones
    s7, s8, s56, s63 = np.uint64(7), np.uint64(8), np.uint64(56), np.uint64(63)
    whole = len(buf) // 8 * 8
    words = buf[:whole].view(np.uint64)
    lfs = below = pairs = np.uint64(0)  # uint64 throughout: with int64 numba makes floats
    prev = np.uint64(1) << s63 if after_lf else np.uint64(0)
    for i in range(len(words)):
        x = words[i]
        y = x ^ lf8
        lf = ~(((y & low7) + low7) | y) & high
        low = ~(((x & low7) + under) | x) & high
        after = lf & ((lf << s8) | (prev >> s56))
        lfs += ((lf >> s7) * ones) >> s56
        below += ((low >> s7) * ones) >> s56
        pairs += ((after >> s7) * ones) >> s56
        prev = lf
    n_lf, n_below, n_after = np.int64(lfs), np.int64(below), np.int64(pairs)
    carry = 1 if prev >> s63 else 0
    for i in range(whole, len(buf)):  # the last bytes, one at a time
        is_lf = 1 if buf[i] == _LF else 0
        n_lf += is_lf
        n_below += 1 if buf[i] < 33 else 0
        n_after += is_lf & carry
        carry = is_lf
    return n_lf, n_below, n_after


# compiled like `scan`: numba is imported only by a first call (the parent makes none
# without the compiled module: ranges.find_in_parent)
_plain_counts = compiled.kernel("(readonly u1[::1], b1) -> (i8, i8, i8)", lazy=True)(
    plain_counts)


def plain_lines(data: bytes, quotes: bool, comments: bool) -> tuple[int, bool]:
    """(LFs in data, whether each of its lines is surely a row by itself): no byte below 33
    but LF (no CR: only LF ends records; no white space, so a blank line could only be an
    empty one), no empty line, no quote or '#' where those mean something. The count is
    only meant when the answer is yes.

    One compiled pass (plain_counts) and a memchr for quotes and '#'.
    """
    if (quotes and b'"' in data) or (comments and b"#" in data):
        return 0, False
    lfs, below, after = _plain_counts(np.frombuffer(data, np.uint8), True)
    return lfs, below == lfs and after == 0


def _count_plain(read: Read, start: int, stop: int, rules: Rules) -> Scan | bytes:
    """count() for the common case (see plain_lines), counting LFs at memory speed; or,
    when the bytes are not that plain, the bytes read so far (for the full scan).

    The records before `data_start` (a header, a title) are the preamble, not rows: the
    shape found where it ends, so its bytes are only hashed here."""
    begin = max(start, rules.data_start)
    if begin >= stop:
        return b""
    head = read_exactly(read, begin - start)
    if len(head) < begin - start:
        return head
    data = read(stop - begin)
    if not data:
        return head
    lfs, ok = plain_lines(data, rules.quotes, rules.comments)
    if not ok:
        return head + data
    digest = hasher(head)
    digest.update(data)
    size = len(head) + len(data)
    if data[-1:] != b"\n":  # the record that starts before stop runs on past it
        tail = b""
        while b"\n" not in tail:
            more = read(64 << 10)
            if not more:
                break
            tail += more
            if len(tail) > MAX_RECORD:
                return head + data + tail  # a long record: the full scan knows what to do
        cut = tail.find(b"\n")
        tail = tail[: cut + 1] if cut >= 0 else tail  # what comes after is not ours
        if tail:
            # With the byte before it (not an LF), so that a first LF is no empty line.
            more_lfs, ok = plain_lines(data[-1:] + tail, rules.quotes, rules.comments)
            if not ok:
                return head + data + tail
            lfs += more_lfs
            digest.update(tail)
            size += len(tail)
            data = tail  # only its end matters below
    rows = lfs + (0 if data.endswith(b"\n") else 1)
    return Scan(start + size, rows, digest.hexdigest(), False)
