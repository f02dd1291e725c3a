// Cooperative mode of the CPU backend, for bodies that use barriers or SIMD-group operations:
// each thread of a group is a C++20 coroutine that suspends at those calls (the rewriter wraps
// them in co_await); the worker resumes the group's threads round-robin. When every live thread
// waits, SIMD-group operations are resolved among the lanes of a simdgroup waiting at the same
// call site (exited lanes and lanes at a barrier take no part), then, when only barriers remain,
// the barrier opens: exited threads count as arrived.
#include <coroutine>

#include "cpu_thread.h"

namespace kjit::coop {

struct task {
  struct promise_type {
    task get_return_object() { return {std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { __builtin_trap(); }
  };
  std::coroutine_handle<promise_type> handle;
};

enum class wait { none, barrier, simd };

// Where a suspended thread waits, and the operand of its SIMD-group operation.
struct lane {
  wait waiting = wait::none;
  unsigned site = 0;  // source line of the SIMD-group operation
  unsigned char value[32];
  unsigned char result[32];
  // Combines the operands of |n| lanes of one simdgroup (|lanes| in lane order, |ids| their
  // lane numbers) into each lane's result.
  void (*combine)(lane** lanes, const unsigned* ids, int n, unsigned arg) = nullptr;
  unsigned arg = 0;  // a lane number or distance, for shuffles
};

inline thread_local lane* current_lane = nullptr;

// CUDA's dynamic shared memory (extern __shared__) on the CPU: one buffer per worker.
inline unsigned char* dynamic_shared(unsigned long bytes) {
  static thread_local unsigned char* buffer = nullptr;
  static thread_local unsigned long size = 0;
  if (size < bytes) {
    buffer = static_cast<unsigned char*>(__builtin_realloc(buffer, bytes));
    size = bytes;
  }
  return buffer;
}

struct barrier_wait {
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<>) const noexcept {
    current_lane->waiting = wait::barrier;
  }
  void await_resume() const noexcept {}
};

template <class T>
struct simd_wait {
  lane* me;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  T await_resume() const noexcept {
    T v;
    __builtin_memcpy(&v, me->result, sizeof(T));
    return v;
  }
};

// Parks this lane at a SIMD-group operation on |x|.
template <class T>
KJIT_INLINE simd_wait<T> simd_op(T x, unsigned site,
                                 void (*combine)(lane**, const unsigned*, int, unsigned),
                                 unsigned arg = 0) {
  static_assert(sizeof(T) <= sizeof(lane::value), "operand too large for a SIMD-group operation");
  lane* me = current_lane;
  __builtin_memcpy(me->value, &x, sizeof(T));
  me->waiting = wait::simd;
  me->site = site;
  me->combine = combine;
  me->arg = arg;
  return {me};
}

template <class T>
KJIT_INLINE T operand(const lane* l) {
  T v;
  __builtin_memcpy(&v, l->value, sizeof(T));
  return v;
}
template <class T>
KJIT_INLINE void set_result(lane* l, T v) {
  __builtin_memcpy(l->result, &v, sizeof(T));
}

template <class T, class Op>
void combine_reduce(lane** lanes, const unsigned*, int n, unsigned) {
  T acc = operand<T>(lanes[0]);
  for (int i = 1; i < n; ++i) acc = Op{}(acc, operand<T>(lanes[i]));
  for (int i = 0; i < n; ++i) set_result(lanes[i], acc);
}
template <class T, class Op, bool Inclusive>
void combine_scan(lane** lanes, const unsigned*, int n, unsigned) {
  T acc = Op::template identity<T>();
  for (int i = 0; i < n; ++i) {
    T v = operand<T>(lanes[i]);
    if (Inclusive) acc = Op{}(acc, v);
    set_result(lanes[i], acc);
    if (!Inclusive) acc = Op{}(acc, v);
  }
}
// Shuffles read the operand of lane |source(id, arg)| among those present, else keep their own.
template <class T, unsigned (*Source)(unsigned, unsigned)>
void combine_shuffle(lane** lanes, const unsigned* ids, int n, unsigned arg) {
  T values[32];
  bool present[32] = {};
  for (int i = 0; i < n; ++i) {
    values[ids[i]] = operand<T>(lanes[i]);
    present[ids[i]] = true;
  }
  for (int i = 0; i < n; ++i) {
    const unsigned src = Source(ids[i], arg);
    set_result(lanes[i], src < 32 && present[src] ? values[src] : values[ids[i]]);
  }
}

// Runs the groups [first, end): |make| starts the coroutine of one thread.
template <class Make>
void run_groups(const kjit_cpu_launch* L, unsigned long long first, unsigned long long end,
                Make make) {
  thread_ctx base;
  base.grid = uint3(L->grid[0], L->grid[1], L->grid[2]);
  base.group = uint3(L->group[0], L->group[1], L->group[2]);
  base.groups = uint3(L->groups[0], L->groups[1], L->groups[2]);
  static thread_local lane lanes[1024];
  static thread_local std::coroutine_handle<task::promise_type> handles[1024];
  for (unsigned long long g = first; g < end; ++g) {
    base.enter_group(g);
    const unsigned n = base.group_threads();
    for (unsigned i = 0; i < n; ++i) {
      thread_ctx t = base;
      const unsigned x = i % base.group_size.x, y = (i / base.group_size.x) % base.group_size.y,
                     z = i / (base.group_size.x * base.group_size.y);
      t.global_id = base.origin + uint3(x, y, z);
      lanes[i].waiting = wait::none;
      handles[i] = make(t).handle;
    }
    unsigned live = n;
    while (live > 0) {
      for (unsigned i = 0; i < n; ++i) {
        if (!handles[i] || lanes[i].waiting != wait::none) continue;
        current_lane = &lanes[i];
        handles[i].resume();
        if (handles[i].done()) {
          handles[i].destroy();
          handles[i] = nullptr;
          --live;
        }
      }
      // Every live thread waits: resolve SIMD-group operations site by site, else open the barrier.
      bool resolved = false;
      for (unsigned s = 0; s < n; s += 32) {
        for (;;) {
          lane* group[32];
          unsigned ids[32];
          int count = 0;
          unsigned site = 0;
          for (unsigned i = s; i < s + 32 && i < n; ++i) {
            if (!handles[i] || lanes[i].waiting != wait::simd) continue;
            if (count == 0) site = lanes[i].site;
            if (lanes[i].site != site) continue;
            group[count] = &lanes[i];
            ids[count++] = i - s;
          }
          if (count == 0) break;
          group[0]->combine(group, ids, count, group[0]->arg);
          for (int k = 0; k < count; ++k) group[k]->waiting = wait::none;
          resolved = true;
        }
      }
      if (!resolved) {
        for (unsigned i = 0; i < n; ++i) lanes[i].waiting = wait::none;
      }
    }
  }
}

}  // namespace kjit::coop
