"""Random calls of kjit's public Python API, and the runner that makes them in child processes.

Call I of seed S is made from a generator seeded with (S, I) alone, so it is the same call
wherever it runs. Each call is one of: making a kernel (valid and broken names, sources,
headers and options), calling one of a few pooled kernels (or binding it and calling the bound
kernel, or building it) with a correct call's arguments of which a few are replaced by random
values, or kjit.array / empty / zeros and a kjit.Array's methods. The pooled kernels bound
every write by their inputs' shapes and by a 0-d input that the generator sets to the smallest
output's size, so a call that runs writes nothing outside its arrays whatever its grid.

A call may raise kjit's documented errors (TypeError, ValueError, MemoryError, kjit.CompileError,
kjit.LaunchError). Anything else it raises (SystemError, or an error of the test's own hostile
objects that kjit let through unnamed), a signal that ends its process, or a call that does not
return within a limit, is a failure.

    python tests/python/fuzz_api.py --seed S --call I     # shows call I, then makes it here
    python tests/python/fuzz_api.py --seed S --first F --count N --protocol-fd 1
"""

from __future__ import annotations

import argparse
import math
import os
import queue
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

# --- values -----------------------------------------------------------------------------------


class FuzzError(Exception):
    """Raised by the hostile objects below: kjit must name the parameter, not let it through."""


class Hostile:
    """An object whose every protocol method raises."""

    def __index__(self) -> int:
        raise FuzzError("__index__")

    def __len__(self) -> int:
        raise FuzzError("__len__")

    def __getitem__(self, i: Any) -> Any:
        raise FuzzError("__getitem__")

    def __iter__(self) -> Any:
        raise FuzzError("__iter__")

    def __float__(self) -> float:
        raise FuzzError("__float__")

    def __dlpack__(self, **kwargs: Any) -> Any:
        raise FuzzError("__dlpack__")

    def __dlpack_device__(self) -> Any:
        raise FuzzError("__dlpack_device__")

    def __repr__(self) -> str:
        return "Hostile()"


class EmptiesOnIndex:
    """A size that empties the list it was put in when converted to an int."""

    def __init__(self, value: int):
        self.value = value
        self.target: list = []

    def __index__(self) -> int:
        self.target.clear()
        return self.value

    def __repr__(self) -> str:
        return f"EmptiesOnIndex({self.value})"


