// Metal's 8x8 SIMD-group matrices on every target. The 64 elements are spread over the 32 lanes
// of a SIMD-group, two per lane, in the layout MLX's steel/gemm/mma.h reads through
// thread_elements(): lane l holds row (l / 16) * 4 + (l / 2) % 4, columns c and c + 1 for
// c = ((l / 8) % 2) * 4 + (l % 2) * 2. Products accumulate in float, one fused multiply-add per
// k from 0 to 7 starting from the addend, then round once to the result's type; the GPU
// (shuffles) and the CPU (one meeting of the lanes, cooperative mode) compute the same bits.
#pragma once

// The lanes meet through the target's SIMD-group operations, which the entry header includes
// before this: dialect/msl/on_cuda/simdgroup.h on the GPU, mode/coop/msl.h on the CPU.
#include "dialect/msl/names.h"

namespace metal {
namespace matrix_detail {

KJIT_INLINE unsigned row_of(unsigned lane) { return lane / 16 * 4 + lane / 2 % 4; }
KJIT_INLINE unsigned column_of(unsigned lane) { return lane / 8 % 2 * 4 + lane % 2 * 2; }
// The lane that holds element (row, column), column even.
KJIT_INLINE unsigned lane_of(unsigned row, unsigned column) {
  return row / 4 * 16 + column / 4 % 2 * 8 + row / 2 % 2 * 4 + row % 2 * 2 + column / 2 % 2;
}

// This thread's lane in its SIMD-group.
KJIT_INLINE unsigned this_lane() {
#ifdef KJIT_CUDA
  return simd_detail::lane();
#else
  return ::kjit::current_thread->thread_index_in_simdgroup();
#endif
}

}  // namespace matrix_detail

template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix: kjit provides 8x8 matrices only");
  vec<T, 2> elements;  // this lane's two, as thread_elements() gives them

  simdgroup_matrix() = default;
  // A diagonal matrix, as Metal's constructor from one value makes.
  KJIT_INLINE explicit simdgroup_matrix(T diagonal) {
    const unsigned lane = matrix_detail::this_lane();
    const unsigned row = matrix_detail::row_of(lane), column = matrix_detail::column_of(lane);
    elements = vec<T, 2>(row == column ? diagonal : T(0), row == column + 1 ? diagonal : T(0));
  }
  KJIT_INLINE vec<T, 2>& thread_elements() { return elements; }
  KJIT_INLINE const vec<T, 2>& thread_elements() const { return elements; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int Cols, int Rows>
KJIT_INLINE simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  m.elements = vec<T, 2>(value, value);
  return m;
}

namespace matrix_detail {

// Where this lane's two elements lie in the 8x8 block at |origin| (x: column, y: row) of a
// row-major matrix whose rows are |elements_per_row| apart, the block transposed when asked:
// their offsets from the matrix's start.
struct Offsets {
  ulong of[2];
};
KJIT_INLINE Offsets element_offsets(ulong elements_per_row, vec<ulong, 2> origin, bool transpose) {
  const unsigned lane = this_lane();
  const unsigned row = row_of(lane), column = column_of(lane);
  Offsets at;
  for (unsigned k = 0; k < 2; ++k) {
    const ulong r = transpose ? column + k : row, c = transpose ? row : column + k;
    at.of[k] = (origin.y + r) * elements_per_row + origin.x + c;
  }
  return at;
}

}  // namespace matrix_detail

template <class T, int Cols, int Rows, class U>
KJIT_INLINE void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, const U* source,
                                ulong elements_per_row = Cols, vec<ulong, 2> origin = 0,
                                bool transpose = false) {
  const matrix_detail::Offsets at =
      matrix_detail::element_offsets(elements_per_row, origin, transpose);
  for (unsigned k = 0; k < 2; ++k) d.elements[k] = T(source[at.of[k]]);
}
template <class T, int Cols, int Rows, class U>
KJIT_INLINE void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, U* destination,
                                 ulong elements_per_row = Cols, vec<ulong, 2> origin = 0,
                                 bool transpose = false) {
  const matrix_detail::Offsets at =
      matrix_detail::element_offsets(elements_per_row, origin, transpose);
  for (unsigned k = 0; k < 2; ++k) destination[at.of[k]] = U(a.elements[k]);
}

