"""verbose=True: the generated source printed, or printed nowhere."""

import sys

import numpy as np

import kjit


def test_verbose_prints_generated_source(capsys, rng):
    source = """
        uint i = thread_position_in_grid.x;
        // scale by seven
        out[i] = inp[i] * 7;
    """
    kernel = kjit.metal_kernel(name="verbose_probe", input_names=["inp"], output_names=["out"],
                               source=source)
    a = rng.standard_normal(10).astype(np.float32)
    (out,) = kernel(inputs=[a], grid=(10, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(10,)],
                    output_dtypes=[np.float32], verbose=True)
    printed = capsys.readouterr().out
    assert "Generated source code for `verbose_probe`" in printed
    for line in source.strip().splitlines():
        assert line.strip() in printed
    np.testing.assert_array_equal(out, a * np.float32(7))
    # Not verbose: nothing printed.
    kernel(inputs=[a], grid=(10, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(10,)],
           output_dtypes=[np.float32])
    assert capsys.readouterr().out == ""


def test_verbose_without_a_stdout_prints_nowhere(monkeypatch, rng):
    # As print() does when sys.stdout is None (pythonw, a closed console).
    monkeypatch.setattr(sys, "stdout", None)
    kernel = kjit.metal_kernel(name="verbose_nowhere", input_names=["inp"], output_names=["out"],
                               source="uint i = thread_position_in_grid.x; out[i] = inp[i];")
    a = rng.standard_normal(4).astype(np.float32)
    (out,) = kernel(inputs=[a], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                    output_dtypes=[np.float32], verbose=True)
    np.testing.assert_array_equal(out, a)
