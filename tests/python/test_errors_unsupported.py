"""Unsupported features fail before compiling, naming the feature and its line; user names
that only look like features compile."""


import numpy as np
import pytest

import kjit
from conftest import poisoned
from error_cases import check_prefix, make


UNSUPPORTED = [
    ("metal-texture", "metal", "uint i = 0;\ntexture2d<float> t;\nout[i] = inp[i];\n", "",
     r"\[kjit\.metal_kernel\] 'texture2d' \(source line 2\) is not supported by the Metal "
     r"dialect: textures"),
    ("metal-texture-in-header", "metal", "out[0] = inp[0];", "\n\ntexture2d<float> t;\n",
     r"'texture2d' \(header line 3\) is not supported by the Metal dialect"),
    ("metal-waiting-helper-with-auto", "metal", "out[0] = total(inp[0]);",
     "\nauto total(float v) {\n  return simd_sum(v);\n}\n",
     r"\[kjit\.metal_kernel\] helper 'total' \(header line 2\) waits for other threads, so on "
     r"the CPU it must name its return type"),
]


@pytest.mark.parametrize("label,api,body,header,pattern", UNSUPPORTED,
                         ids=[u[0] for u in UNSUPPORTED])
def test_unsupported_feature_fails_at_build(label, api, body, header, pattern):
    before = kjit.cache_info()["compiles"]
    with pytest.raises(ValueError, match=pattern) as excinfo:
        k = make(api, name="feature", input_names=["inp"], output_names=["out"], source=body,
                 header=header)
        k.build(inputs=[("float32", 1)], output_dtypes=["float32"])
    check_prefix(excinfo)
    assert kjit.cache_info()["compiles"] == before  # rejected without running the compiler


@pytest.mark.parametrize("label,api,body,header,pattern", UNSUPPORTED[:2],
                         ids=[u[0] for u in UNSUPPORTED[:2]])
def test_never_supported_feature_fails_when_the_kernel_is_made(label, api, body, header,
                                                               pattern):
    with pytest.raises(ValueError, match=pattern) as excinfo:
        make(api, name="feature", input_names=["inp"], output_names=["out"], source=body,
             header=header)
    check_prefix(excinfo)


LOOKALIKES = ["simd_lane_id", "atomic_count", "simd_total", "atomic_counter", "quad_sum_x",
              "sampler_id", "texture_size", "threadgroup_count", "simdgroup_size"]


@pytest.mark.parametrize("var", LOOKALIKES)
def test_user_names_that_look_like_metal_features_compile(var, rng):
    body = f"""
    uint {var} = thread_position_in_grid.x;
    out[{var}] = inp[{var}] * 3;
"""
    k = kjit.metal_kernel(name="lookalike", input_names=["inp"], output_names=["out"],
                          source=body)
    x = rng.standard_normal(19).astype(np.float32)
    out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
            threadgroup=(8, 1, 1), outputs=[poisoned(x.shape, np.float32)])[0]
    np.testing.assert_array_equal(out, x * 3)


def test_lookalike_input_names_compile(rng):
    body = """
    uint i = thread_position_in_grid.x;
    atomic_count[i] = simd_lane_id[i] + 1;
"""
    k = kjit.metal_kernel(name="lookalike_names", input_names=["simd_lane_id"],
                          output_names=["atomic_count"], source=body)
    x = rng.integers(-1000, 1000, size=23).astype(np.int32)
    out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
            threadgroup=(32, 1, 1))[0]
    np.testing.assert_array_equal(out, x + 1)


def test_feature_names_in_comments_compile(rng):
    body = """
    int i = threadIdx.x;  // no __syncthreads() or atomicAdd needed here
    /* threadgroup_barrier, simd_sum */
    out[i] = inp[i] - 1.0f;
"""
    k = kjit.cuda_kernel(name="comments", input_names=["inp"], output_names=["out"],
                         source=body)
    x = rng.standard_normal(16).astype(np.float32)
    out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(16, 1, 1),
            threadgroup=(16, 1, 1))[0]
    np.testing.assert_array_equal(out, x - np.float32(1))


@pytest.mark.parametrize("var", ["atomic_fetch_total", "simd_shuffled", "texture2d_size",
                                 "simd_prefix_len"])
def test_user_names_with_a_feature_prefix_compile(var, rng):
    body = f"uint {var} = thread_position_in_grid.x;\nout[{var}] = inp[{var}] * 3;\n"
    k = kjit.metal_kernel(name="prefix_lookalike", input_names=["inp"], output_names=["out"],
                          source=body)
    x = rng.standard_normal(8).astype(np.float32)
    out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(8, 1, 1),
            threadgroup=(8, 1, 1))[0]
    np.testing.assert_array_equal(out, x * 3)


NO_GPU_CALLS = """
import numpy as np, kjit
k = kjit.metal_kernel(name="no_gpu", input_names=["x"], output_names=["y"], source="y[0] = x[0];")
calls = [
    lambda: kjit.array(np.zeros((), np.int32), dtype="float16", device="cuda"),
    lambda: kjit.array(np.zeros(3, np.float32), device="cuda"),
    lambda: kjit.empty([3], device="cuda"),
    lambda: k(inputs=[np.zeros(1, np.float32)], output_shapes=[(1,)], output_dtypes=["float32"],
              grid=(1, 1, 1), threadgroup=(1, 1, 1), device="cuda"),
]
for call in calls:
    try:
        call()
        print("ran")
    except ValueError as e:
        print("ValueError:", e)
"""


@pytest.mark.skipif(bool(kjit._kjit.cuda_status()["devices"]),
                    reason="a CUDA device works here: the calls would run")
def test_gpu_requests_without_a_gpu_are_value_errors_not_crashes():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", NO_GPU_CALLS], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 4
    assert all(line.startswith("ValueError: ") and "device" in line for line in lines), lines
