// The helpers MLX's CUDA backend puts in front of every custom kernel (device/utils.cuh and the
// headers it includes): Shape and Strides, AlignedVector and the vector loads and stores, Limits
// with MLX's CUDA interface, the elem_to_loc family of several arrays and of a fixed rank,
// LoopedElemToLoc with CUDA's parameter order, complex_t and complex64_t. The Metal side's
// helpers that mean the same (elem_to_loc of one array, the looped walk, MAX_NDIM, WARP_SIZE)
// are common/mlx_utils.h, used here.
#pragma once

#include "common/mlx_utils.h"
#include "dialect/cuda/std_complex.h"

namespace kjit::cuda_dialect {

// MLX declares a body's shape and strides parameters as these (const __grid_constant__ Shape
// a_shape).
using Shape = ::cuda::std::array<int32_t, MAX_NDIM>;
using Strides = ::cuda::std::array<int64_t, MAX_NDIM>;

// A shape or strides parameter of a body: a Shape or Strides, so that it binds to a
// const Shape&, copies to one, has MLX's size() and iterates as MLX's does; and, as in the
// Metal dialect, a pointer where one is expected (elem_to_loc(i, a_shape, a_strides, n)).
template <class T>
struct dims_param : ::cuda::std::array<T, MAX_NDIM> {
  // Any index type: the conversion to a pointer would make a signed one ambiguous.
  template <class I>
  KJIT_INLINE constexpr const T& operator[](I i) const {
    return this->elems[i];
  }
  KJIT_INLINE constexpr operator const T*() const { return this->elems; }
  // The MAX_NDIM values at |p| (the CPU's launch record).
  static KJIT_INLINE dims_param of(const T* p) {
    dims_param d;
    for (int i = 0; i < MAX_NDIM; ++i) d.elems[i] = p[i];
    return d;
  }
};

// --- vectorized loads and stores -----------------------------------------------------------------

// N elements moved as one access: aligned to their whole size, which must be a power of two.
template <class T, int N>
struct alignas(sizeof(T) * N) AlignedVector {
  T val[N];
  KJIT_INLINE T& operator[](int i) { return val[i]; }
  KJIT_INLINE T operator[](int i) const { return val[i]; }
};

template <int N, class T>
KJIT_INLINE bool is_aligned(T* p) {
  return reinterpret_cast<uintptr_t>(p) % (N * sizeof(T)) == 0;
}

// The vector at p + offset * N, read or written whole. The caller promises p's alignment and
// that all N elements exist.
template <int N, class T>
KJIT_INLINE AlignedVector<T, N> unsafe_load_vector(const T* p, uint32_t offset) {
  return reinterpret_cast<const AlignedVector<T, N>*>(p)[offset];
}
template <int N, class T>
KJIT_INLINE void unsafe_store_vector(T* p, uint32_t offset, const AlignedVector<T, N>& v) {
  reinterpret_cast<AlignedVector<T, N>*>(p)[offset] = v;
}

// The N elements from element offset * N of an array of |size| elements |stride| apart: one
// access where p is aligned, the elements contiguous and all inside the array, else element by
// element, with |fallback| for those past the end.
template <int N, class T, class SizeT>
KJIT_INLINE AlignedVector<T, N> load_vector(const T* p, uint32_t offset, SizeT size, int64_t stride,
                                            T fallback) {
  if (is_aligned<N>(p) && stride == 1 && (offset + 1) * N <= size) {
    return unsafe_load_vector<N>(p, offset);
  }
  AlignedVector<T, N> v;
  for (int i = 0; i < N; ++i) {
    const auto k = N * offset + i;
    v[i] = k < size ? p[stride * k] : fallback;
  }
  return v;
}
template <int N, class T, class SizeT>
KJIT_INLINE AlignedVector<T, N> load_vector(const T* p, uint32_t offset, SizeT size, T fallback) {
  return load_vector<N>(p, offset, size, 1, fallback);
}
template <int N, class T>
KJIT_INLINE AlignedVector<T, N> load_vector(const T* p, uint32_t offset) {
  return load_vector<N>(p, offset, (offset + 1) * N, 1, T());
}

// The store of load_vector's vector: elements past |size| are left unwritten.
template <int N, class T, class SizeT>
KJIT_INLINE void store_vector(T* p, uint32_t offset, const AlignedVector<T, N>& v, SizeT size,
                              int64_t stride) {
  if (is_aligned<N>(p) && stride == 1 && (offset + 1) * N <= size) {
    unsafe_store_vector<N>(p, offset, v);
    return;
  }
  for (int i = 0; i < N && N * offset + i < size; ++i) p[stride * (N * offset + i)] = v[i];
}
template <int N, class T, class SizeT>
KJIT_INLINE void store_vector(T* p, uint32_t offset, const AlignedVector<T, N>& v, SizeT size) {
  store_vector<N>(p, offset, v, size, 1);
}
template <int N, class T>
KJIT_INLINE void store_vector(T* p, uint32_t offset, const AlignedVector<T, N>& v) {
  store_vector<N>(p, offset, v, (offset + 1) * N, 1);
}

// --- complex numbers -----------------------------------------------------------------------------

template <class T>
using complex_t = ::cuda::std::complex<T>;
using complex64_t = complex_t<float>;
using complex128_t = complex_t<double>;

template <class T>
struct is_complex : ::cuda::std::false_type {};
template <class T>
struct is_complex<complex_t<T>> : ::cuda::std::true_type {};
template <class T>
inline constexpr bool is_complex_v = is_complex<T>::value;

// The operators MLX adds: % part by part, and the order of the real parts, then of the imaginary.
template <class T>
KJIT_INLINE complex_t<T> operator%(complex_t<T> a, complex_t<T> b) {
  return {a.real() - ::kjit::floor(a.real() / b.real()) * b.real(),
          a.imag() - ::kjit::floor(a.imag() / b.imag()) * b.imag()};
}
template <class T>
KJIT_INLINE bool operator>(complex_t<T> a, complex_t<T> b) {
  return a.real() > b.real() || (a.real() == b.real() && a.imag() > b.imag());
}
template <class T>
KJIT_INLINE bool operator<(complex_t<T> a, complex_t<T> b) {
  return b > a;
}
template <class T>
KJIT_INLINE bool operator<=(complex_t<T> a, complex_t<T> b) {
  return !(a > b);
}
template <class T>
KJIT_INLINE bool operator>=(complex_t<T> a, complex_t<T> b) {
  return !(a < b);
}

// --- limits --------------------------------------------------------------------------------------

inline constexpr float F8E4M3_MAX = 448.0f;
inline constexpr float F4E2M1_MAX = 6.0f;

// MLX's CUDA Limits: the values of the Metal side's Limits (infinities for max and min of a
// floating type), as functions.
template <class T>
struct Limits {
  static constexpr T max() { return ::kjit::Limits<T>::max; }
  static constexpr T min() { return ::kjit::Limits<T>::min; }
  static constexpr T finite_max() { return ::kjit::Limits<T>::finite_max; }
  static constexpr T finite_min() { return ::kjit::Limits<T>::finite_min; }
};
template <class T>
struct Limits<complex_t<T>> {
  static constexpr complex_t<T> max() { return {Limits<T>::max(), Limits<T>::max()}; }
  static constexpr complex_t<T> min() { return {Limits<T>::min(), Limits<T>::min()}; }
};

// --- element offsets -----------------------------------------------------------------------------

// The offsets in N arrays, which share a shape, of the element at linear index |elem|, as
// int64_t whatever IdxT (so that reversed views work from a uint index).
template <int N, class IdxT>
KJIT_INLINE ::cuda::std::array<int64_t, N> elem_to_locs(IdxT elem, const int* shape,
                                                        const int64_t* const (&strides)[N],
                                                        int ndim) {
  ::cuda::std::array<int64_t, N> loc{};
  for (int i = ndim - 1; i >= 0; --i) {
    const int64_t k = static_cast<int64_t>(elem % static_cast<IdxT>(shape[i]));
    for (int a = 0; a < N; ++a) loc[a] += k * strides[a][i];
    elem /= static_cast<IdxT>(shape[i]);
  }
  return loc;
}

template <class IdxT = int64_t>
KJIT_INLINE ::cuda::std::tuple<int64_t, int64_t> elem_to_loc(IdxT elem, const int* shape,
                                                             const int64_t* a_strides,
                                                             const int64_t* b_strides, int ndim) {
  const auto loc = elem_to_locs<2>(elem, shape, {a_strides, b_strides}, ndim);
  return {loc[0], loc[1]};
}
template <class IdxT = int64_t>
KJIT_INLINE ::cuda::std::tuple<int64_t, int64_t, int64_t> elem_to_loc(IdxT elem, const int* shape,
                                                                      const int64_t* a_strides,
                                                                      const int64_t* b_strides,
                                                                      const int64_t* c_strides,
                                                                      int ndim) {
  const auto loc = elem_to_locs<3>(elem, shape, {a_strides, b_strides, c_strides}, ndim);
  return {loc[0], loc[1], loc[2]};
}

// The same with the rank known when the kernel is compiled, so that the loop unrolls.
template <int NDIM, class IdxT = int64_t>
KJIT_INLINE int64_t elem_to_loc_nd(IdxT elem, const int* shape, const int64_t* strides) {
  return elem_to_locs<1>(elem, shape, {strides}, NDIM)[0];
}
template <int NDIM, class IdxT = int64_t>
KJIT_INLINE ::cuda::std::tuple<int64_t, int64_t> elem_to_loc_nd(IdxT elem, const int* shape,
                                                                const int64_t* a_strides,
                                                                const int64_t* b_strides) {
  return elem_to_loc(elem, shape, a_strides, b_strides, NDIM);
}
template <int NDIM, class IdxT = int64_t>
KJIT_INLINE ::cuda::std::tuple<int64_t, int64_t, int64_t> elem_to_loc_nd(IdxT elem,
                                                                         const int* shape,
                                                                         const int64_t* a_strides,
                                                                         const int64_t* b_strides,
                                                                         const int64_t* c_strides) {
  return elem_to_loc(elem, shape, a_strides, b_strides, c_strides, NDIM);
}

// MLX's CUDA utilities order LoopedElemToLoc's parameters <DIM, General, OffsetT>; the walk is
// the Metal side's.
template <int DIM, bool General = true, class OffsetT = size_t>
using LoopedElemToLoc = ::kjit::LoopedElemToLoc<DIM, OffsetT, General>;

}  // namespace kjit::cuda_dialect

typedef ::kjit::cuda_dialect::dims_param<int32_t> kjit_cuda_shape;
typedef ::kjit::cuda_dialect::dims_param<int64_t> kjit_cuda_strides;
