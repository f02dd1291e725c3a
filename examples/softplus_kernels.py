"""softplus and its gradient as kjit kernels, with shape functions for framework ops: shared by
the PyTorch and JAX examples, which make them operators of their framework."""

from typing import Any

import kjit

# y = log(1 + exp(x)), one thread per element.
forward = kjit.metal_kernel(
    name="softplus", input_names=["x"], output_names=["y"],
    source="uint i = thread_position_in_grid.x; if (i < x_shape[0]) y[i] = log(1 + exp(x[i]));")
# Its gradient, named for the op's backward: the forward's input x and the gradient of its
# output y in, the gradient of x out.
backward = kjit.metal_kernel(
    name="softplus_grad", input_names=["x", "grad_y"], output_names=["grad_x"],
    source="""
        uint i = thread_position_in_grid.x;
        if (i < x_shape[0]) grad_x[i] = grad_y[i] / (1 + exp(-x[i]));
    """)
# Settings that follow the first input: an elementwise kernel's.
elementwise: dict[str, Any] = dict(
    output_shapes=lambda x, *rest: [x.shape], output_dtypes=lambda x, *rest: [x.dtype],
    grid=lambda x, *rest: (x.size, 1, 1), threadgroup=(256, 1, 1))
