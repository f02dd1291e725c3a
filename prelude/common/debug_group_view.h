// A debug build's group memory: each use of a threadgroup / __shared__ array the body can see
// (its own, the header's top level's) is a view of the array that checks every index against
// its dimension's extent, and reports the first outside it, as the views of inputs and outputs
// do (common/debug_view.h). On the CPU each access of an array and each use of a variable of one
// value is also recorded for the race checks (target/cpu/debug_races.h, which the CPU's entry
// headers include first).
#pragma once

#include "common/debug_view.h"

namespace kjit::debug {

// The dimensions of a group array's type A (T[N0][N1]...) and its elements' type.
template <class A>
struct shape_of {
  using element = A;
  static constexpr int rank = 0;
  static constexpr long long count = 1;
  static KJIT_INLINE void write_extents(long long*, int) {}
};
template <class T, decltype(sizeof(0)) N>
struct shape_of<T[N]> {
  using row = T;
  using element = typename shape_of<T>::element;
  static constexpr int rank = shape_of<T>::rank + 1;
  static constexpr long long count = static_cast<long long>(N) * shape_of<T>::count;
  // The first |room| extents, outermost first.
  static KJIT_INLINE void write_extents(long long* to, int room) {
    if (room == 0) return;
    *to = static_cast<long long>(N);
    shape_of<T>::write_extents(to + 1, room - 1);
  }
};

// What every part of one use of a group array shares: the array, the use and its thread.
struct group_use {
  const unsigned char* base;  // the array's first element
  long long count;            // its elements
  int rank;
  int array;  // its number in reports
  int line;
  bool tracked;  // recorded for the race checks: a use that takes an address is not
  const thread_ctx* thread;
  report* to;
  long long extents[4];  // the first four dimensions', for reports
};

// A part of a group array: |extent| elements of type E, which are rows when E is an array.
template <class E>
class group_view {
 public:
  KJIT_INLINE group_view(E* data, long long extent, int dimension, const group_use& use)
      : data_(data), extent_(extent), dimension_(dimension), use_(use) {}

  // Indexed as an array is: by an integer.
  template <class I, KJIT_IF(!is_builtin_float_v<I>)>
  KJIT_INLINE decltype(auto) operator[](I i) const {
    const long long k = static_cast<long long>(i);
    const bool inside = k >= 0 && k < extent_;
    if (!inside) out_of_bounds(k);
    if constexpr (shape_of<E>::rank > 0) {
      using row = typename shape_of<E>::row;
      return group_view<row>(inside ? data_[k] : reinterpret_cast<row*>(use_.to->scratch),
                             inside ? shape_of<E>::count / shape_of<row>::count : 0, dimension_ + 1,
                             use_);
    } else {
      if (!inside) return *reinterpret_cast<E*>(use_.to->scratch);
#ifdef KJIT_CPU
      races::touch(use_, (const void*)(data_ + k), sizeof(E));
#endif
      return static_cast<E&>(data_[k]);
    }
  }
  KJIT_INLINE decltype(auto) operator*() const { return (*this)[0]; }
  // A row used as a pointer ("tile[i] + k", "float* row = tile[i]") leaves the checks, as
  // pointers to inputs and outputs do.
  template <class I>
  KJIT_INLINE E* operator+(I k) const {
    return data_ + k;
  }
  template <class I>
  KJIT_INLINE E* operator-(I k) const {
    return data_ - k;
  }
  template <class U>
  KJIT_INLINE operator U*() const {  // group memory is never const; it may be volatile
    return (U*)data_;
  }

 private:
  void out_of_bounds(long long k) const {
    static_assert(sizeof(typename shape_of<E>::element) <= sizeof(report::scratch),
                  "kjit debug builds check group-memory arrays of elements up to 256 bytes");
    report* r = use_.to;
    if (!claim(r)) return;
    write_finding(r, report::out_of_bounds_kind, use_.array, use_.line, k, *use_.thread);
    r->extent = extent_;
    r->dimension = dimension_;
    r->rank = use_.rank;
  }

  E* data_;
  long long extent_;
  int dimension_;
  group_use use_;
};

// A use of the array that |array| declares (T name[N0][N1]...), the group array numbered
// |number| in reports, at |line| of the body; |tracked| unless the use takes an address.
template <class T, decltype(sizeof(0)) N>
KJIT_INLINE group_view<T> group_view_of(T (&array)[N], int number, int line, bool tracked,
                                        const thread_ctx& thread, report* to) {
  using shape = shape_of<T[N]>;
  group_use use{reinterpret_cast<const unsigned char*>(array),
                shape::count,
                shape::rank,
                number,
                line,
                tracked,
                &thread,
                to};
  shape::write_extents(use.extents, 4);
  return group_view<T>(array, static_cast<long long>(N), 0, use);
}

// A use of CUDA's dynamic shared memory (extern __shared__ T name[]) of |bytes| bytes.
template <class T>
KJIT_INLINE group_view<T> dynamic_group_view_of(T* data, long long bytes, int number, int line,
                                                bool tracked, const thread_ctx& thread,
                                                report* to) {
  const long long n = bytes / static_cast<long long>(sizeof(T));
  group_use use{
      reinterpret_cast<const unsigned char*>(data), n, 1, number, line, tracked, &thread, to};
  use.extents[0] = n;
  return group_view<T>(data, n, 0, use);
}

// A use of group variable |variable|, of one value ("threadgroup float total;"), numbered
// |number| in reports, at |line| of the body; |tracked| unless the use takes its address. There
// is no index to check: on the CPU the use is recorded for the race checks.
template <class T>
KJIT_INLINE T& group_variable_of(T& variable, int number, int line, bool tracked,
                                 const thread_ctx& thread, report* to) {
#ifdef KJIT_CPU
  group_use use{(const unsigned char*)&variable, 1, 0, number, line, tracked, &thread, to, {}};
  races::touch(use, (const void*)&variable, sizeof(T));
#else
  (void)number, (void)line, (void)tracked, (void)thread, (void)to;
#endif
  return variable;
}

}  // namespace kjit::debug
