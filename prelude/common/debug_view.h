// A debug build's element accesses (compile option debug): the body's "name[i]" and "*name" of
// an input or output go through a view of the array that checks the index against the array's
// bounds, and reports the first index outside them, with the thread and the body line, to the
// launch's report. The memory such an index would reach is never touched: the access goes to a
// scratch slot instead (shared by the threads that stray: what it holds is unspecified).
#pragma once

#include "common/atomics.h"
#include "common/thread_ctx.h"

namespace kjit::debug {

// The first out-of-bounds index of a launch. The host reads it after the launch
// (core/debug_launch.cpp keeps the same layout); each array's bounds follow it in memory, two
// 64-bit indices (first, end) per input and output, in the kernel's parameter order.
struct report {
  unsigned claimed;  // nonzero once a thread has reported
  int array;         // inputs first, then outputs
  int line;          // of the body
  unsigned unused;
  long long index;
  unsigned thread[3];  // thread_position_in_grid
  unsigned group[3];   // threadgroup_position_in_grid
  alignas(16) unsigned char scratch[64];
  unsigned char padding[16];
};
static_assert(sizeof(report) == 128, "the host reads this layout (core/debug_launch.cpp)");

template <class T>
class view {
 public:
  KJIT_INLINE view(T* data, int array, int line, const thread_ctx& thread, report* to)
      : data_(data), array_(array), line_(line), thread_(thread), report_(to) {}

  // Indexed as a pointer is: by an integer.
  template <class I, KJIT_IF(!is_builtin_float_v<I>)>
  KJIT_INLINE T& operator[](I i) const {
    const long long k = static_cast<long long>(i);
    const long long* bounds = reinterpret_cast<const long long*>(report_ + 1) + 2 * array_;
    if (k >= bounds[0] && k < bounds[1]) return data_[k];
    return out_of_bounds(k);
  }
  KJIT_INLINE T& operator*() const { return (*this)[0]; }

 private:
  T& out_of_bounds(long long k) const {
    if (atomics::cas(&report_->claimed, 0u, 1u) == 0u) {
      report_->array = array_;
      report_->line = line_;
      report_->index = k;
      const uint3 t = thread_.thread_position_in_grid();
      const uint3 g = thread_.threadgroup_position_in_grid();
      report_->thread[0] = t.x, report_->thread[1] = t.y, report_->thread[2] = t.z;
      report_->group[0] = g.x, report_->group[1] = g.y, report_->group[2] = g.z;
    }
    return *reinterpret_cast<T*>(report_->scratch);
  }

  T* data_;
  int array_;
  int line_;
  const thread_ctx& thread_;
  report* report_;
};

template <class T>
KJIT_INLINE view<T> view_of(T* data, int array, int line, const thread_ctx& thread, report* to) {
  return view<T>(data, array, line, thread, to);
}

}  // namespace kjit::debug