class DlpackOf:
    """A DLPack producer over a NumPy array."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self.array.__dlpack_device__()

    def __repr__(self) -> str:
        return f"DlpackOf({describe(self.array)})"


def ml_dtypes_or_none(name: str) -> Optional[Any]:
    try:
        import ml_dtypes
    except ImportError:
        return None
    return getattr(ml_dtypes, name, None)


# Element types of arrays: kjit's own (the first ones, which kernels are called with), then
# others it must refuse.
KERNEL_DTYPES = [np.float32, np.int32, np.float16, np.uint8, np.bool_, np.float64]
ARRAY_DTYPES: list[Any] = KERNEL_DTYPES + [
    np.int8, np.int16, np.int64, np.uint16, np.uint32, np.uint64, np.complex64, np.complex128,
    np.longdouble, "datetime64[s]", "timedelta64[ns]", object, "U3", "S2", "V4",
    [("x", "i4"), ("y", "f4")], ">f4", ">i8",
] + [d for d in (ml_dtypes_or_none(n) for n in ("bfloat16", "float8_e4m3fn", "int4")) if d]

# Sizes: small, or too large for any array or grid (mid-sized ones would allocate gigabytes, or
# run a grid for minutes).
EDGE_INTS = [-1, -2**31, 2**62, 2**63, 2**64, -2**63 - 1, 10**30]


@dataclass
class Gen:
    rng: np.random.Generator

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, items: Any) -> Any:
        return items[int(self.rng.integers(len(items)))]

    def small(self, high: int = 8) -> int:
        return int(self.rng.integers(0, high + 1))

    def int_like(self, value: int) -> Any:
        """|value| as an int, or as another object that converts to it."""
        return self.pick([value, value, value, np.int64(value), np.uint16(value % 65536),
                          EmptiesOnIndex(value), float(value), bool(value % 2), str(value)])

    def size(self) -> Any:
        if self.chance(0.9):
            return self.int_like(self.small())
        return self.pick(EDGE_INTS + [Hostile(), None, 1.5, "4", [2], np.nan])

    def sequence(self, items: list) -> Any:
        """|items| in a list, a tuple or another sequence."""
        kind = self.pick(["list", "tuple", "tuple", "ndarray", "range", "list-emptied"])
        if kind == "list":
            return list(items)
        if kind == "ndarray" and all(isinstance(v, int) and abs(v) < 2**62 for v in items):
            return np.array(items, dtype=np.int64)
        if kind == "range" and len(items) == 1 and isinstance(items[0], int):
            return range(items[0])
        if kind == "list-emptied":
            out = list(items)
            for v in out:
                if isinstance(v, EmptiesOnIndex):
                    v.target = out
            return out
        return tuple(items)

    def shape(self, ndim: Optional[int] = None) -> Any:
        if ndim is None:
            ndim = self.pick([0, 1, 1, 1, 2, 3, 11])
        return self.sequence([self.size() for _ in range(ndim)])

    def dim3(self) -> Any:
        if self.chance(0.1):
            return self.pick([None, 4, "444", (4, 1), (4, 1, 1, 1), Hostile(), [], {1: 2}])
        return self.sequence([self.size() for _ in range(3)])

    def dtype(self) -> Any:
        d = self.pick(ARRAY_DTYPES)
        form = self.pick(["type", "dtype", "name", "kjit"])
        if form == "dtype":
            return np.dtype(d)
        if form == "name":
            return str(np.dtype(d))
        if form == "kjit":
            import kjit
            return getattr(kjit, str(np.dtype(d)), d)
        return d

    def array(self, dtype: Any = None, shape: Optional[tuple] = None) -> Any:
        dtype = self.pick(ARRAY_DTYPES) if dtype is None else dtype
        if shape is None:
            shape = tuple(self.small(5) for _ in range(self.pick([0, 1, 1, 2, 3])))
        try:
            a = np.zeros(shape, dtype=dtype)
            if a.dtype.kind in "biufc" and a.size:
                a[...] = np.arange(a.size).reshape(shape) % 7
        except (TypeError, ValueError):
            a = np.zeros(shape, dtype=np.float32)
        layout = self.pick(["plain"] * 6 + ["reversed", "strided", "transposed", "broadcast",
                                            "read-only", "fortran", "misaligned", "11-d"])
        if layout == "reversed" and a.ndim:
            a = a[::-1]
        elif layout == "strided" and a.ndim:
            a = np.concatenate([a, a])[::2]
        elif layout == "transposed":
            a = a.T
        elif layout == "broadcast" and a.ndim and a.shape[0]:
            a = np.broadcast_to(a[:1], (3,) + a.shape[1:])
        elif layout == "read-only":
            a.flags.writeable = False
        elif layout == "fortran":
            a = np.asfortranarray(a)
        elif layout == "misaligned" and a.itemsize > 1 and a.dtype.kind in "biufcmM":
            raw = np.zeros(a.nbytes + 1, np.uint8)
            a = raw[1:].view(a.dtype).reshape(a.shape)
        elif layout == "11-d":
            a = np.zeros((1,) * 11, np.float32)
        return a

    def value(self) -> Any:
        """Anything a caller might pass where an array goes."""
        kind = self.pick(["array"] * 8 + ["scalar", "npscalar", "datetime", "junk", "kjit",
                                           "dlpack", "hostile", "zero-size"])
        if kind == "array":
            return self.array()
        if kind == "zero-size":
            return self.array(shape=(0,) * self.pick([1, 2]))
        if kind == "scalar":
            return self.pick([0, 1, -1, 2**40, 2**64, 1.5, float("nan"), float("inf"), True,
                              1j])
        if kind == "npscalar":
            d = np.dtype(self.pick(KERNEL_DTYPES + [np.complex64, np.int64, np.longdouble]))
            return d.type(1)
        if kind == "datetime":
            return self.pick([np.datetime64("2020-01-01"), np.datetime64("NaT"),
                              np.timedelta64(5, "s"), np.timedelta64("NaT")])
        if kind == "kjit":
            import kjit
            return kjit.zeros((self.small(4),), dtype=self.pick(KERNEL_DTYPES))
        if kind == "dlpack":
            return DlpackOf(self.array())
        if kind == "hostile":
            return Hostile()
        return self.pick([None, "x", b"abc", bytearray(4), memoryview(b"abcd"), [1.0, 2.0],
                          {"a": 1}, object(), np.float32, range(3)])

    def name(self) -> Any:
        return self.pick(["k", "a_b", "1D", "", " ", "int", "class", "x" * 300, "é", "\ud800",
                          "a-b", "a.b", None, 3, b"k", "thread_position_in_grid", "o", "n"])

    def names(self, good: list[str]) -> Any:
        if self.chance(0.6):
            return list(good)
        return self.pick([[], [self.name()], list(good) * 2, [*good, self.name()], tuple(good),
                          "abc", None, {"a": 1}, [Hostile()], Hostile()])

    def text(self, good: str) -> Any:
        """|good| (a body or header), or it broken in one of many ways."""
        if self.chance(0.4):
            return good
        kind = self.pick(["cut", "insert", "digraph", "include", "pragma", "comments", "nul",
                          "junk", "nesting", "long"])
        if kind == "cut":
            return good[:self.small(len(good))]
        if kind == "insert":
            pos = self.small(len(good))
            return good[:pos] + self.pick(list("{}()[];%<>:#\"'\\/*\n?$@`")) + good[pos:]
        if kind == "digraph":
            return good + self.pick(["%>", "<%", "<:", ":>", "%:", "%:%:", "??>"])
        if kind == "include":
            return self.pick(['#include "/dev/null"\n', "#include <vector>\n",
                              '#include "nope.h"\n', "#include\n"]) + good
        if kind == "pragma":
            return self.pick(["#pragma once\n", "#define o a\n", "#undef x\n", "#if 0\n"]) + good
        if kind == "comments":
            return good + self.pick(["//", "/*", "*/", "// \\\n}", "/* } */ }"])
        if kind == "nul":
            return good + "\0"
        if kind == "nesting":
            return "{" * 200 + good + "}" * 200
        if kind == "long":
            return good + "\n// comment" * 2000
        return self.pick([None, 3, b"o[0] = a[0];", "\ud800", "}", "return;", "}{", ""])


# --- the pooled kernels ----------------------------------------------------------------------

# Every write is bounded by n, the smallest output's size (the generator's last input), and
# every read by the input's size, so that no grid reaches outside the arrays.
POOL = {
    "copy": dict(dialect="metal", inputs=["a", "n"], outputs=["o"], source="""
        uint i = thread_position_in_grid.x;
        uint m = 1;
        for (int d = 0; d < a_ndim; ++d) m *= uint(a_shape[d]);
        if (i < n && i < m) o[i] = a[i];
    """),
    "add": dict(dialect="metal", inputs=["a", "b", "n"], outputs=["o"], source="""
        uint i = thread_position_in_grid.x;
        uint m = 1;
        for (int d = 0; d < a_ndim; ++d) m *= uint(a_shape[d]);
        uint mb = 1;
        for (int d = 0; d < b_ndim; ++d) mb *= uint(b_shape[d]);
        if (i < n && i < m && i < mb) o[i] = a[i] + b[i];
    """),
    "two_outputs": dict(dialect="metal", inputs=["a", "n"], outputs=["o", "p"], source="""
        uint i = thread_position_in_grid.x;
        uint m = 1;
        for (int d = 0; d < a_ndim; ++d) m *= uint(a_shape[d]);
        if (i < n && i < m) { o[i] = a[i]; p[i] = a[i]; }
    """),
    "group_memory": dict(dialect="metal", inputs=["a", "n"], outputs=["o"], source="""
        threadgroup float tile[1024];
        uint l = thread_index_in_threadgroup;
        uint i = thread_position_in_grid.x;
        uint m = 1;
        for (int d = 0; d < a_ndim; ++d) m *= uint(a_shape[d]);
        tile[l] = i < m ? float(a[i]) : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (i < n) o[i] = tile[l];
    """),
    "templated": dict(dialect="metal", inputs=["a", "n"], outputs=["o"], source="""
        uint i = thread_position_in_grid.x;
        uint m = 1;
        for (int d = 0; d < a_ndim; ++d) m *= uint(a_shape[d]);
        if (i < n && i < m) o[i] = T(a[i]) * T(SCALE);
    """),
    "cuda_copy": dict(dialect="cuda", inputs=["a", "n"], outputs=["o"], source="""
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        unsigned m = 1;
        for (int d = 0; d < a_ndim; ++d) m *= unsigned(a_shape[d]);
        if (i < n && i < m) o[i] = a[i];
    """),
}
HEADERS = ["", "inline float twice(float v) { return 2 * v; }\n", "#define KJIT_FUZZ 1\n"]


class Pool:
    """The pooled kernels, made at first use in this process."""

    def __init__(self) -> None:
        self.kernels: dict[str, Any] = {}

    def kernel(self, label: str) -> Any:
        if label not in self.kernels:
            import kjit
            spec = POOL[label]
            factory = kjit.metal_kernel if spec["dialect"] == "metal" else kjit.cuda_kernel
            self.kernels[label] = factory(name=f"fuzz_{label}", input_names=spec["inputs"],
                                          output_names=spec["outputs"], source=spec["source"])
        return self.kernels[label]


def bound_of(kwargs: dict) -> int:
    """The smallest output's size, as far as the generator knows it (0 when it does not)."""
    outputs = kwargs.get("outputs")
    sizes: list[int] = []
    if isinstance(outputs, (list, tuple)):
        sizes = [o.size if isinstance(o, np.ndarray) else 0 for o in outputs]
    else:
        shapes = kwargs.get("output_shapes")
        if not isinstance(shapes, (list, tuple)):
            return 0
        for s in shapes:
            if not isinstance(s, (list, tuple)) or not all(type(d) is int for d in s):
                return 0
            sizes.append(math.prod(s))
    return min(max(0, min(sizes, default=0)), 2**32 - 1)


