"""The two kernel bodies of MLX's custom-kernel proposal, shared by the examples, the benchmarks
and the tests."""

# exp over any input dtype, computed in T.
MYEXP = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""

# One 3x3 float32 matrix per thread: input `a` and output `out` are (n, 3, 3).
INVERT_3X3 = """
    uint i = thread_position_in_grid.x;
    const device float* m = a + 9 * i;
    float a00 = m[0], a01 = m[1], a02 = m[2];
    float a10 = m[3], a11 = m[4], a12 = m[5];
    float a20 = m[6], a21 = m[7], a22 = m[8];
    // Cofactors; the inverse is their transpose over the determinant.
    float c00 = a11 * a22 - a12 * a21;
    float c01 = a12 * a20 - a10 * a22;
    float c02 = a10 * a21 - a11 * a20;
    float inv_det = 1.0 / (a00 * c00 + a01 * c01 + a02 * c02);
    device float* r = out + 9 * i;
    r[0] = c00 * inv_det;
    r[1] = (a02 * a21 - a01 * a22) * inv_det;
    r[2] = (a01 * a12 - a02 * a11) * inv_det;
    r[3] = c01 * inv_det;
    r[4] = (a00 * a22 - a02 * a20) * inv_det;
    r[5] = (a02 * a10 - a00 * a12) * inv_det;
    r[6] = c02 * inv_det;
    r[7] = (a01 * a20 - a00 * a21) * inv_det;
    r[8] = (a00 * a11 - a01 * a10) * inv_det;
"""
