"""A kjit kernel as a PyTorch operator (docs/pytorch.md): softplus with a backward kernel, run
eagerly, under torch.compile, and differentiated; checked against torch's own softplus."""

import torch

import kjit.torch

from softplus_kernels import backward, elementwise, forward

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
