"""After errors the library keeps working: a failed compile is not cached and does not
disturb other kernels, and a bad call does not break the kernel object."""


import numpy as np
import pytest

import kjit
from conftest import poisoned
from error_cases import N, TWICE_METAL, X, call_args, cuda_present, make, twice


# ---------------------------------------------------------------------------------------------
# A failed compile is not cached, and does not disturb other kernels
# ---------------------------------------------------------------------------------------------

def test_failed_compile_is_not_cached(rng):
    body = "uint i = thread_position_in_grid.x;\nout[i] = inp[i] +* 2;\n"
    bad = make("metal", name="never_builds", input_names=["inp"], output_names=["out"],
               source=body)
    before = kjit.cache_info()
    for _ in range(2):
        with pytest.raises(kjit.CompileError, match=r"source line 2"):
            bad(**call_args())
    # The same kernel made again, and built without running: still a compile error.
    again = make("metal", name="never_builds", input_names=["inp"], output_names=["out"],
                 source=body)
    with pytest.raises(kjit.CompileError, match=r"source line 2"):
        again.build(inputs=[("float32", 1)], output_dtypes=["float32"])
    after = kjit.cache_info()
    assert after["compiles"] == before["compiles"]
    assert after["memory_entries"] == before["memory_entries"]

    # Other kernels still work, and so does the bad one's neighbour with the same name.
    good = make("metal", name="never_builds", input_names=["inp"], output_names=["out"],
                source=TWICE_METAL)
    x = rng.standard_normal(41).astype(np.float32)
    out = good(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
               grid=(x.size, 1, 1), threadgroup=(16, 1, 1))[0]
    np.testing.assert_array_equal(out, x * 2)
    with pytest.raises(kjit.CompileError):
        bad(**call_args())


def test_compile_error_for_one_signature_leaves_others_working(rng):
    # N is a template constant: without it the body does not compile.
    body = "uint i = thread_position_in_grid.x;\nout[i] = static_cast<T>(inp[i]) * N;\n"
    k = kjit.metal_kernel(name="needs_template", input_names=["inp"], output_names=["out"],
                          source=body)
    x = rng.standard_normal(30).astype(np.float32)
    args = dict(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                grid=(x.size, 1, 1), threadgroup=(32, 1, 1))
    with pytest.raises(kjit.CompileError, match=r"source line 2") as excinfo:
        k(**args, template=[("T", kjit.float32)])
    assert "'N'" in str(excinfo.value) or "N" in excinfo.value.log
    out = k(**args, template=[("T", kjit.float32), ("N", 3)])[0]
    np.testing.assert_array_equal(out, x * np.float32(3))
    with pytest.raises(kjit.CompileError):
        k(**args, template=[("T", kjit.float32)])
    out = k(**args, template=[("T", kjit.float32), ("N", -2)])[0]
    np.testing.assert_array_equal(out, x * np.float32(-2))


# ---------------------------------------------------------------------------------------------
# A bad call does not break the kernel object
# ---------------------------------------------------------------------------------------------

def test_kernel_works_after_bad_calls(rng):
    k = twice("survivor")
    bad_calls = [
        dict(inputs=[X, X]),
        dict(output_shapes=[]),
        dict(output_dtypes=["int4"]),
        dict(grid=(N, 1, -1)),
        dict(threadgroup=(0, 1, 1)),
        dict(template=[("T", 1.5)]),
        dict(inputs=[{"not": "an array"}]),
        dict(outputs=[np.zeros(N + 1, np.float32)]),  # found after compiling
        dict(device="tpu"),
    ]
    if not cuda_present():
        bad_calls.append(dict(device="cuda:0"))
    for bad in bad_calls:
        with pytest.raises((ValueError, TypeError)):
            k(**call_args(**bad))
        x = rng.standard_normal(57).astype(np.float32)
        out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                grid=(x.size, 1, 1), threadgroup=(32, 1, 1))[0]
        np.testing.assert_array_equal(out, x * 2)

    # And into a preallocated output, after a bad outputs= call.
    with pytest.raises(ValueError, match=r"outputs\[0\] \('out'\) has dtype float64"):
        k(**call_args(outputs=[np.zeros(N, np.float64)]))
    x = rng.standard_normal((6, 7)).astype(np.float32)
    dest = poisoned(x.shape, np.float32)
    out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
            threadgroup=(64, 1, 1), outputs=[dest])[0]
    assert out is dest
    np.testing.assert_array_equal(dest, x * 2)
