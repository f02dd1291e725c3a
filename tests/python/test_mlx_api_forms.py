"""MLX's earlier forms of the custom-kernel API: the proposal's MetalKernel class, and the dict
calls of MLX 0.17, against NumPy."""

import re

import numpy as np
import pytest

import kjit
from conftest import poisoned
from seed_kernels import INVERT_3X3, MYEXP


def prefix(name):
    return re.escape(f"[kjit.metal_kernel] kernel '{name}': ")


# --- the first form of MLX's proposal ------------------------------------------------------
# Its calls take no outputs to write: the data is fresh and random at each test, so that no
# earlier result can be found where an output is allocated.


def test_myexp_in_the_proposals_form(rng, capsys):
    a = rng.standard_normal((4, 16)).astype(np.float16)
    kernel = kjit.MetalKernel(
        name="myexp",
        source=MYEXP,
        grid=(a.size, 1, 1),
        threadgroup=(256, 1, 1),
        output_shapes={"out": a.shape},
        output_dtypes={"out": a.dtype},
        verbose=True,
    )
    kernel.template(T=kjit.float32)
    result = kernel(inp=a)
    assert list(result) == ["out"]
    out = result["out"]
    assert out.shape == a.shape and out.dtype == np.float16
    ref = np.exp(a.astype(np.float64))
    # Computed in float32 (T) and rounded once to half.
    half_ulp = np.spacing(ref.astype(np.float16)).astype(np.float64) / 2
    assert np.all(np.abs(out.astype(np.float64) - ref) <= half_ulp + 4 * ref * 2.0 ** -24)
    # verbose prints the generated kernel, T declared as float.
    printed = capsys.readouterr().out
    assert "custom_kernel_myexp" in printed and "float" in printed


def invert_3x3(a):
    """The proposal's invert_3x3, with the seed's body."""
    kernel = kjit.MetalKernel(
        name="invert3x3",
        source=INVERT_3X3,
        output_shapes={"out": a.shape},
        output_dtypes={"out": a.dtype},
        grid=(a.size // 9, 1, 1),
        threadgroup=(256, 1, 1),
    )
    kernel.template(T=a.dtype)
    return kernel(a=a)["out"]


def test_invert_3x3_in_the_proposals_form(rng):
    n = 1003  # not a multiple of the group: the last group is partial
    a = (np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3))).astype(np.float32)
    out = invert_3x3(a)
    assert out.shape == a.shape and out.dtype == np.float32
    a64 = a.astype(np.float64)
    ref = np.linalg.inv(a64)
    err = np.abs(out - ref).max(axis=(1, 2)) / np.abs(ref).max(axis=(1, 2))
    assert np.all(err <= 2e-6 * np.linalg.cond(a64))
    np.testing.assert_allclose(a64 @ out.astype(np.float64), np.broadcast_to(np.eye(3), a.shape),
                               atol=1e-4)


def test_the_proposals_kernel_keeps_its_template_and_launch_until_changed(rng):
    source = "uint i = thread_position_in_grid.x; out[i] = x[i] * T(N);"
    x = rng.standard_normal(37).astype(np.float32)
    kernel = kjit.MetalKernel(name="scaled", source=source, grid=(x.size, 1, 1),
                              threadgroup=(8, 1, 1), output_shapes={"out": x.shape},
                              output_dtypes={"out": np.float32})
    kernel.template(T=kjit.float32, N=3)
    np.testing.assert_array_equal(kernel(x=x)["out"], x * 3)
    kernel.template(T=kjit.float32, N=-2)
    np.testing.assert_array_equal(kernel(x=x)["out"], x * -2)
    # A launch of another size: the shapes and the grid are the kernel's to change.
    y = rng.standard_normal(5).astype(np.float32)
    kernel.grid, kernel.output_shapes = (y.size, 1, 1), {"out": y.shape}
    np.testing.assert_array_equal(kernel(x=y)["out"], y * -2)
    assert kernel.name == "scaled"


# --- MLX 0.17's dict calls -----------------------------------------------------------------

