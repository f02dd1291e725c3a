"""JAX benchmark: a jitted function calling one small kjit op, side by side in one run with the
same function calling jnp.exp, and with the same kjit launch made from a Python callback
(jax.pure_callback: a handler that takes the GIL for every launch, as a Python FFI callback
does), on each platform JAX has here (the CPU; the GPU where jax has CUDA).

Usage: PYTHONPATH=build/python python bench/jax_op.py [--calls N]
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

import kjit
import kjit.jax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from timing import per_call_each  # noqa: E402

EXP = "uint i = thread_position_in_grid.x; if (i < N) out[i] = exp(inp[i]);"
N = 16


def rows_for(platform: str, calls: int) -> list[tuple[str, float]]:
    """Per-call µs of each case on |platform|'s first device."""
    device = jax.devices(platform)[0]
    kernel = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                               source=EXP)
    op = kjit.jax.op(kernel, output_shapes=lambda x: [x.shape],
                     output_dtypes=lambda x: [x.dtype], grid=lambda x: (x.size, 1, 1),
                     threadgroup=(N, 1, 1), template=lambda x: [("N", x.size)])
    bound = kernel.bind(output_shapes=[(N,)], output_dtypes=[np.float32], grid=(N, 1, 1),
                        threadgroup=(N, 1, 1), template=[("N", N)], device="cpu")

    def by_callback(x: jax.Array) -> jax.Array:
        # The host runs the kernel on the callback's NumPy copy: a Python handler per launch.
        return jax.pure_callback(lambda a: np.asarray(bound(np.asarray(a))[0]),
                                 jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    x = jax.device_put(jnp.linspace(-1, 1, N, dtype=jnp.float32), device)
    cases = {
        "jitted kjit op": jax.jit(op),
        "jitted jnp.exp": jax.jit(jnp.exp),
        "jitted Python-callback launch": jax.jit(by_callback),
    }
    expected = np.exp(np.asarray(x, dtype=np.float64))
    for name, f in cases.items():
        np.testing.assert_allclose(np.asarray(f(x)), expected, rtol=1e-6, err_msg=name)
    timed = [(lambda f=f: f(x).block_until_ready(), calls) for f in cases.values()]
    times = per_call_each(timed, repeats=5, warmup=50)
    return [(name, t * 1e6) for name, t in zip(cases, times)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    calls = parser.parse_args().calls
    platforms = ["cpu"] + (["gpu"] if any(d.platform == "gpu" for d in jax.devices()) else [])
    print(f"jax {jax.__version__}, kjit {kjit.__version__}, {N} float32 per call")
    for platform in platforms:
        rows = rows_for(platform, calls)
        base = dict(rows)["jitted jnp.exp"]
        print(f"\n{platform}: what | µs per call | over jnp.exp")
        for name, t in rows:
            print(f"  {name:<32} {t:8.2f}   {t / base:.2f}")


if __name__ == "__main__":
    main()
