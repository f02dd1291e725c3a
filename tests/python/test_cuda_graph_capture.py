"""Calls on a stream that captures a CUDA graph (torch.cuda.graph): launches built before the
capture are captured and replay on the arrays' current values; a call that would build its
kernel, take memory from kjit's pool or copy from the host is refused with a LaunchError before
it queues anything, and the capture goes on. GPU cases are skipped where no CUDA device works."""

import numpy as np
import pytest

import kjit
from conftest import REAL_FACTORIES, needs_gpu

torch = pytest.importorskip("torch")

pytestmark = [needs_gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")]

N = 1 << 14
THREADS = (256, 1, 1)

# out = 2 * inp + 1, which torch computes exactly as the kernel does (2 * x is exact).
BODY = """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = 2.0f * inp[i] + 1.0f;
"""


def twice_plus_one(name):
    # The kernels' own factory: the suite's compile check would compile inside the capture.
    return REAL_FACTORIES["cuda_kernel"](name=name, input_names=["inp"], output_names=["out"],
                                         source=BODY)


def call(kernel, x, **kw):
    return kernel(inputs=[x], output_shapes=[(N,)], output_dtypes=[torch.float32], grid=(N, 1, 1),
                  threadgroup=THREADS, **kw)


def bind(kernel):
    return kernel.bind(output_shapes=[(N,)], output_dtypes=[torch.float32], grid=(N, 1, 1),
                       threadgroup=THREADS)


def warm_up(*calls):
    """Runs |calls| once on a side stream, as torch asks before a capture."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for c in calls:
            c()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def test_warmed_up_calls_are_captured_and_replay_on_new_values():
    kernel = twice_plus_one("graph_warmed")
    bound = bind(kernel)
    x = torch.randn(N, device="cuda")
    first = torch.empty(N, device="cuda")
    second = torch.empty(N, device="cuda")
    warm_up(lambda: bound(x, first), lambda: call(kernel, first, outputs=[second]))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        bound(x, first)
        call(kernel, first, outputs=[second])  # reads what the bound call wrote
    torch.cuda.synchronize()
    for trial in range(3):
        x.copy_(torch.randn(N, device="cuda"))
        # Other memory taken and given back between replays: torch's, and kjit's own pool, which
        # the captured calls never used.
        others = [torch.full((N,), float(trial), device="cuda") for _ in range(4)]
        (fresh,) = bound(x)
        del others
        graph.replay()
        torch.cuda.synchronize()
        expected = 2 * x + 1
        assert torch.equal(first, expected), trial
        assert torch.equal(second, 2 * expected + 1), trial
        assert torch.equal(fresh, expected), trial


def test_a_kernel_not_built_yet_is_refused_and_the_capture_goes_on():
    kernel = twice_plus_one("graph_unbuilt")
    bound = bind(kernel)
    x = torch.randn(N, device="cuda")
    untouched = torch.full((N,), -5.0, device="cuda")
    tripled = torch.empty(N, device="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for run in (lambda: call(kernel, x, outputs=[untouched]), lambda: bound(x, untouched)):
            with pytest.raises(kjit.LaunchError,
                               match=r"kernel 'graph_unbuilt' is not built for this launch yet.*"
                                     r"before capture \(warm-up\).*kernel\.build"):
                run()
        torch.mul(x, 3, out=tripled)  # later work, captured as it would be without the refusals
    x.copy_(torch.randn(N, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(tripled, x * 3)
    assert torch.equal(untouched, torch.full_like(untouched, -5.0))
    # Outside the capture the kernel builds as usual.
    call(kernel, x, outputs=[untouched])
    torch.cuda.synchronize()
    assert torch.equal(untouched, 2 * x + 1)


def test_outputs_from_kjits_pool_are_refused_inside_a_capture():
    kernel = twice_plus_one("graph_pool")
    bound = bind(kernel)
    x = torch.randn(N, device="cuda")
    tripled = torch.empty(N, device="cuda")
    warm_up(lambda: bound(x), lambda: call(kernel, x))  # both launches built and recorded
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for run in (lambda: bound(x), lambda: call(kernel, x)):
            with pytest.raises(kjit.LaunchError,
                               match=r"kernel 'graph_pool': output_shapes\[0\] \('out'\): .*"
                                     r"kjit's pool.*pass outputs="):
                run()
        torch.mul(x, 3, out=tripled)
    x.copy_(torch.randn(N, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(tripled, x * 3)


def test_an_input_copied_from_the_host_is_refused_inside_a_capture():
    kernel = twice_plus_one("graph_host_input")
    host = torch.randn(N)
    x = host.cuda()
    out = torch.empty(N, device="cuda")
    warm_up(lambda: call(kernel, x, outputs=[out]))  # the launch is built: the copy is refused
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        with pytest.raises(kjit.LaunchError,
                           match=r"kernel 'graph_host_input': inputs\[0\] \('inp'\) is copied "
                                 r"for the kernel on cuda:0: .*inputs already on the GPU"):
            call(kernel, host, outputs=[out], device="cuda")
        call(kernel, x, outputs=[out])
    x.copy_(torch.randn(N, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, 2 * x + 1)


def test_a_kernel_built_before_the_capture_runs_at_its_first_call_inside():
    kernel = twice_plus_one("graph_prebuilt")
    kernel.build(inputs=[(np.float32, 1)], output_dtypes=[np.float32], target="cuda")
    x = torch.randn(N, device="cuda")
    out = torch.full((N,), -5.0, device="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call(kernel, x, outputs=[out])
    torch.cuda.synchronize()
    assert torch.equal(out, torch.full_like(out, -5.0))  # captured, not run
    for _ in range(2):
        x.copy_(torch.randn(N, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, 2 * x + 1)
