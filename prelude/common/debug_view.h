// A debug build's element accesses (compile option debug): the body's "name[i]" and "*name" of
// an input or output go through a view of the array that checks the index against the array's
// bounds, and reports the first index outside them, with the thread and the body line, to the
// launch's report. The memory such an index would reach is never touched: the access goes to a
// scratch slot instead (shared by the threads that stray: what it holds is unspecified).
// Group-memory arrays report the same way (common/debug_group_view.h), and so do the CPU's race
// checks (target/cpu/debug_races.h).
#pragma once

#include "common/atomics.h"
#include "common/thread_ctx.h"

namespace kjit::debug {

// The first finding of a launch. The host reads it after the launch (core/debug_launch.cpp keeps
// the same layout); each input's and output's bounds follow it in memory, two 64-bit indices
// (first, end) per array, in the kernel's parameter order.
struct report {
  enum kind_t : int { out_of_bounds_kind, race_kind, divergence_kind };
  unsigned claimed;  // nonzero once a thread has reported
  int array;         // inputs, outputs, the body's group-memory arrays, the inputs' dims
  int line;          // of the body
  int kind;
  long long index;     // out of bounds: the index; a race: the element, counted flat
  unsigned thread[3];  // thread_position_in_grid
  unsigned group[3];   // threadgroup_position_in_grid
  // A group-memory array: the extent of the dimension indexed out of bounds, which dimension
  // (0: the first), how many it has, and all their extents (the first four).
  long long extent;
  int dimension;
  int rank;
  long long extents[4];
  // A race or a divergence: the other thread and its line (0 for a thread that left the
  // kernel), and which of the two wrote.
  unsigned other_thread[3];
  int other_line;
  int wrote;
  int other_wrote;
  alignas(16) unsigned char scratch[256];
};
static_assert(sizeof(report) == 384, "the host reads this layout (core/debug_launch.cpp)");

// Claims |r| for the first finding of the launch: true for the one thread that may fill it in.
KJIT_INLINE bool claim(report* r) { return atomics::cas(&r->claimed, 0u, 1u) == 0u; }
KJIT_INLINE void write_position(unsigned to[3], uint3 p) { to[0] = p.x, to[1] = p.y, to[2] = p.z; }

// Fills in the common part of a claimed report: what, where and who.
KJIT_INLINE void write_finding(report* r, report::kind_t kind, int array, int line, long long index,
                               const thread_ctx& thread) {
  r->kind = kind;
  r->array = array;
  r->line = line;
  r->index = index;
  write_position(r->thread, thread.thread_position_in_grid());
  write_position(r->group, thread.threadgroup_position_in_grid());
}

// The array index of the element holding byte |byte| of an array of |size|-byte elements,
// rounded down for bytes before the array too.
KJIT_INLINE long long element_at(long long byte, long long size) {
  return byte >= 0 ? byte / size : -((-byte + size - 1) / size);
}

// Accesses to |T|s through |data|, which points |offset| bytes into an array of |Element|-byte
// elements: the array itself, a pointer the body derived from it, or one cast to another
// element type ("(device float4*)(inp + k)"). An access is in bounds when every byte it covers
// is; the index reported is in the array's elements: the first it covers outside the bounds.
template <class T, unsigned long Element = sizeof(T)>
class view {
 public:
  KJIT_INLINE view(T* data, int array, int line, const thread_ctx& thread, report* to,
                   long long offset = 0)
      : data_(data), array_(array), line_(line), thread_(thread), report_(to), offset_(offset) {}

