"""CUDA's integer intrinsics against Python's integers, on the CPU and the GPU. GPU cases are
skipped where no CUDA device works."""


import numpy as np
import pytest

import kjit
from conftest import DEVICES, poisoned


# CUDA's integer intrinsics against Python's integers: name, the expression over the thread's
# u, v (uint32), w, z (uint64) and s (a shift, a selector or an addend), its result's dtype, and
# the reference.
def _bits(x: int, n: int) -> int:
    return x & ((1 << n) - 1)


def _signed(x: int, n: int) -> int:
    x = _bits(x, n)
    return x - (1 << n) if x >> (n - 1) else x


def _reversed_bits(x: int, n: int) -> int:
    return int(format(_bits(x, n), f"0{n}b")[::-1], 2)


def _byte_perm(u: int, v: int, s: int) -> int:
    both = (v << 32) | u
    return sum(((both >> (8 * ((s >> (4 * k)) & 7))) & 0xFF) << (8 * k) for k in range(4))


I32, U32, U64, I64 = np.int32, np.uint32, np.uint64, np.int64
INTEGER_INTRINSICS = [
    ("popc", "__popc(u)", I32, lambda u, v, w, z, s: bin(u).count("1")),
    ("popcll", "__popcll(w)", I32, lambda u, v, w, z, s: bin(w).count("1")),
    ("clz", "__clz(int(u))", I32, lambda u, v, w, z, s: 32 - u.bit_length()),
    ("clzll", "__clzll((long long)w)", I32, lambda u, v, w, z, s: 64 - w.bit_length()),
    ("ffs", "__ffs(int(u))", I32, lambda u, v, w, z, s: (u & -u).bit_length()),
    ("ffsll", "__ffsll((long long)w)", I32, lambda u, v, w, z, s: (w & -w).bit_length()),
    ("brev", "__brev(u)", U32, lambda u, v, w, z, s: _reversed_bits(u, 32)),
    ("brevll", "__brevll(w)", U64, lambda u, v, w, z, s: _reversed_bits(w, 64)),
    ("umulhi", "__umulhi(u, v)", U32, lambda u, v, w, z, s: (u * v) >> 32),
    ("mulhi", "__mulhi(int(u), int(v))", I32,
     lambda u, v, w, z, s: (_signed(u, 32) * _signed(v, 32)) >> 32),
    ("umul64hi", "__umul64hi(w, z)", U64, lambda u, v, w, z, s: (w * z) >> 64),
    ("mul64hi", "__mul64hi((long long)w, (long long)z)", I64,
     lambda u, v, w, z, s: (_signed(w, 64) * _signed(z, 64)) >> 64),
    ("mul24", "__mul24(int(u), int(v))", I32,
     lambda u, v, w, z, s: _signed(_signed(u, 24) * _signed(v, 24), 32)),
    ("umul24", "__umul24(u, v)", U32, lambda u, v, w, z, s: _bits(_bits(u, 24) * _bits(v, 24), 32)),
    ("byte_perm", "__byte_perm(u, v, s)", U32, lambda u, v, w, z, s: _byte_perm(u, v, s)),
    ("sad", "__sad(int(u), int(v), s)", U32,
     lambda u, v, w, z, s: _bits(abs(_signed(u, 32) - _signed(v, 32)) + s, 32)),
    ("usad", "__usad(u, v, s)", U32, lambda u, v, w, z, s: _bits(abs(u - v) + s, 32)),
    ("funnelshift_l", "__funnelshift_l(u, v, s)", U32,
     lambda u, v, w, z, s: _bits((((v << 32) | u) << (s & 31)) >> 32, 32)),
    ("funnelshift_lc", "__funnelshift_lc(u, v, s)", U32,
     lambda u, v, w, z, s: _bits((((v << 32) | u) << min(s, 32)) >> 32, 32)),
    ("funnelshift_r", "__funnelshift_r(u, v, s)", U32,
     lambda u, v, w, z, s: _bits(((v << 32) | u) >> (s & 31), 32)),
    ("funnelshift_rc", "__funnelshift_rc(u, v, s)", U32,
     lambda u, v, w, z, s: _bits(((v << 32) | u) >> min(s, 32), 32)),
]


@pytest.mark.parametrize("device", DEVICES)
def test_integer_intrinsics(device, rng):
    names = [name for name, _, _, _ in INTEGER_INTRINSICS]
    dtypes = [dtype for _, _, dtype, _ in INTEGER_INTRINSICS]
    k = kjit.cuda_kernel(name="integer_intrinsics", input_names=["us", "vs", "ws", "zs", "ss"],
                         output_names=names, source="""
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned u = us[i], v = vs[i], s = ss[i];
    const unsigned long long w = ws[i], z = zs[i];
""" + "".join(f"    {name}[i] = {expr};\n" for name, expr, _, _ in INTEGER_INTRINSICS))
    n = 256
    u, v, s = (rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    w, z = (rng.integers(0, 1 << 64, n, dtype=np.uint64) for _ in range(2))
    s[: n // 2] %= 40  # shifts on both sides of 32
    u[:4] = [0, 1, 0x80000000, 0xFFFFFFFF]  # and the edges: zero, one bit, the sign bit, all ones
    w[:4] = [0, 1, 1 << 63, (1 << 64) - 1]
    outs = k(inputs=[u, v, w, z, s], output_shapes=[(n,)] * len(names), output_dtypes=dtypes,
             grid=(n, 1, 1), threadgroup=(64, 1, 1), device=device,
             outputs=[poisoned((n,), d) for d in dtypes])
    for (name, _, dtype, reference), out in zip(INTEGER_INTRINSICS, outs):
        expected = [reference(*map(int, args)) for args in zip(u, v, w, z, s)]
        np.testing.assert_array_equal(out, np.array(expected, dtype=object).astype(dtype),
                                      err_msg=name)
