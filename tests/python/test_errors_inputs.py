"""Inputs at the edges: accepted inputs not reported as errors, outputs too large, exports
that fail, values of NumPy's date and time types, text without a UTF-8 form, and read-only
memory kept read-only."""


import re

import numpy as np
import pytest

import kjit
from error_cases import N, TWICE_METAL, X, call_args, readonly, twice


@pytest.mark.parametrize("make_input", [
    lambda v: np.broadcast_to(v[:1], (N,)),
    lambda v: readonly(v),
], ids=["broadcast_to", "writeable-false"])
def test_read_only_inputs_are_accepted(make_input, rng):
    v = rng.standard_normal(N).astype(np.float32)
    x = make_input(v)
    out = twice("readonly_in")(**call_args(inputs=[x]))[0]
    np.testing.assert_array_equal(out, np.asarray(x) * 2)


def test_outputs_too_large_to_allocate_or_to_address_are_named():
    with pytest.raises(MemoryError, match=r"kernel 'twice': output_shapes\[0\] \('out'\): "
                                          r"18014398509481984 bytes could not be allocated on "
                                          r"the CPU"):
        twice()(**call_args(output_shapes=[(2**52,)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                            device="cpu"))
    # No element, but dimensions no array could address (NumPy could not make it either).
    with pytest.raises(ValueError, match=r"output_shapes\[0\]: too many elements"):
        twice()(**call_args(output_shapes=[(0, 2**62, 8)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                            device="cpu"))
    with pytest.raises(MemoryError, match=r"^18014398509481984 bytes could not be allocated"):
        kjit.empty((2**52,), device="cpu")


# NumPy's date and time values: the scalars export a buffer that gives no strides, the arrays
# none at all.
DATETIMES = [np.datetime64("2020-01-01"), np.datetime64("NaT"), np.timedelta64(5, "s"),
             np.timedelta64("NaT"), np.array(["2020-01-01", "NaT"], dtype="datetime64[D]"),
             np.zeros(N, dtype="timedelta64[ns]"), np.array(np.datetime64("NaT", "ns"))]


@pytest.mark.parametrize("value", DATETIMES, ids=lambda v: f"{type(v).__name__}-{v.dtype}")
def test_datetime_values_are_refused_wherever_an_array_is_taken(value):
    kernel = twice("twice_datetime")
    bound = kernel.bind(**{k: v for k, v in call_args().items() if k != "inputs"})
    unsupported = re.escape(f"arrays of dtype '{value.dtype}' are not supported")
    for param, run in [
        (r"inputs\[0\] \('inp'\)", lambda: kernel(**call_args(inputs=[value]))),
        (r"outputs\[0\]", lambda: kernel(**call_args(outputs=[value]))),
        (r"inputs\[0\] \('inp'\)", lambda: bound(value)),
        (r"outputs\[0\]", lambda: bound(X, value)),
    ]:
        with pytest.raises(TypeError, match=r"^\[kjit\.metal_kernel\] kernel 'twice_datetime': "
                                            + param + ": " + unsupported):
            run()
    with pytest.raises(TypeError, match=r"^obj: " + unsupported):
        kjit.array(value)
    # The kernel still runs afterwards.
    np.testing.assert_array_equal(bound(X)[0], X * 2)


LONE_SURROGATE = "\ud800"  # a str with no UTF-8 form


def test_an_input_whose_export_fails_says_why():
    class Refusing:
        def __dlpack__(self, **kwargs):
            raise ValueError("no export today")

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(TypeError, match=r"inputs\[0\] \('inp'\): expected an array .* got "
                                        r"'.*Refusing' \(its __dlpack__ raised ValueError: no "
                                        r"export today\)"):
        twice()(**call_args(inputs=[Refusing()]))


@pytest.mark.usefixtures("real_factories")  # the suite's kernels read the arguments again
def test_an_export_that_returns_a_capsule_already_read_is_refused(rng):
    # A DLPack capsule is read once: its reader frees the memory it describes when done.
    x = rng.standard_normal(N).astype(np.float32)
    capsule = x.__dlpack__()

    class SameCapsule:
        def __dlpack__(self, **kwargs):
            return capsule

        def __dlpack_device__(self):
            return (1, 0)

    k = kjit.metal_kernel(name="twice", input_names=["inp"], output_names=["out"],
                          source=TWICE_METAL)
    (first,) = k(**call_args(inputs=[SameCapsule()], device="cpu"))
    np.testing.assert_allclose(first.numpy(), 2.0 * x.astype(np.float64), rtol=1e-6)
    with pytest.raises(ValueError, match=r"inputs\[0\] \('inp'\): its __dlpack__ returned a "
                                         r"capsule that was already read"):
        k(**call_args(inputs=[SameCapsule()], device="cpu"))


def test_a_stream_whose_handle_cannot_be_read_says_why():
    class Broken:
        def __cuda_stream__(self):
            raise RuntimeError("stream gone")

    with pytest.raises(TypeError, match=r"stream: reading the stream's handle raised "
                                        r"RuntimeError: stream gone"):
        twice()(**call_args(stream=Broken()))


@pytest.mark.parametrize("make,words", [
    (lambda: kjit.metal_kernel(name="k" + LONE_SURROGATE, input_names=["inp"],
                               output_names=["out"], source=""), r"name"),
    (lambda: kjit.cuda_kernel(name="k", input_names=["i" + LONE_SURROGATE], output_names=["out"],
                              source=""), r"input_names"),
    (lambda: kjit.metal_kernel(name="k", input_names=["inp"], output_names=["out"],
                               source=LONE_SURROGATE), r"source"),
    (lambda: twice()(**call_args(template=[("T" + LONE_SURROGATE, 1)])), r"template"),
    (lambda: twice()(**call_args(output_dtypes=["f" + LONE_SURROGATE])), r"output_dtypes\[0\]"),
    (lambda: twice()(**call_args(device="cpu" + LONE_SURROGATE)), r"device"),
    (lambda: twice().build(inputs=[(np.float32, 1)], output_dtypes=[np.float32],
                           target=LONE_SURROGATE), r"target"),
], ids=["name", "input-names", "source", "template", "output-dtypes", "device", "target"])
def test_text_without_a_utf8_form_names_its_parameter(make, words):
    with pytest.raises(ValueError, match=words + r": the text is not valid Unicode"):
        make()


@pytest.mark.parametrize("make,words", [
    (lambda: kjit.array(None), r"obj: expected an array"),
    (lambda: kjit.empty(None), r"shape: expected a sequence of ints"),
    (lambda: kjit.zeros((8,), dtype=None), r"dtype: expected a dtype"),
    (lambda: kjit.empty((8,), device=3), r"device: expected 'cpu', 'cuda' or 'cuda:N'"),
], ids=["array-none", "empty-shape-none", "zeros-dtype-none", "empty-device-int"])
def test_array_factories_name_the_bad_argument(make, words):
    with pytest.raises(TypeError, match="^" + words):
        make()


def test_read_only_memory_stays_read_only_through_kjit_array(rng):
    # A kjit.Array over read-only memory (a NumPy array, bytes) is no output.
    v = rng.standard_normal(N).astype(np.float32)
    frozen = readonly(v.copy())
    data = bytes(rng.integers(0, 256, 4 * N, dtype=np.uint8))
    for memory, view in ((frozen, kjit.array(frozen)),
                         (data, kjit.array(np.frombuffer(data, np.float32)))):
        before = bytes(memory)
        with pytest.raises(ValueError, match=r"outputs\[0\] \('out'\) is read-only"):
            twice("readonly_out")(**call_args(inputs=[v], outputs=[view]))
        assert bytes(memory) == before
        # As an input it is read as usual; other libraries see it read-only too.
        out = twice("readonly_in")(**call_args(inputs=[view]))[0]
        with np.errstate(invalid="ignore"):  # random bytes may spell a signalling NaN
            expected = np.frombuffer(before, np.float32) * 2
        np.testing.assert_array_equal(out, expected)
        for seen in (np.asarray(view), np.from_dlpack(view)):
            assert not seen.flags.writeable
            np.testing.assert_array_equal(seen, np.frombuffer(before, np.float32))
