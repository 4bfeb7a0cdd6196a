"""LLVM code for the kernels where numba's own falls short: bit counts, PEXT, 32-byte
vectors over a board's bytes, the cycle counter.

Each is a `compiled.intrinsic`: numba asks it for LLVM IR when it compiles a kernel that
calls it (never with the ahead-of-time module, which holds them compiled in). The engine's
docstring says why each pays (a byte compare and mask per band, bit planes of digits to
bytes, a placement clearing eight boards as one vector).
"""

from __future__ import annotations

from pipeline import compiled

NODE = 64  # int32 in one of the engine's search nodes: what copy_row copies

if compiled.loaded() is None:  # numba compiles the kernels here: the intrinsics need these
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils

    _V32 = ir.VectorType(ir.IntType(8), 32)
    _V8I32 = ir.VectorType(ir.IntType(32), 8)


def _cttz_python(x):
    """cttz in Python, for the helpers that tests run as Python beside the compiled module."""
    return (int(x) & -int(x)).bit_length() - 1


def _popcnt_python(x):
    """popcnt in Python (the same use)."""
    return (int(x) & (1 << 64) - 1).bit_count()


@compiled.intrinsic(python=_cttz_python)
def cttz(typingctx, x):
    """Count trailing zeros of a non-zero int64."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        (val,) = args
        val = context.cast(builder, val, x, types.int64)
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64, ir.IntType(1)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.cttz.i64")
        return builder.call(fn, [val, ir.Constant(ir.IntType(1), 1)])

    return types.int64(x), codegen


@compiled.intrinsic
def pext(typingctx, x, m):
    """Parallel bit extract (BMI2): the bits of x under mask m, packed to the bottom."""
    if not (isinstance(x, types.Integer) and isinstance(m, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        a = context.cast(builder, args[0], signature.args[0], types.int64)
        b = context.cast(builder, args[1], signature.args[1], types.int64)
        fnty = ir.FunctionType(i64, [i64, i64])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.bmi.pext.64")
        return builder.call(fn, [a, b])

    return types.int64(x, m), codegen


@compiled.intrinsic(python=_popcnt_python)
def popcnt(typingctx, x):
    """Population count of an int64."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        (val,) = args
        val = context.cast(builder, val, x, types.int64)
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.ctpop.i64")
        return builder.call(fn, [val])

    return types.int64(x), codegen


def _elem_ptr(context, builder, aryty, ary, start, startty):
    """A pointer to element `start` of a C-contiguous array (codegen)."""
    a = context.make_array(aryty)(context, builder, value=ary)
    return builder.gep(a.data, [context.cast(builder, start, startty, types.intp)])


def _splat(builder, value, vtype):
    """A vector of `vtype` with `value` in every lane (codegen)."""
    one = builder.insert_element(ir.Constant(vtype, None), value, ir.Constant(ir.IntType(32), 0))
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), vtype.count), [0] * vtype.count)
    return builder.shuffle_vector(one, ir.Constant(vtype, None), zeros)


def _boards_meeting(builder, first8, ninth, m32):
    """Bit t set when board t of a band (the first eight as one vector, the ninth alone)
    shares a cell with m32 (codegen)."""
    i32, i64 = ir.IntType(32), ir.IntType(64)
    hitv = builder.icmp_unsigned("!=", builder.and_(first8, _splat(builder, m32, _V8I32)),
                                 ir.Constant(_V8I32, [0] * 8))
    hit = builder.zext(builder.bitcast(hitv, ir.IntType(8)), i64)
    h8 = builder.zext(builder.icmp_unsigned("!=", builder.and_(ninth, m32), ir.Constant(i32, 0)),
                      i64)
    return builder.or_(hit, builder.shl(h8, ir.Constant(i64, 8)))


@compiled.intrinsic
def byte_mask32(typingctx, arr, start, lo, hi):
    """Bit j set when lo <= byte start + j of a C-contiguous uint8 array <= hi (j < 32).

    One unaligned 32-byte load and an LLVM vector compare (vpcmpeqb / vpmovmskb on AVX2);
    the caller makes sure the 32 bytes lie inside the array.
    """
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and arr.layout == "C"):
        return None

    def codegen(context, builder, signature, args):
        ary, st, lo_, hi_ = args
        ptr = _elem_ptr(context, builder, signature.args[0], ary, st, signature.args[1])
        v = builder.load(builder.bitcast(ptr, _V32.as_pointer()), align=1)

        def splat(x, xty):
            b = builder.trunc(context.cast(builder, x, xty, types.int64), ir.IntType(8))
            return _splat(builder, b, _V32)

        low = splat(lo_, signature.args[2])
        span = builder.sub(splat(hi_, signature.args[3]), low)
        inside = builder.icmp_unsigned("<=", builder.sub(v, low), span)
        return builder.zext(builder.bitcast(inside, ir.IntType(32)), ir.IntType(64))

    return types.int64(arr, start, lo, hi), codegen


