"""A kjit kernel as a PyTorch operator (docs/pytorch.md): softplus with a backward kernel, run
eagerly, under torch.compile, and differentiated; checked against torch's own softplus."""

from typing import Any

import torch

import kjit
import kjit.torch

forward = kjit.metal_kernel(
    name="softplus", input_names=["x"], output_names=["y"],
    source="uint i = thread_position_in_grid.x; if (i < x_shape[0]) y[i] = log(1 + exp(x[i]));")
backward = kjit.metal_kernel(
    name="softplus_grad", input_names=["x", "grad_y"], output_names=["grad_x"],
    source="""
        uint i = thread_position_in_grid.x;
        if (i < x_shape[0]) grad_x[i] = grad_y[i] / (1 + exp(-x[i]));
    """)
elementwise: dict[str, Any] = dict(
    output_shapes=lambda x, *rest: [x.shape], output_dtypes=lambda x, *rest: [x.dtype],
    grid=lambda x, *rest: (x.size, 1, 1), threadgroup=(256, 1, 1))
softplus_grad = kjit.torch.op(backward, "examples::softplus_grad", **elementwise)
softplus = kjit.torch.op(forward, "examples::softplus", backward=softplus_grad, **elementwise)

device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.randn(4096, device=device, requires_grad=True)
y = softplus(x)
y.sum().backward()
compiled = torch.compile(softplus, fullgraph=True)
reference = torch.nn.functional.softplus(x.detach().double())
torch.testing.assert_close(y.double(), reference, rtol=1e-6, atol=1e-6)
torch.testing.assert_close(compiled(x.detach()).double(), reference, rtol=1e-6, atol=1e-6)
assert x.grad is not None
torch.testing.assert_close(x.grad.double(), torch.sigmoid(x.detach().double()), rtol=1e-6,
                           atol=1e-6)
print(f"softplus on {device}: eager, compiled and its gradient match torch")
