"""examples/ddp_train.py: a model with a kjit op trained under DistributedDataParallel. Its loss
curve matches the same model with torch's SiLU under DDP, and both match one process training
on the whole batch (what DDP's averaged gradients amount to), computed here without DDP."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import torch.distributed  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ddp_train.py"
STEPS = 12


def torchrun(tmp_path, processes, *args):
    env = dict(os.environ, KJIT_CACHE_DIR=str(tmp_path / "cache"), NCCL_NVLS_ENABLE="0",
               OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone",
         f"--nproc_per_node={processes}", str(EXAMPLE), f"--steps={STEPS}", *args],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def whole_batch_losses(world):
    """Rank 0's loss per step when the gradient is the whole batch's, as DDP averages it."""
    torch.manual_seed(0)
    first, last = torch.nn.Linear(16, 64), torch.nn.Linear(64, 1)
    params = [*first.parameters(), *last.parameters()]
    optimiser = torch.optim.SGD(params, lr=0.1)
    data = torch.Generator().manual_seed(1)
    x = torch.randn(world * 64, 16, generator=data)
    target = torch.sin(x.sum(1, keepdim=True))
    losses = []
    for _ in range(STEPS):
        optimiser.zero_grad()
        out = last(torch.nn.functional.silu(first(x)))
        torch.nn.functional.mse_loss(out, target).backward()
        losses.append(torch.nn.functional.mse_loss(out[:64], target[:64]).item())
        optimiser.step()
    return losses


def check_curves(kjit_run, torch_run, world):
    expected = whole_batch_losses(world)
    assert kjit_run["world"] == torch_run["world"] == world
    assert kjit_run["losses"] == pytest.approx(torch_run["losses"], rel=1e-5)
    assert kjit_run["losses"] == pytest.approx(expected, rel=1e-4)
    # The first layer learned (its gradient crossed the kjit op's backward kernel).
    assert kjit_run["losses"][-1] < 0.9 * kjit_run["losses"][0]


@pytest.mark.skipif(not torch.distributed.is_gloo_available(), reason="torch without gloo")
def test_ddp_over_gloo_with_two_cpu_processes(tmp_path):
    kjit_run = torchrun(tmp_path, 2, "--backend=gloo")
    torch_run = torchrun(tmp_path, 2, "--backend=gloo", "--reference")
    assert kjit_run["device"] == "cpu"
    check_curves(kjit_run, torch_run, 2)


@pytest.mark.skipif(not torch.cuda.is_available() or not torch.distributed.is_nccl_available(),
                    reason="needs a CUDA GPU and NCCL")
def test_ddp_over_nccl_with_a_process_per_gpu(tmp_path):
    world = torch.cuda.device_count()
    kjit_run = torchrun(tmp_path, world, "--backend=nccl")
    torch_run = torchrun(tmp_path, world, "--backend=nccl", "--reference")
    assert kjit_run["device"] == "cuda:0"
    check_curves(kjit_run, torch_run, world)