#ifdef KJIT_CUDA
// Each lane gathers its row of a and its two columns of b through shuffles.
template <class TD, class TA, class TB, class TC>
KJIT_INLINE void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d,
                                               const simdgroup_matrix<TA, 8, 8>& a,
                                               const simdgroup_matrix<TB, 8, 8>& b,
                                               const simdgroup_matrix<TC, 8, 8>& c) {
  const unsigned mask = __activemask(), lane = simd_detail::lane();
  const unsigned row = matrix_detail::row_of(lane), column = matrix_detail::column_of(lane);
  const float a0 = float(a.elements[0]), a1 = float(a.elements[1]);
  const float b0 = float(b.elements[0]), b1 = float(b.elements[1]);
  float sum0 = float(c.elements[0]), sum1 = float(c.elements[1]);
  // A lane absent (a partial SIMD-group) counts as zeros, as on the CPU.
  auto from = [mask](float value, unsigned source) {
    const float v = __shfl_sync(mask, value, int(source));
    return mask >> source & 1u ? v : 0.0f;
  };
  for (unsigned k = 0; k < 8; ++k) {
    // Every lane offers its element k % 2 of a, and its two of b.
    const float ak = from(k % 2 ? a1 : a0, matrix_detail::lane_of(row, k & ~1u));
    const unsigned from_b = matrix_detail::lane_of(k, column);
    sum0 = fmaf(ak, from(b0, from_b), sum0);
    sum1 = fmaf(ak, from(b1, from_b), sum1);
  }
  d.elements = vec<TD, 2>(TD(sum0), TD(sum1));
}
template <class TD, class TA, class TB>
KJIT_INLINE void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d,
                                    const simdgroup_matrix<TA, 8, 8>& a,
                                    const simdgroup_matrix<TB, 8, 8>& b) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<TD, 8, 8>(TD(0)));
}
#else
namespace matrix_detail {

// A multiply's operands, as each lane hands them to the meeting.
struct product {
  const void* a;
  const void* b;
  const void* c;
  void* d;
};

// The product of the SIMD-group's matrices, written to each lane's d (a lane absent adds
// zeros): every operand is read before any result is written, so d may be a, b or c.
template <class TD, class TA, class TB, class TC>
void multiply(::kjit::coop::lane** lanes, const unsigned* ids, int n) {
  ::kjit::coop::for_each_segment(lanes, ids, n, [&](int first, int end) {
    float a[8][8] = {}, b[8][8] = {}, c[8][8] = {};
    for (int i = first; i < end; ++i) {
      const product p = ::kjit::coop::operand<product>(lanes[i]);
      const unsigned row = row_of(ids[i] % 32), column = column_of(ids[i] % 32);
      for (unsigned k = 0; k < 2; ++k) {
        a[row][column + k] =
            float(static_cast<const simdgroup_matrix<TA, 8, 8>*>(p.a)->elements[k]);
        b[row][column + k] =
            float(static_cast<const simdgroup_matrix<TB, 8, 8>*>(p.b)->elements[k]);
        c[row][column + k] =
            float(static_cast<const simdgroup_matrix<TC, 8, 8>*>(p.c)->elements[k]);
      }
    }
    for (int i = first; i < end; ++i) {
      const product p = ::kjit::coop::operand<product>(lanes[i]);
      const unsigned row = row_of(ids[i] % 32), column = column_of(ids[i] % 32);
      float sum[2];
      for (unsigned k = 0; k < 2; ++k) {
        sum[k] = c[row][column + k];
        for (unsigned j = 0; j < 8; ++j)
          sum[k] = __builtin_fmaf(a[row][j], b[j][column + k], sum[k]);
      }
      static_cast<simdgroup_matrix<TD, 8, 8>*>(p.d)->elements = vec<TD, 2>(TD(sum[0]), TD(sum[1]));
      ::kjit::coop::set_result(lanes[i], 0);
    }
  });
}

}  // namespace matrix_detail

// A meeting of the SIMD-group's lanes (the rewriter awaits it).
template <class TD, class TA, class TB, class TC>
KJIT_INLINE ::kjit::coop::simd_wait<int> simdgroup_multiply_accumulate(
    simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
    const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>& c,
    unsigned site = KJIT_CALL_SITE) {
  return ::kjit::coop::simd_op<int>(matrix_detail::product{&a, &b, &c, &d}, site,
                                    matrix_detail::multiply<TD, TA, TB, TC>);
}
template <class TD, class TA, class TB>
KJIT_INLINE ::kjit::coop::simd_wait<int> simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d,
                                                            const simdgroup_matrix<TA, 8, 8>& a,
                                                            const simdgroup_matrix<TB, 8, 8>& b,
                                                            unsigned site = KJIT_CALL_SITE) {
  // The addend is read at the meeting, after this returns: a static zero outlives it.
  static const simdgroup_matrix<TD, 8, 8> zero = make_filled_simdgroup_matrix<TD, 8, 8>(TD(0));
  return simdgroup_multiply_accumulate(d, a, b, zero, site);
}
#endif

}  // namespace metal

namespace kjit_user {
using metal::simdgroup_matrix, metal::simdgroup_float8x8, metal::simdgroup_half8x8,
    metal::simdgroup_bfloat8x8, metal::make_filled_simdgroup_matrix, metal::simdgroup_load,
    metal::simdgroup_store, metal::simdgroup_multiply, metal::simdgroup_multiply_accumulate;
}  // namespace kjit_user