@compiled.intrinsic
def store_digits32(typingctx, arr, start, q0, q1, q2, q3):
    """Write bytes start..start+31 of a C-contiguous uint8 array: byte j = 1 + bit j of
    q0 + 2 * bit j of q1 + 4 * bit j of q2 + 8 * bit j of q3 (one 32-byte vector store)."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and arr.layout == "C"):
        return None

    def codegen(context, builder, signature, args):
        ary, st = args[0], args[1]
        acc = ir.Constant(_V32, [1] * 32)
        for k in range(4):
            m = context.cast(builder, args[2 + k], signature.args[2 + k], types.int64)
            m = builder.bitcast(builder.trunc(m, ir.IntType(32)), ir.VectorType(ir.IntType(1), 32))
            acc = builder.add(acc, builder.shl(builder.zext(m, _V32), ir.Constant(_V32, [k] * 32)))
        ptr = _elem_ptr(context, builder, signature.args[0], ary, st, signature.args[1])
        builder.store(acc, builder.bitcast(ptr, _V32.as_pointer()), align=1)
        return context.get_dummy_value()

    return types.none(arr, start, q0, q1, q2, q3), codegen


@compiled.intrinsic
def copy_row(typingctx, dst, drow, src, srow):
    """Copy one node (NODE int32) from row srow of src to row drow of dst (C-contiguous
    arrays with rows of NODE; a 1-d array is one row): one fixed-size memcpy of 32-byte
    moves instead of element copies each with its index arithmetic."""
    ok = all(
        isinstance(a, types.Array) and a.dtype == types.int32 and a.layout == "C"
        for a in (dst, src)
    )
    if not ok:
        return None

    def codegen(context, builder, signature, args):
        d, dr, s_, sr = args
        ptrs = []
        for ary, aty, row, rty in (
            (d, signature.args[0], dr, signature.args[1]),
            (s_, signature.args[2], sr, signature.args[3]),
        ):
            a = context.make_array(aty)(context, builder, value=ary)
            offset = builder.mul(
                context.cast(builder, row, rty, types.intp), ir.Constant(ir.IntType(64), NODE)
            )
            ptrs.append(builder.gep(a.data, [offset]))
        cgutils.raw_memcpy(builder, ptrs[0], ptrs[1], ir.Constant(ir.IntType(64), NODE), 4)
        return context.get_dummy_value()

    return types.none(dst, drow, src, srow), codegen


@compiled.intrinsic
def place_in_band(typingctx, S, base, new, d, x):
    """Cells ``new`` of a band are placed: remove them from the band's nine boards
    S[base] .. S[base + 8], except board ``d``, which becomes ``x``.  Returns the boards
    that lost a cell (bit t for board base + t).

    The first eight boards are one 32-byte vector (load, and-not, blend in ``x``, store,
    and a compare for the boards hit); the ninth is scalar.  A per-board loop costs a
    load, a store and a test for each of the nine.
    """
    ok = isinstance(S, types.Array) and S.dtype == types.int32 and S.layout == "C"
    if not ok:
        return None

    def codegen(context, builder, signature, args):
        ary, base_, new_, d_, x_ = args
        i32 = ir.IntType(32)
        i64 = ir.IntType(64)
        ptr = _elem_ptr(context, builder, signature.args[0], ary, base_, signature.args[1])
        new32 = builder.trunc(context.cast(builder, new_, signature.args[2], types.int64), i32)
        d32 = builder.trunc(context.cast(builder, d_, signature.args[3], types.int64), i32)
        x32 = builder.trunc(context.cast(builder, x_, signature.args[4], types.int64), i32)
        vptr = builder.bitcast(ptr, _V8I32.as_pointer())
        v = builder.load(vptr, align=4)
        p8 = builder.gep(ptr, [ir.Constant(i64, 8)])
        o8 = builder.load(p8, align=4)
        hit = _boards_meeting(builder, v, o8, new32)
        kept = builder.and_(v, builder.xor(_splat(builder, new32, _V8I32),
                                           ir.Constant(_V8I32, [-1] * 8)))
        own = builder.icmp_unsigned("==", ir.Constant(_V8I32, list(range(8))),
                                    _splat(builder, d32, _V8I32))
        builder.store(builder.select(own, _splat(builder, x32, _V8I32), kept), vptr, align=4)
        # the ninth board
        k8 = builder.and_(o8, builder.xor(new32, ir.Constant(i32, -1)))
        is8 = builder.icmp_unsigned("==", d32, ir.Constant(i32, 8))
        builder.store(builder.select(is8, x32, k8), p8, align=4)
        return hit

    return types.int64(S, base, new, d, x), codegen


@compiled.intrinsic
def band_hits(typingctx, S, base, m):
    """Bit t set when board S[base + t] meets m (t < 9): one 32-byte compare for the
    first eight boards, a scalar test for the ninth."""
    ok = isinstance(S, types.Array) and S.dtype == types.int32 and S.layout == "C"
    if not ok:
        return None

    def codegen(context, builder, signature, args):
        ary, base_, m_ = args
        i32 = ir.IntType(32)
        i64 = ir.IntType(64)
        ptr = _elem_ptr(context, builder, signature.args[0], ary, base_, signature.args[1])
        m32 = builder.trunc(context.cast(builder, m_, signature.args[2], types.int64), i32)
        v = builder.load(builder.bitcast(ptr, _V8I32.as_pointer()), align=4)
        o8 = builder.load(builder.gep(ptr, [ir.Constant(i64, 8)]), align=4)
        return _boards_meeting(builder, v, o8, m32)

    return types.int64(S, base, m), codegen


@compiled.intrinsic
def rdcycle(typingctx):
    """Read the CPU cycle counter (0 on platforms without one)."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return types.int64(), codegen
