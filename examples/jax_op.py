"""A kjit kernel as a JAX operation (docs/jax.md): softplus under jax.jit, with a backward
kernel for jax.grad; checked against jax.nn.softplus."""

import jax
import numpy as np

import kjit.jax

from softplus_kernels import backward, elementwise, forward

# The backward op's arguments are found by name: x is the forward's input, grad_y the gradient
# of its output y, and grad_x the gradient it returns.
softplus = kjit.jax.op(forward, backward=kjit.jax.op(backward, **elementwise), **elementwise)

x = jax.random.normal(jax.random.key(0), (4096,))
y = jax.jit(softplus)(x)
grad = jax.jit(jax.grad(lambda v: softplus(v).sum()))(x)
x64 = np.asarray(x, dtype=np.float64)
np.testing.assert_allclose(np.asarray(y), np.log1p(np.exp(x64)), rtol=1e-6, atol=1e-6)
np.testing.assert_allclose(np.asarray(grad), 1 / (1 + np.exp(-x64)), rtol=1e-6, atol=1e-6)
np.testing.assert_allclose(np.asarray(y), np.asarray(jax.nn.softplus(x)), rtol=1e-6, atol=1e-6)
print(f"softplus on {jax.devices()[0].platform}: jitted and its gradient match")