  // Indexed as a pointer is: by an integer.
  template <class I, KJIT_IF(!is_builtin_float_v<I>)>
  KJIT_INLINE T& operator[](I i) const {
    constexpr long long size = static_cast<long long>(Element);
    const long long* bounds = reinterpret_cast<const long long*>(report_ + 1) + 2 * array_;
    const long long byte = offset_ + static_cast<long long>(i) * static_cast<long long>(sizeof(T));
    if constexpr (sizeof(T) == Element) {
      const long long k = byte / size;
      if (k >= bounds[0] && k < bounds[1]) return data_[static_cast<long long>(i)];
      return out_of_bounds(k);
    } else {
      const long long first = element_at(byte, size);
      const long long last = element_at(byte + static_cast<long long>(sizeof(T)) - 1, size);
      if (first >= bounds[0] && last < bounds[1]) return data_[static_cast<long long>(i)];
      return out_of_bounds(first < bounds[0] ? first : first > bounds[1] ? first : bounds[1]);
    }
  }
  KJIT_INLINE T& operator*() const { return (*this)[0]; }
  // Moved as a pointer is ("*(out + i)"), still checked against its array.
  template <class I, KJIT_IF(!is_builtin_float_v<I>)>
  KJIT_INLINE view operator+(I i) const {
    const long long n = static_cast<long long>(i);
    return view(data_ + n, array_, line_, thread_, report_,
                offset_ + n * static_cast<long long>(sizeof(T)));
  }
  template <class I, KJIT_IF(!is_builtin_float_v<I>)>
  KJIT_INLINE view operator-(I i) const {
    return *this + -static_cast<long long>(i);
  }

 private:
  T& out_of_bounds(long long k) const {
    if (claim(report_))
      write_finding(report_, report::out_of_bounds_kind, array_, line_, k, thread_);
    return *reinterpret_cast<T*>(report_->scratch);
  }

  T* data_;
  int array_;
  int line_;
  const thread_ctx& thread_;
  report* report_;
  long long offset_;
};

template <class T>
KJIT_INLINE view<T> view_of(T* data, int array, int line, const thread_ctx& thread, report* to) {
  return view<T>(data, array, line, thread, to);
}

// A pointer |p| the body derived from array |base| ("const float* row = inp + k", or cast to
// another element type), checked at the index it reaches in the array.
template <class T, class U>
KJIT_INLINE view<T, sizeof(U)> derived_view_of(T* p, U* base, int array, int line,
                                               const thread_ctx& thread, report* to) {
  const long long bytes =
      reinterpret_cast<const unsigned char*>(p) - reinterpret_cast<const unsigned char*>(base);
  return view<T, sizeof(U)>(p, array, line, thread, to, bytes);
}

// An input's shape or strides ("inp_shape[d]"), |D| as the target passes it, checked against
// the input's |ndim| dimensions; |T| is their type (int or int64_t).
template <class D, class T>
class checked_dims {
 public:
  KJIT_INLINE checked_dims(const D& dims, int ndim, int array, int line, const thread_ctx& thread,
                           report* to)
      : dims_(dims), ndim_(ndim), array_(array), line_(line), thread_(thread), report_(to) {}

  template <class I, KJIT_IF(!is_builtin_float_v<I>)>
  KJIT_INLINE const T& operator[](I i) const {
    const long long k = static_cast<long long>(i);
    if (k >= 0 && k < ndim_) return dims_[i];
    if (claim(report_)) {
      write_finding(report_, report::out_of_bounds_kind, array_, line_, k, thread_);
      report_->extent = ndim_;
      report_->rank = 1;
    }
    return *reinterpret_cast<const T*>(report_->scratch);
  }

 private:
  const D& dims_;
  int ndim_;
  int array_;
  int line_;
  const thread_ctx& thread_;
  report* report_;
};

template <class D>
KJIT_INLINE checked_dims<D, decltype(+D()[0])> checked_dims_of(const D& dims, int ndim, int array,
                                                               int line, const thread_ctx& thread,
                                                               report* to) {
  return {dims, ndim, array, line, thread, to};
}

// A pointer cast in place ("((device float4*)(inp + k))[j]", "*reinterpret_cast<float4*>(out)"):
// the body's cast becomes reinterpret<T>(p) of the context of array |base|, which checks the
// accesses through it at the indices they reach in the array.
template <class U>
struct cast_context {
  U* base;
  int array;
  int line;
  const thread_ctx& thread;
  report* to;

  template <class P, class V>
  KJIT_INLINE auto reinterpret(V* p) const {
    return derived_view_of((P)p, base, array, line, thread, to);
  }
};

template <class U>
KJIT_INLINE cast_context<U> cast_of(U* base, int array, int line, const thread_ctx& thread,
                                    report* to) {
  return {base, array, line, thread, to};
}

}  // namespace kjit::debug