SUM_AND_DIFFERENCE = """
    uint i = thread_position_in_grid.x;
    total[i] = a[i] + b[i] * T(scale);
    difference[i] = a[i] - b[i];
"""


def dict_call(a, b, outputs=None, template=None):
    return dict(inputs={"b": b, "a": a}, output_shapes={"total": a.shape, "difference": a.shape},
                output_dtypes={"total": np.float32, "difference": np.float32},
                template=template if template is not None else {"T": kjit.float32, "scale": 3},
                grid=(a.size, 1, 1), threadgroup=(32, 1, 1), outputs=outputs)


def check_sum_and_difference(result, a, b):
    assert list(result) == ["total", "difference"]
    np.testing.assert_array_equal(result["total"], a + b * np.float32(3))
    np.testing.assert_array_equal(result["difference"], a - b)


@pytest.mark.parametrize("template", ["dict", "pairs"])
def test_a_kernel_made_without_names_takes_them_from_the_dicts(rng, template):
    kernel = kjit.metal_kernel(name="sum_and_difference", source=SUM_AND_DIFFERENCE)
    a, b = (rng.standard_normal(100).astype(np.float32) for _ in range(2))
    total, difference = poisoned(a.shape, np.float32), poisoned(a.shape, np.float32)
    args = {"T": kjit.float32, "scale": 3}
    # The outputs to write may come in any order: they are matched by name.
    result = kernel(**dict_call(a, b, outputs={"difference": difference, "total": total},
                                template=args if template == "dict" else list(args.items())))
    check_sum_and_difference(result, a, b)
    assert result["total"] is total and result["difference"] is difference


def test_a_kernel_made_with_names_takes_dict_calls_too(rng):
    kernel = kjit.metal_kernel(name="named_sum_and_difference", input_names=["a", "b"],
                               output_names=["total", "difference"], source=SUM_AND_DIFFERENCE)
    a, b = (rng.standard_normal(70).astype(np.float32) for _ in range(2))
    total, difference = poisoned(a.shape, np.float32), poisoned(a.shape, np.float32)
    # The inputs' dict is in another order than input_names: names, not places, decide.
    result = kernel(**dict_call(a, b, outputs={"total": total, "difference": difference}))
    check_sum_and_difference(result, a, b)
    # And the same kernel with lists, in the order of its names.
    listed = kernel(inputs=[a, b], output_shapes=[a.shape, a.shape],
                    output_dtypes=[np.float32, np.float32],
                    template=[("T", kjit.float32), ("scale", 3)], grid=(a.size, 1, 1),
                    threadgroup=(32, 1, 1))
    np.testing.assert_array_equal(listed[0], result["total"])
    np.testing.assert_array_equal(listed[1], result["difference"])


def test_the_factory_returns_each_form_its_kernel(real_factories):
    nameless = kjit.metal_kernel(name="k", source="out[0] = x[0];")
    positional = kjit.metal_kernel("k", "out[0] = x[0];")
    named = kjit.metal_kernel(name="k", input_names=["x"], output_names=["out"],
                              source="out[0] = x[0];")
    assert isinstance(nameless, kjit.DictFormKernel)
    assert isinstance(positional, kjit.DictFormKernel)
    assert isinstance(named, kjit.Kernel)
    # One set of names is one kernel, made once.
    assert nameless.kernel_for(["x"], ["out"]) is nameless.kernel_for(["x"], ["out"])
    assert nameless.kernel_for(["x"], ["out"]).input_names == ["x"]


# --- bad calls -----------------------------------------------------------------------------

X = np.arange(4, dtype=np.float32)
COPY = "uint i = thread_position_in_grid.x; out[i] = x[i];"


def copy_call(**overrides):
    call = dict(inputs={"x": X}, output_shapes={"out": X.shape}, output_dtypes={"out": X.dtype},
                grid=(4, 1, 1), threadgroup=(4, 1, 1))
    call.update(overrides)
    return call


