"""Trains a small model whose activation is a kjit op (a forward and a backward kernel) with
DistributedDataParallel, one process per device, and prints rank 0's loss after each step.

    torchrun --nproc_per_node 2 examples/ddp_train.py                 # NCCL, a GPU per process
    torchrun --nproc_per_node 2 examples/ddp_train.py --backend gloo  # CPU processes

`--reference` trains the same model with torch's own SiLU instead: the two loss curves agree.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import kjit
import kjit.torch

# y = x * sigmoid(x), and its gradient, each one thread per element.
silu_kernel = kjit.metal_kernel(
    name="ddp_silu", input_names=["x"], output_names=["y"],
    source="""
        uint i = thread_position_in_grid.x;
        if (i < x_shape[0] * x_shape[1]) y[i] = x[i] / (1 + exp(-x[i]));
    """)
silu_grad_kernel = kjit.metal_kernel(
    name="ddp_silu_grad", input_names=["x", "grad_y"], output_names=["grad_x"],
    source="""
        uint i = thread_position_in_grid.x;
        if (i < x_shape[0] * x_shape[1]) {
            float s = 1 / (1 + exp(-x[i]));
            grad_x[i] = grad_y[i] * s * (1 + x[i] * (1 - s));
        }
    """)
elementwise: dict[str, Any] = dict(
    output_shapes=lambda x, *rest: [x.shape], output_dtypes=lambda x, *rest: [x.dtype],
    grid=lambda x, *rest: (x.size, 1, 1), threadgroup=(256, 1, 1))
silu_grad = kjit.torch.op(silu_grad_kernel, "ddp_example::silu_grad", **elementwise)
silu = kjit.torch.op(silu_kernel, "ddp_example::silu", backward=silu_grad, **elementwise)


class Net(torch.nn.Module):
    def __init__(self, activation: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.first = torch.nn.Linear(16, 64)
        self.last = torch.nn.Linear(64, 1)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.last(self.activation(self.first(x)))
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=["nccl", "gloo"], default="nccl")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--reference", action="store_true", help="torch's SiLU, not kjit's")
    args = parser.parse_args()
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.backend == "nccl":
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    torch.manual_seed(0)  # the same initial weights on every rank, as DDP expects
    net = Net(torch.nn.functional.silu if args.reference else silu).to(device)
    model = DistributedDataParallel(net, device_ids=[device.index] if device.index is not None
                                    else None)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1)
    x = torch.randn(world * 64, 16, generator=data)
    target = torch.sin(x.sum(1, keepdim=True))
    mine = slice(rank * 64, (rank + 1) * 64)  # each rank trains on its own shard
    x, target = x[mine].to(device), target[mine].to(device)
    losses = []
    for _ in range(args.steps):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), target)
        torch.autograd.backward(loss)  # DDP averages the gradients over the ranks here
        optimiser.step()
        losses.append(loss.item())
    if rank == 0:
        print(json.dumps({"device": str(device), "world": world, "losses": losses}))
    # Every rank's work done and the model's graph released while Python is whole: the process
    # group's threads must not drop the last reference to a tensor during interpreter teardown.
    dist.barrier()
    del model, net, optimiser, loss
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
