"""What the error tests share: the twice kernel and a correct call of it to change, a kernel
constructor call to change, and checks of the messages."""

import numpy as np

import kjit


TWICE_METAL = """
    uint i = thread_position_in_grid.x;
    out[i] = inp[i] * 2;
"""

N = 8
X = np.arange(N, dtype=np.float32)


def twice(name: str = "twice"):
    return kjit.metal_kernel(name=name, input_names=["inp"], output_names=["out"],
                             source=TWICE_METAL)


def call_args(**overrides):
    """A correct call of twice() on X, with some arguments replaced."""
    args = dict(inputs=[X], output_shapes=[X.shape], output_dtypes=[X.dtype], grid=(N, 1, 1),
                threadgroup=(N, 1, 1))
    args.update(overrides)
    return args


def make(api: str = "metal", **overrides):
    """A kernel constructor call with some arguments replaced."""
    args = dict(name="k", input_names=["a"], output_names=["o"], source="o[0] = a[0];")
    args.update(overrides)
    return (kjit.metal_kernel if api == "metal" else kjit.cuda_kernel)(**args)


def check_prefix(excinfo) -> None:
    """Every argument error starts by saying which API raised it."""
    text = str(excinfo.value)
    assert text.startswith("[kjit."), text


def cuda_present() -> bool:
    return any("cuda" in str(d) for d in kjit.devices())


def readonly(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


def case_ids(table):
    """The test ids of a table of cases: each case's pytest.param id, or its label."""
    return [e.id if hasattr(e, "id") and e.id else e[0] for e in table]