NAMED_ERRORS = [
    ("an-unknown-input", dict(inputs={"x": X, "y": X}), ValueError,
     r"inputs: unknown 'y' \(the kernel's inputs: x\)$"),
    ("a-missing-input", dict(inputs={"z": X}), ValueError,
     r"inputs: missing 'x'; unknown 'z' \(the kernel's inputs: x\)$"),
    ("an-unknown-output", dict(output_shapes={"out": X.shape, "o2": X.shape}), ValueError,
     r"output_shapes: unknown 'o2' \(the kernel's outputs: out\)$"),
    ("dtypes-of-other-outputs", dict(output_dtypes={"o": X.dtype}), ValueError,
     r"output_dtypes: missing 'out'; unknown 'o' \(the kernel's outputs: out\)$"),
    ("a-key-not-a-str", dict(inputs={0: X}), TypeError, r"inputs: every key must be a str name, "
     r"got 0$"),
    ("dict-inputs-list-shapes", dict(output_shapes=[X.shape]), TypeError,
     r"inputs: expected a list of arrays or scalars .*got dict \(a call with dicts, MLX 0\.17's "
     r"form, passes output_shapes, output_dtypes and outputs as dicts too\)$"),
    ("list-inputs-dict-shapes", dict(inputs=[X]), TypeError,
     r"output_shapes: expected a list, got dict$"),
    ("dict-call-list-dtypes", dict(output_dtypes=[X.dtype]), TypeError,
     r"output_dtypes: expected a dict keyed by name, as inputs and output_shapes are \(MLX "
     r"0\.17's form\); got list$"),
    ("dict-call-list-outputs", dict(outputs=[np.empty(4, np.float32)]), TypeError,
     r"outputs: expected a dict keyed by name, as inputs and output_shapes are"),
    ("dict-call-bad-grid", dict(grid=(4, 1)), ValueError, r"grid: expected 3 sizes"),
]


@pytest.mark.parametrize("label, overrides, exc, pattern", NAMED_ERRORS,
                         ids=[case[0] for case in NAMED_ERRORS])
def test_dict_calls_of_a_named_kernel_reject(label, overrides, exc, pattern):
    kernel = kjit.metal_kernel(name="copy", input_names=["x"], output_names=["out"], source=COPY)
    with pytest.raises(exc, match="^" + prefix("copy") + pattern):
        kernel(**copy_call(**overrides))


NAMELESS_ERRORS = [
    ("list-inputs", dict(inputs=[X]), TypeError,
     r"inputs: expected a dict keyed by name, as the kernel was made without input_names and "
     r"output_names .*; got list$"),
    ("list-shapes", dict(output_shapes=[X.shape]), TypeError,
     r"output_shapes: expected a dict keyed by name, as the kernel was made without"),
    ("dtypes-of-other-outputs", dict(output_dtypes={"out": X.dtype, "o": X.dtype}), ValueError,
     r"output_dtypes: unknown 'o' \(the outputs of output_shapes: out\)$"),
    ("outputs-of-other-outputs", dict(outputs={"o": np.empty(4, np.float32)}), ValueError,
     r"outputs: missing 'out'; unknown 'o' \(the outputs of output_shapes: out\)$"),
    ("a-key-not-a-str", dict(output_shapes={("out",): X.shape}), TypeError,
     r"output_shapes: every key must be a str name"),
]


@pytest.mark.parametrize("label, overrides, exc, pattern", NAMELESS_ERRORS,
                         ids=[case[0] for case in NAMELESS_ERRORS])
def test_calls_of_a_kernel_made_without_names_reject(label, overrides, exc, pattern):
    kernel = kjit.metal_kernel(name="nameless_copy", source=COPY)
    with pytest.raises(exc, match="^" + prefix("nameless_copy") + pattern):
        kernel(**copy_call(**overrides))


def test_names_given_by_half_are_refused(real_factories):
    with pytest.raises(TypeError, match=r"^kjit\.metal_kernel\(\) missing argument "
                                        r"'output_names'$"):
        kjit.metal_kernel(name="k", input_names=["x"], source=COPY)
