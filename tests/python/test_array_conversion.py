"""kjit.array(x, dtype=...) converts between dtypes as NumPy's astype does (bfloat16 rounded once,
from the exact value), for every pair of kjit's dtypes; complex to real and floating values out of an
integer type's range are refused."""

import itertools
import math
import warnings
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import kjit

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "bfloat16", "float32", "float64", "complex64"]
FLOATS = {"float16", "bfloat16", "float32", "float64"}
INTEGERS = {n for n in NAMES if "int" in n}


def np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def finite_max(name: str) -> float:
    return float(ml_dtypes.finfo(np_dtype(name)).max)


def source_values(src: str, dst: str, rng: np.random.Generator, n: int = 400) -> np.ndarray:
    """Fresh values of dtype src: the whole range of src, or for a floating src and an integer
    dst, values whose whole part dst holds (with fractions, halves and values near the ends)."""
    dt = np_dtype(src)
    if src == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if src in INTEGERS:
        info = np.iinfo(dt)
        values = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        values[:4] = [info.min, info.max, 0, 1]
        if info.bits == 64:
            values[4] = 2**40 + 2**32 + 1  # a bfloat16 tie once rounded to float32
        return values
    if src == "complex64":
        parts = rng.standard_normal((2, n)) * np.exp2(rng.integers(-30, 30, (2, n)))
        parts[:, :6] = [[0, 0, 1, 0, np.inf, np.nan], [0, 1, 0, -0.0, 1, 2]]
        return (parts[0] + 1j * parts[1]).astype(np.complex64)
    if dst in INTEGERS:
        info = np.iinfo(np_dtype(dst))
        # Shrunk so that rounding to src cannot leave dst's range.
        lo, hi = max(info.min, -finite_max(src)) * 0.99, min(info.max, finite_max(src)) * 0.99
        wide = rng.uniform(lo, hi, n // 2)
        small = rng.uniform(max(lo, -300), min(hi, 300), n // 2)
        halves = np.round(small[: n // 8]) + 0.5
        values = np.concatenate([wide, small, np.clip(halves, lo, hi), [-0.75, 0.0, -0.0]])
        return values.astype(dt)
    # Floating to floating, complex or bool: every magnitude src has, and its special values.
    scale = np.exp2(rng.integers(-160, 160, n).astype(np.float64))
    values = rng.standard_normal(n) * scale
    # Ties of float16 and bfloat16 once rounded to float32, but not before: rounded directly.
    values[:9] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 65519.99, 65520.0, 1 + 2**-11 + 2**-40,
                  1 + 2**-8 + 2**-40]
    with np.errstate(over="ignore"):
        return values.astype(dt)


def rounded_to_bfloat16(value: float | int) -> float:
    """value rounded once, to nearest even, to bfloat16 (8 significant bits, float32's exponent
    range), from its exact value: the reference for bfloat16 results, as older ml_dtypes round
    float64 and int64 through float32 (twice)."""
    if math.isnan(value) or math.isinf(value) or value == 0:
        return float(value)
    exact = abs(Fraction(value))
    exponent = exact.numerator.bit_length() - exact.denominator.bit_length()
    if Fraction(2) ** exponent > exact:
        exponent -= 1
    quantum = Fraction(2) ** (max(exponent, -126) - 7)
    rounded = round(exact / quantum) * quantum  # round() of a Fraction ties to even
    magnitude = math.inf if rounded >= 2**128 else float(rounded)
    return math.copysign(magnitude, value)


def numpy_astype(values: np.ndarray, dst: str) -> np.ndarray:
    if dst == "bfloat16" and values.dtype.kind != "c":
        exact = [rounded_to_bfloat16(v) for v in values.tolist()]
        return np.array(exact, np.float64).astype(np_dtype(dst))
    with warnings.catch_warnings(), np.errstate(over="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        return values.astype(np_dtype(dst))


def assert_same_elements(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "fcV" or want.dtype == np_dtype("bfloat16"):
        # Equal values, NaN where NumPy has NaN, and the sign of zeros and infinities kept.
        for g, w in ([(got.real, want.real), (got.imag, want.imag)] if want.dtype.kind == "c"
                     else [(got.astype(np.float64), want.astype(np.float64))]):
            np.testing.assert_array_equal(g, w)
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
    else:
        np.testing.assert_array_equal(got, want)


CONVERTIBLE = [(s, d) for s, d in itertools.product(NAMES, NAMES)
               if s != d and (s != "complex64" or d in ("bool", "complex64"))]


@pytest.mark.parametrize("src,dst", CONVERTIBLE, ids=[f"{s}-{d}" for s, d in CONVERTIBLE])
def test_array_converts_as_numpy_astype(src, dst, rng):
    values = source_values(src, dst, rng)
    out = kjit.array(values, dtype=kjit.Dtype.__members__[dst])
    assert isinstance(out, kjit.Array)
    assert out.dtype == kjit.Dtype.__members__[dst] and out.device == "cpu"
    assert out.shape == values.shape
    assert_same_elements(np.asarray(out), numpy_astype(values, dst))


def test_float_to_int_truncates_toward_zero_and_bool_is_nonzero(rng):
    values = np.array([2.5, -2.5, 2.999, -2.999, -0.5, 0.0, 7.0], np.float32)
    np.testing.assert_array_equal(np.asarray(kjit.array(values, dtype="int32")),
                                  [2, -2, 2, -2, 0, 0, 7])
    np.testing.assert_array_equal(np.asarray(kjit.array(values, dtype="bool")),
                                  [True, True, True, True, True, False, True])
    np.testing.assert_array_equal(np.asarray(kjit.array(np.array([np.nan, -0.0]), dtype="bool")),
                                  [True, False])


def test_float64_rounds_directly_to_float16_and_bfloat16():
    # Through float32 the first value would be a tie and round down to 1.0: NumPy and ml_dtypes
    # round the float64 itself, up.
    x = np.array([1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-40])
    assert np.asarray(kjit.array(x[:1], dtype="float16"))[0] == np.float16(1 + 2**-10)
    assert (np.asarray(kjit.array(x[1:], dtype="bfloat16")).astype(np.float64)[0]
            == 1 + 2**-7)
    big = np.array([2**40 + 2**32 + 1], np.int64)
    assert (np.asarray(kjit.array(big, dtype="bfloat16")).astype(np.float64)[0]
            == 2**40 + 2**33)


def test_strided_views_scalars_and_the_same_dtype(rng):
    base = rng.standard_normal((6, 10)) * 100
    view = base[::2, ::-3]
    np.testing.assert_array_equal(np.asarray(kjit.array(view, dtype="int16")),
                                  view.astype(np.int16))
    assert np.asarray(kjit.array(3.7, dtype=kjit.int32)) == 3
    assert np.asarray(kjit.array(True, dtype="float64")) == 1.0
    # The same dtype stays a view of obj's memory.
    same = kjit.array(base, dtype=np.float64)
    assert np.asarray(same).ctypes.data == base.ctypes.data
    converted = kjit.array(base, dtype=np.float32)
    base[0, 0] = 12345.0
    assert np.asarray(converted)[0, 0] != np.float32(12345.0)


def test_read_only_inputs_convert_to_writable_arrays(rng):
    a = rng.integers(-50, 50, 20).astype(np.int64)
    a.setflags(write=False)
    out = kjit.array(a, dtype="float32")
    view = np.asarray(out)
    assert view.flags.writeable
    np.testing.assert_array_equal(view, a.astype(np.float32))


def test_complex_to_real_is_refused():
    z = np.array([1 + 2j, 3 - 1j], np.complex64)
    for dst in sorted(set(NAMES) - {"bool", "complex64"}):
        with pytest.raises(ValueError, match=rf"^dtype: complex64 converts only to complex64 or "
                                             rf"bool; {dst} would discard the imaginary part$"):
            kjit.array(z, dtype=dst)


@pytest.mark.parametrize("value,dst", [(300.0, "int8"), (-1.0, "uint32"), (np.nan, "int32"),
                                       (np.inf, "int64"), (2.0**64, "uint64"),
                                       (-(2.0**63) - 4096, "int64")])
def test_floats_out_of_an_integer_types_range_are_refused(value, dst, rng):
    values = rng.uniform(-100, 100, 9)
    values[int(rng.integers(0, 9))] = value
    with pytest.raises(ValueError, match=rf"^dtype: .* is out of the range of {dst} "):
        kjit.array(np.abs(values) if dst.startswith("u") and value >= 0 else values, dtype=dst)


def test_values_at_the_ends_of_an_integer_types_range_convert():
    x = np.array([-128.9, 127.9, -0.9], np.float64)
    np.testing.assert_array_equal(np.asarray(kjit.array(x, dtype="int8")), [-128, 127, 0])
    u = np.array([2.0**64 - 2048, -0.99], np.float64)
    np.testing.assert_array_equal(np.asarray(kjit.array(u, dtype="uint64")),
                                  np.array([2**64 - 2048, 0], np.uint64))


def test_conversion_errors_name_the_parameter():
    with pytest.raises(TypeError, match=r"^dtype: "):
        kjit.array(np.zeros(3), dtype="not_a_dtype")