# --- the calls -------------------------------------------------------------------------------


@dataclass
class Call:
    """One generated call: what it is, and how to make it."""

    what: str
    args: dict
    run: Callable[[Pool], Any]

    def describe(self) -> str:
        return f"{self.what}({', '.join(f'{k}={describe(v)}' for k, v in self.args.items())})"


def describe(v: Any) -> str:
    """A short, exact-enough description of a generated value."""
    if isinstance(v, np.ndarray):
        return (f"ndarray(shape={v.shape}, dtype={v.dtype}, strides={v.strides}, "
                f"writeable={v.flags.writeable})")
    if isinstance(v, (list, tuple)):
        inner = ", ".join(describe(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {describe(x)}" for k, x in v.items()) + "}"
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


SETTINGS = ["output_shapes", "output_dtypes", "grid", "threadgroup", "template", "init_value",
            "verbose", "stream", "device"]


def kernel_call_args(g: Gen, label: str) -> dict:
    """A call of pooled kernel |label|, correct but for a few random replacements."""
    spec = POOL[label]
    size = g.small(40)
    dtype = g.pick(KERNEL_DTYPES)
    data = [g.array(dtype, (size,)) for name in spec["inputs"] if name != "n"]
    out_dtype = dtype if g.chance(0.8) else g.pick(KERNEL_DTYPES)
    args: dict = dict(
        inputs=data,
        output_shapes=[(size,) for _ in spec["outputs"]],
        output_dtypes=[out_dtype for _ in spec["outputs"]],
        grid=(size + g.small(70), 1, 1),
        threadgroup=(g.pick([1, 4, 32, 64, 256, 1024]), 1, 1),
    )
    if label == "templated":
        args["template"] = [("T", g.pick(["float32", np.float32, "int32"])),
                            ("SCALE", g.pick([1, 2, True]))]
    replace = {
        "inputs": lambda: g.pick([
            [g.value() for _ in data], [g.value() for _ in range(g.small(3))], data[:1],
            data + [g.value()], g.value(), tuple(data), Hostile()]),
        "output_shapes": lambda: g.pick([
            [g.shape() for _ in spec["outputs"]], [g.shape()], g.shape(), None,
            [(g.small(40),) for _ in spec["outputs"]], [Hostile()], {"o": (4,)}]),
        "output_dtypes": lambda: g.pick([
            [g.dtype() for _ in spec["outputs"]], [g.dtype()], [], None, g.dtype(),
            [Hostile()]]),
        "grid": g.dim3,
        "threadgroup": g.dim3,
        "template": lambda: g.pick([
            None, [], [("T", g.dtype())], [("SCALE", g.size())], [("T", "float32")] * 2,
            [(g.name(), g.value())], [("T",)], "T=float", {"T": "float32"}, [Hostile()],
            [["T", np.float32], ["SCALE", np.int64(3)]]]),
        "init_value": lambda: g.pick([
            None, 0, 1.5, -1, 2**53 + 1, 2**70, float("nan"), float("inf"), np.float32(2),
            np.int8(-3), np.datetime64("NaT"), np.bool_(True), 1j, "1", Hostile(), True]),
        "verbose": lambda: g.pick([True, False, 1, None, "yes"]),
        "stream": lambda: g.pick([None, 0, 1, 2, -1, 2**64, "s", 1.5, Hostile(), object()]),
        "device": lambda: g.pick(["cpu", "cuda", "cuda:0", "cuda:99", "cuda:-1", "tpu", 3,
                                  "", "\ud800", "cpu:0"]),
        "outputs": lambda: g.pick([
            [g.array(out_dtype, (size,)) for _ in spec["outputs"]],
            [g.value() for _ in spec["outputs"]], [], g.value(), None,
            [np.zeros((size,), out_dtype)[::-1] for _ in spec["outputs"]]]),
    }
    for key in g.rng.choice(list(replace), size=g.small(3), replace=False):
        args[str(key)] = replace[str(key)]()
    if isinstance(args["inputs"], list) and g.chance(0.95):
        args["inputs"] = args["inputs"] + [np.uint32(bound_of(args))]
    return args


def make_call(seed: int, index: int) -> Call:
    g = Gen(np.random.default_rng([seed, index]))
    kind = g.pick(["call"] * 10 + ["bind"] * 3 + ["construct"] * 3 + ["build", "array",
                                                                      "array-methods"])
    if kind in ("call", "bind", "build"):
        label = g.pick(list(POOL))
        args = kernel_call_args(g, label)
        if kind == "call":
            dict_form = g.chance(0.05) and isinstance(args["inputs"], list)
            if dict_form:
                names = POOL[label]["inputs"]
                args["inputs"] = dict(zip(names, args["inputs"]))
                for key in ("output_shapes", "output_dtypes"):
                    if isinstance(args[key], list):
                        args[key] = dict(zip(POOL[label]["outputs"], args[key]))
            return Call(f"{label}", args, lambda pool: pool.kernel(label)(**args))
        if kind == "bind":
            settings = {k: v for k, v in args.items() if k in SETTINGS}
            arrays = args["inputs"] if isinstance(args["inputs"], list) else [args["inputs"]]
            if isinstance(args.get("outputs"), list):
                arrays = arrays + args["outputs"]
            return Call(f"{label}.bind", dict(settings, arrays=arrays),
                        lambda pool: pool.kernel(label).bind(**settings)(*arrays))
        signature = g.pick([
            [(g.pick(KERNEL_DTYPES), 1) for _ in POOL[label]["inputs"][:-1]] + [(np.uint32, 0)],
            [(g.dtype(), g.pick([0, 1, 11, -1, g.size()]))], "x", [Hostile()], [("float32",)]])
        build = dict(inputs=signature, output_dtypes=args["output_dtypes"],
                     template=args.get("template"),
                     target=g.pick(["cpu", "cpu", "cuda", "sm_90", "sm_1", "x", None]))
        return Call(f"{label}.build", build, lambda pool: pool.kernel(label).build(**build))
    if kind == "construct":
        return construct_call(g)
    if kind == "array":
        return array_call(g)
    return array_method_call(g)


def construct_call(g: Gen) -> Call:
    """Making a kernel; sometimes then running it on a small correct call."""
    import kjit
    label = g.pick(list(POOL))
    spec = POOL[label]
    dialect = spec["dialect"] if g.chance(0.8) else g.pick(["metal", "cuda"])
    args: dict = dict(name=g.name() if g.chance(0.3) else "fuzz_made",
                      input_names=g.names(spec["inputs"]),
                      output_names=g.names(spec["outputs"]),
                      source=g.text(spec["source"]))
    if g.chance(0.3):
        args["header"] = g.text(g.pick(HEADERS))
    if g.chance(0.2):
        args["ensure_row_contiguous"] = g.pick([True, False, 1, None])
    if g.chance(0.2):
        args["atomic_outputs"] = g.pick([True, False, "yes"])
    if g.chance(0.2):
        args["compile_options"] = g.pick([None, {}, {"math_mode": g.pick(["fast", "safe", "x"])},
                                          {"bad": 1}, "fast", {Hostile(): 1}])
    if dialect == "cuda" and g.chance(0.3):
        args["shared_memory"] = g.pick([0, 1024, -1, 2**31, 2**64, True, 1.5, Hostile()])
    factory = kjit.metal_kernel if dialect == "metal" else kjit.cuda_kernel
    then = g.pick([None] * 8 + ["call", "build"])
    call_args = kernel_call_args(Gen(np.random.default_rng(int(g.rng.integers(2**32)))), label)

    def run(pool: Pool) -> Any:
        kernel = factory(**args)
        if then == "call" and isinstance(kernel, kjit.Kernel):
            kernel(**call_args)
        elif then == "build" and isinstance(kernel, kjit.Kernel):
            kernel.build(inputs=[(np.float32, 1)] * len(kernel.input_names),
                         output_dtypes=[np.float32] * len(kernel.output_names))

    return Call(f"kjit.{dialect}_kernel", dict(args, then=then), run)


def array_call(g: Gen) -> Call:
    import kjit
    which = g.pick(["array", "empty", "zeros"])
    if which == "array":
        args: dict = dict(obj=g.value())
        if g.chance(0.3):
            args["dtype"] = g.dtype() if g.chance(0.8) else g.pick([None, 3, Hostile()])
        if g.chance(0.3):
            args["device"] = g.pick(["cpu", "cuda", None, 3, "gpu"])
        return Call("kjit.array", args, lambda pool: kjit.array(**args))
    args = dict(shape=g.shape() if g.chance(0.9) else g.pick([None, 3, "4", Hostile()]))
    if g.chance(0.7):
        args["dtype"] = g.dtype()
    if g.chance(0.2):
        args["device"] = g.pick(["cpu", "cuda", None, 3])
    factory = kjit.empty if which == "empty" else kjit.zeros
    return Call(f"kjit.{which}", args, lambda pool: factory(**args))


def array_method_call(g: Gen) -> Call:
    """A kjit.Array's methods and properties, on an array of a random value."""
    import kjit
    obj = g.value()
    method = g.pick(["numpy", "__array__", "__dlpack__", "__dlpack_device__", "to", "repr",
                     "properties", "np.asarray", "np.from_dlpack"])
    extra = g.pick([{}, {"dtype": g.dtype()}, {"copy": g.pick([True, False, None])},
                    {"device": g.pick(["cpu", "cuda", None, 3])},
                    {"max_version": g.pick([(1, 0), (0, 8), None, "x"])},
                    {"stream": g.pick([None, 0, 1, -1])}])

    def run(pool: Pool) -> Any:
        a = kjit.array(obj)
        if method == "numpy":
            return a.numpy()
        if method == "__array__":
            return a.__array__(**{k: v for k, v in extra.items() if k in ("dtype", "copy")})
        if method == "__dlpack__":
            return a.__dlpack__(**{k: v for k, v in extra.items()
                                   if k in ("max_version", "stream")})
        if method == "__dlpack_device__":
            return a.__dlpack_device__()
        if method == "to":
            return a.to(extra.get("device", "cpu"))
        if method == "repr":
            return repr(a)
        if method == "properties":
            return (a.shape, a.strides, a.dtype, a.ndim, a.size, a.nbytes, a.device)
        if method == "np.asarray":
            return np.asarray(a)
        if a.dtype == kjit.bfloat16 or a.device != "cpu":
            # NumPy's from_dlpack knows no bfloat16 and holds no GPU memory: it raises its own
            # error there.
            return a.__dlpack__()
        return np.from_dlpack(a)

    return Call(f"kjit.array(...).{method}", dict(obj=obj, **extra), run)


# --- the child: makes calls, reports each on a protocol stream ------------------------------

# What a call may raise: kjit's documented errors.
def allowed_errors() -> tuple:
    import kjit
    return (TypeError, ValueError, MemoryError, kjit.CompileError, kjit.LaunchError)


def make_calls(seed: int, first: int, count: int, protocol: Any) -> None:
    """Makes calls first .. first + count - 1 of |seed|, writing "start I" before each and
    "done I OUTCOME" or "bad I ERROR" after it."""
    allowed = allowed_errors()
    pool = Pool()
    for index in range(first, first + count):
        protocol.write(f"start {index}\n")
        protocol.flush()
        try:
            call = make_call(seed, index)
        except Exception as error:  # the generator's own failure
            protocol.write(f"bad {index} {type(error).__name__} (generating the call): {error}\n")
            protocol.flush()
            continue
        try:
            call.run(pool)
            outcome = "ok"
        except allowed as error:
            outcome = type(error).__name__
        except BaseException as error:  # noqa: B902 - anything else is what is looked for
            text = str(error).replace("\n", " ")[:300]
            protocol.write(f"bad {index} {type(error).__name__}: {text}\n")
            protocol.flush()
            continue
        protocol.write(f"done {index} {outcome}\n")
        protocol.flush()


# --- the parent: runs children, notices crashes and hangs ------------------------------------


@dataclass
class Failure:
    seed: int
    index: int
    what: str  # "crashed with SIGSEGV", "hung", "raised SystemError: ..."

    def report(self) -> str:
        here = os.path.relpath(__file__)
        try:
            call = make_call(self.seed, self.index).describe()
        except Exception as error:  # the generator's own failure, reported as it is
            call = f"(not made: the generator raised {error!r})"
        return (f"call {self.index} of seed {self.seed} {self.what}:\n"
                f"    {call}\n"
                f"    reproduce: python {here} --seed {self.seed} --call {self.index}")


def run_in_children(seed: int, first: int, count: int,
                    hang_s: float) -> tuple[list[Failure], dict[str, int]]:
    """Makes calls first .. first + count - 1 of |seed| in child processes, a new one after
    each crash or hang. Returns the failures and how many calls ended each way."""
    failures: list[Failure] = []
    outcomes: dict[str, int] = {}
    next_index, end = first, first + count
    while next_index < end:
        child = subprocess.Popen(
            [sys.executable, __file__, "--seed", str(seed), "--first", str(next_index),
             "--count", str(end - next_index), "--protocol-fd", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        lines: queue.Queue = queue.Queue()
        stderr: list[str] = []
        threading.Thread(target=lambda: [lines.put(x) for x in child.stdout] + [lines.put(None)],
                         daemon=True).start()
        threading.Thread(target=lambda: stderr.append(child.stderr.read()), daemon=True).start()
        current: Optional[int] = None
        while True:
            try:
                line = lines.get(timeout=hang_s)
            except queue.Empty:
                child.kill()
                child.wait()
                failures.append(Failure(seed, current if current is not None else next_index,
                                        f"hung (no answer in {hang_s:.0f} s)"))
                break
            if line is None:
                child.wait()
                if current is not None:  # ended inside a call
                    code = child.returncode
                    how = (f"crashed with {signal.Signals(-code).name}" if code < 0
                           else f"ended the process with exit code {code}")
                    tail = (stderr[0] if stderr else "").strip().splitlines()[-3:]
                    failures.append(Failure(seed, current, how + "; " + " | ".join(tail)))
                break
            word, index, *rest = line.split(" ", 2)
            if word == "start":
                current = int(index)
            else:
                current = None
                outcome = rest[0].strip() if rest else ""
                if word == "bad" or outcome == "bad":
                    failures.append(Failure(seed, int(index), "raised " + (
                        outcome if word == "bad" else "an error of the caller's own object")))
                    outcome = "bad"
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                next_index = int(index) + 1
        if failures and failures[-1].index >= next_index:
            next_index = failures[-1].index + 1
    return failures, outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--call", type=int, help="show this call, then make it here")
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--protocol-fd", type=int, help="make the calls, reporting on this fd")
    options = parser.parse_args()
    if options.call is not None:
        call = make_call(options.seed, options.call)
        print(call.describe(), flush=True)
        call.run(Pool())
        return
    # The protocol keeps its own copy of the descriptor; whatever else writes there (verbose=True's
    # source) goes nowhere.
    protocol = os.fdopen(os.dup(options.protocol_fd), "w")
    os.dup2(os.open(os.devnull, os.O_WRONLY), options.protocol_fd)
    make_calls(options.seed, options.first, options.count, protocol)


if __name__ == "__main__":
    main()
