// Cooperative mode of the CPU backend, for bodies that use barriers or SIMD-group operations:
// each thread of a group is a C++20 coroutine that suspends at those calls (the rewriter wraps
// them in co_await); the worker resumes the group's threads round-robin. When every live thread
// waits, SIMD-group operations are resolved among the lanes of a simdgroup waiting at the same
// call site (exited lanes and lanes at a barrier take no part), then, when only barriers remain,
// the barrier opens: exited threads count as arrived.
#pragma once

#include <coroutine>

#include "common/lanes.h"
#include "target/cpu/thread.h"

namespace kjit::coop {

enum class wait { none, barrier, simd };

struct lane;

// A SIMD-group operation a thread is about to wait at: its operand and how to combine it.
struct simd_request {
  unsigned char value[32];
  unsigned site;  // where the operation is called (KJIT_CALL_SITE)
  // Combines the operands of |n| lanes of one simdgroup (|lanes| in lane order, |ids| their
  // lane numbers) into each lane's result, reading |arg| and |width| from the first lane.
  void (*combine)(lane** lanes, const unsigned* ids, int n);
  unsigned arg;    // a lane number or distance, for shuffles
  unsigned width;  // the lanes that exchange values: segments of |width| consecutive lanes
};

// Where a suspended thread waits, with its request and where its result goes.
struct lane {
  wait waiting = wait::none;
  std::coroutine_handle<> running;  // the innermost coroutine of the thread: the body or a helper
  simd_request request;
  unsigned char* result;
  // Where the thread is in the program, outermost first: one step per loop that waits (its
  // call site and the iteration the thread is in) and per call of a waiting helper (the calling
  // site); while the thread waits, the operation's site follows them. Lanes meet only where
  // every step is equal, and the one whose steps come first in program order goes first, so that
  // lanes in different iterations of a loop do not meet.
  static constexpr unsigned kMaxSteps = 32;  // deeper steps are not told apart
  unsigned long long steps[kMaxSteps];
  unsigned depth = 0;        // the enclosing loops and helper calls
  unsigned place_steps = 0;  // steps of the waiting operation's place: depth + 1, capped

  // A step at call site |site|: sites in the high bits, iterations counted in the low ones.
  static constexpr unsigned long long step_at(unsigned site) {
    return static_cast<unsigned long long>(site) << 32;
  }
  void enter(unsigned site) {
    if (depth < kMaxSteps - 1) steps[depth] = step_at(site);
    ++depth;
  }
  void leave() { --depth; }
  // Negative, zero or positive as this lane's place comes before, is, or comes after |o|'s.
  int compare_place(const lane& o) const {
    const unsigned n = place_steps < o.place_steps ? place_steps : o.place_steps;
    for (unsigned k = 0; k < n; ++k) {
      if (steps[k] != o.steps[k]) return steps[k] < o.steps[k] ? -1 : 1;
    }
    return static_cast<int>(place_steps) - static_cast<int>(o.place_steps);
  }
};

// Coroutine frames come from a free list per worker and frame size: a group's threads start
// and end together, and freeing hundreds of frames at once sends most of them past malloc's
// small per-thread cache into its slower bins.
class frame_pool {
 public:
  ~frame_pool() {
    for (slot& s : slots_) {
      while (s.head) {
        void* next = *static_cast<void**>(s.head);
        ::operator delete(s.head);
        s.head = next;
      }
    }
  }
  void* take(size_t size) {
    for (slot& s : slots_) {
      if (s.size == size && s.head) {
        void* p = s.head;
        s.head = *static_cast<void**>(p);
        return p;
      }
    }
    return ::operator new(size);
  }
  void give(void* p, size_t size) {
    for (slot& s : slots_) {
      if (s.size == size || s.size == 0) {
        s.size = size;
        *static_cast<void**>(p) = s.head;
        s.head = p;
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  struct slot {
    size_t size;
    void* head;
  };
  slot slots_[4] = {};  // the body's frames, and those of the header's waiting helpers
};
inline frame_pool& frames() {
  static thread_local frame_pool pool;
  return pool;
}

// The allocation of every coroutine frame of a kernel.
struct pooled_frame {
  static void* operator new(size_t size) { return frames().take(size); }
  static void operator delete(void* p, size_t size) { frames().give(p, size); }
};

// A thread's coroutine. Its promise knows the thread's lane, so that awaiting needs no
// thread-local lookup (which costs a call into the dynamic loader in a dlopen-ed kernel).
struct task {
  struct promise_type : pooled_frame {
    lane* me = nullptr;
    task get_return_object() { return {std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { __builtin_trap(); }
  };
  std::coroutine_handle<promise_type> handle;
};
using thread_handle = std::coroutine_handle<task::promise_type>;

// A helper of the header that waits for other threads, as a coroutine the caller awaits. It
// starts when awaited (control passes straight to it), runs in its caller's lane, and hands
// control back to the caller when it returns; while it waits, the lane resumes it, not the body.
template <class T>
struct subtask;

struct subtask_promise_base : pooled_frame {
  lane* me = nullptr;
  std::coroutine_handle<> caller;
  std::suspend_always initial_suspend() noexcept { return {}; }
  struct back_to_caller {
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) const noexcept {
      lane* me = h.promise().me;
      me->leave();
      me->running = h.promise().caller;
      return h.promise().caller;
    }
    void await_resume() const noexcept {}
  };
  back_to_caller final_suspend() noexcept { return {}; }
  void unhandled_exception() { __builtin_trap(); }
};
template <class T>
struct subtask_promise : subtask_promise_base {
  T value;
  subtask<T> get_return_object();
  void return_value(T v) { value = v; }
};
template <>
struct subtask_promise<void> : subtask_promise_base {
  subtask<void> get_return_object();
  void return_void() {}
};

template <class T>
struct subtask {
  using promise_type = subtask_promise<T>;
  std::coroutine_handle<promise_type> handle;
  unsigned called_at = 0;  // the calling site (see called_at below)
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) const noexcept {
    lane* me = caller.promise().me;
    handle.promise().me = me;
    handle.promise().caller = caller;
    me->enter(called_at);
    me->running = handle;
    return handle;
  }
  T await_resume() const noexcept {
    if constexpr (!::kjit::is_same_v<T, void>) {
      T v = handle.promise().value;
      handle.destroy();
      return v;
    } else {
      handle.destroy();
    }
  }
};
// The rewriter wraps each call of a waiting helper: co_await called_at(KJIT_CALL_SITE, f(...)).
template <class T>
KJIT_INLINE subtask<T> called_at(unsigned site, subtask<T> call) {
  call.called_at = site;
  return call;
}

// A loop of the body or of a helper that waits, for as long as a thread runs it: the rewriter
// declares one around the loop (`loop_mark m(co_await this_lane{}, KJIT_CALL_SITE)`) and counts
// each iteration with m.next(), so that the thread's steps tell its iterations apart.
struct this_lane {
  mutable lane* me = nullptr;
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) const noexcept {
    me = h.promise().me;
    return false;  // goes straight on: the awaiting only reads the promise
  }
  lane* await_resume() const noexcept { return me; }
};
class loop_mark {
 public:
  KJIT_INLINE loop_mark(lane* me, unsigned site) : me_(me), level_(me->depth) { me->enter(site); }
  KJIT_INLINE ~loop_mark() { me_->leave(); }
  loop_mark(const loop_mark&) = delete;
  loop_mark& operator=(const loop_mark&) = delete;
  KJIT_INLINE void next() {
    if (level_ < lane::kMaxSteps - 1) ++me_->steps[level_];
  }

 private:
  lane* me_;
  unsigned level_;
};

template <class T>
subtask<T> subtask_promise<T>::get_return_object() {
  return {std::coroutine_handle<subtask_promise<T>>::from_promise(*this)};
}
inline subtask<void> subtask_promise<void>::get_return_object() {
  return {std::coroutine_handle<subtask_promise<void>>::from_promise(*this)};
}

// What a barrier tells each thread when it opens: how many arrived with a non-zero predicate
// (CUDA's __syncthreads_count/_and/_or), and how many arrived.
struct barrier_tally {
  int count, arrived;
};

// Awaitables keep their own results: the lane points at them while the thread waits. GCC 12
// may read the result of a co_await only after a later co_await of the same expression
// ("(co_await a) + (co_await b)") has suspended, so a result kept in the lane would be overwritten.
// A barrier's place (its site, in the thread's loops and helper calls) is kept as a SIMD-group
// operation's is, for debug builds to tell threads at different barriers apart.
struct barrier_wait {
  int predicate = 0;
  mutable barrier_tally tally = {0, 0};
  unsigned site = 0;
  bool await_ready() const noexcept { return false; }
  template <class P>
  void await_suspend(std::coroutine_handle<P> h) const noexcept {
    lane* me = h.promise().me;
    me->waiting = wait::barrier;
    __builtin_memcpy(me->request.value, &predicate, sizeof(int));
    me->request.site = site;
    const unsigned last = me->depth < lane::kMaxSteps - 1 ? me->depth : lane::kMaxSteps - 1;
    me->steps[last] = lane::step_at(site);
    me->place_steps = last + 1;
    me->result = reinterpret_cast<unsigned char*>(&tally);
  }
  void await_resume() const noexcept {}
};

// A barrier whose result combines the threads' predicates.
template <class Result>
struct tally_wait : barrier_wait {
  Result (*finish)(barrier_tally);
  Result await_resume() const noexcept { return finish(tally); }
};

// The awaitable of a SIMD-group operation. The request travels in it and reaches the lane only
// when the thread suspends, since a body may build several before awaiting the first.
template <class T>
struct simd_wait {
  simd_request request;
  mutable unsigned char result[sizeof(T)];
  bool await_ready() const noexcept { return false; }
  template <class P>
  void await_suspend(std::coroutine_handle<P> h) const noexcept {
    lane* me = h.promise().me;
    me->request = request;
    me->waiting = wait::simd;
    const unsigned last = me->depth < lane::kMaxSteps - 1 ? me->depth : lane::kMaxSteps - 1;
    me->steps[last] = lane::step_at(request.site);
    me->place_steps = last + 1;
    me->result = result;
  }
  T await_resume() const noexcept {
    T v;
    __builtin_memcpy(&v, result, sizeof(T));
    return v;
  }
};

// The result type of a SIMD-group operation: its operand's, unless given (a ballot of ints is a
// mask).
template <class Result, class T>
struct op_result {
  using type = Result;
};
template <class T>
struct op_result<void, T> {
  using type = T;
};

// A SIMD-group operation on |x|, whose result is a Result (by default, of x's type).
template <class Result = void, class T>
KJIT_INLINE simd_wait<typename op_result<Result, T>::type> simd_op(
    T x, unsigned site, void (*combine)(lane**, const unsigned*, int), unsigned arg = 0,
    unsigned width = 32) {
  static_assert(sizeof(T) <= sizeof(simd_request::value),
                "operand too large for a SIMD-group operation");
  simd_wait<typename op_result<Result, T>::type> w;
  __builtin_memcpy(w.request.value, &x, sizeof(T));
  w.request.site = site;
  w.request.combine = combine;
  w.request.arg = arg;
  w.request.width = width;
  return w;
}

// A lane's operand, which need not be default-constructible (a capturing lambda in it).
template <class T>
KJIT_INLINE T operand(const lane* l) {
  struct alignas(T) bytes {
    unsigned char b[sizeof(T)];
  } raw;
  __builtin_memcpy(&raw, l->request.value, sizeof(T));
  return __builtin_bit_cast(T, raw);
}
template <class T>
KJIT_INLINE void set_result(lane* l, T v) {
  __builtin_memcpy(l->result, &v, sizeof(T));
}

// A meeting and nothing more: a simdgroup barrier, __syncwarp.
inline void combine_meet(lane**, const unsigned*, int) {}

// Calls f(first, end) for each segment of |width| lanes among the |n| present, which come in
// lane order: lanes[first..end) are one segment's.
template <class F>
void for_each_segment(lane** lanes, const unsigned* ids, int n, F f) {
  const unsigned w = lanes[0]->request.width;
  for (int first = 0, end = 0; first < n; first = end) {
    while (end < n && ids[end] / w == ids[first] / w) ++end;
    f(first, end);
  }
}

// The votes of each segment: |publish(lane, yes, present)| gets, as bits in the segment's lane
// order, the lanes whose operand (a T) is non-zero and the lanes present.
template <class T, class Publish>
void combine_votes(lane** lanes, const unsigned* ids, int n, Publish publish) {
  for_each_segment(lanes, ids, n, [&](int first, int end) {
    const unsigned w = lanes[0]->request.width;
    unsigned yes = 0, present = 0;
    for (int i = first; i < end; ++i) {
      const unsigned bit = 1u << ids[i] % w;
      present |= bit;
      if (operand<T>(lanes[i]) != T(0)) yes |= bit;
    }
    for (int i = first; i < end; ++i) publish(lanes[i], yes, present);
  });
}
// The segment's reduction in a butterfly's order (lanes::butterfly), as the GPU's shuffles
// compute it and region mode does (mode/regions/lane_ops.h).
template <class T, class Op>
void combine_reduce(lane** lanes, const unsigned* ids, int n) {
  for_each_segment(lanes, ids, n, [&](int first, int end) {
    const unsigned w = lanes[0]->request.width;
    T values[32];
    bool present[32] = {};
    for (int i = first; i < end; ++i) {
      values[ids[i] % w] = operand<T>(lanes[i]);
      present[ids[i] % w] = true;
    }
    ::kjit::lanes::butterfly(values, present, w, Op{});
    for (int i = first; i < end; ++i) set_result(lanes[i], values[ids[i] % w]);
  });
}
// A lane's operand of a reduction whose operation travels with it (cg::reduce's, which may
// hold state).
template <class T, class Op>
struct reduction {
  T value;
  Op op;
};
// The segment's reduction in a butterfly's order (lanes::butterfly), as the GPU's shuffles
// compute it, with the first lane's operation.
template <class T, class Op>
void combine_butterfly(lane** lanes, const unsigned* ids, int n) {
  for_each_segment(lanes, ids, n, [&](int first, int end) {
    const unsigned w = lanes[0]->request.width;
    T values[32];
    bool present[32] = {};
    for (int i = first; i < end; ++i) {
      values[ids[i] % w] = operand<reduction<T, Op>>(lanes[i]).value;
      present[ids[i] % w] = true;
    }
    ::kjit::lanes::butterfly(values, present, w, operand<reduction<T, Op>>(lanes[first]).op);
    for (int i = first; i < end; ++i) set_result(lanes[i], values[ids[i] % w]);
  });
}
template <class T, class Op, bool Inclusive>
void combine_scan(lane** lanes, const unsigned* ids, int n) {
  for_each_segment(lanes, ids, n, [&](int first, int end) {
    T acc = Op::template identity<T>();
    for (int i = first; i < end; ++i) {
      T v = operand<T>(lanes[i]);
      if (Inclusive) acc = Op{}(acc, v);
      set_result(lanes[i], acc);
      if (!Inclusive) acc = Op{}(acc, v);
    }
  });
}
// The segment's first present lane's operand, to every lane of the segment.
template <class T>
void combine_broadcast_first(lane** lanes, const unsigned* ids, int n) {
  for_each_segment(lanes, ids, n, [&](int first, int end) {
    const T v = operand<T>(lanes[first]);
    for (int i = first; i < end; ++i) set_result(lanes[i], v);
  });
}
// True for the segment's first present lane.
inline void combine_is_first(lane** lanes, const unsigned* ids, int n) {
  for_each_segment(lanes, ids, n, [&](int first, int end) {
    for (int i = first; i < end; ++i) set_result(lanes[i], i == first);
  });
}

// Shuffles read the operand of lane |source(id, arg, width)| among those present, else keep
// their own.
template <class T, unsigned (*Source)(unsigned, unsigned, unsigned)>
void combine_shuffle(lane** lanes, const unsigned* ids, int n) {
  T values[32];
  bool present[32] = {};
  for (int i = 0; i < n; ++i) {
    values[ids[i]] = operand<T>(lanes[i]);
    present[ids[i]] = true;
  }
  for (int i = 0; i < n; ++i) {  // each lane reads from the lane it names
    const unsigned src = Source(ids[i], lanes[i]->request.arg, lanes[i]->request.width);
    set_result(lanes[i], src < 32 && present[src] ? values[src] : values[ids[i]]);
  }
}

// Metal's shuffle-and-fill: the operand is {x, fill}; within segments of |width| lanes, a lane
// reads x from |arg| lanes away (up: below; down: above), or fill from the lane the read wraps
// around to when it leaves the segment; a lane whose source is absent keeps its own x.
template <class T, bool Up>
void combine_shuffle_and_fill(lane** lanes, const unsigned* ids, int n) {
  struct pair {
    T x, fill;
  };
  pair values[32];
  bool present[32] = {};
  for (int i = 0; i < n; ++i) {
    values[ids[i]] = operand<pair>(lanes[i]);
    present[ids[i]] = true;
  }
  for (int i = 0; i < n; ++i) {
    const unsigned id = ids[i], d = lanes[i]->request.arg, w = lanes[i]->request.width;
    const unsigned src = Up ? lanes::rotated_up(id, d, w) : lanes::rotated_down(id, d, w);
    set_result(lanes[i], !present[src]                       ? values[id].x
                         : lanes::reads_within(id, d, w, Up) ? values[src].x
                                                             : values[src].fill);
  }
}

// Runs the groups [first, end): |make| starts the coroutine of one thread.
template <class Make, class Checks = no_group_checks>
void run_groups(const kjit_cpu_launch* L, unsigned long long first, unsigned long long end,
                Make make, Checks checks = {}) {
  thread_ctx base = launch_ctx(L);
  static thread_local lane lanes[1024];
  static thread_local thread_handle handles[1024];
  // Each thread's position; cooperative groups read the running thread's through current_thread.
  static thread_local thread_ctx threads[1024];
  for (unsigned long long g = first; g < end; ++g) {
    base.enter_group(g);
    checks.begin_group();
    const unsigned n = base.group_threads();
    for (unsigned i = 0; i < n; ++i) {
      thread_ctx& t = threads[i];
      t = base;
      const unsigned x = i % base.group_size.x, y = (i / base.group_size.x) % base.group_size.y,
                     z = i / (base.group_size.x * base.group_size.y);
      t.global_id = base.origin + uint3(x, y, z);
      lanes[i].waiting = wait::none;
      handles[i] = make(t).handle;
      handles[i].promise().me = &lanes[i];
      lanes[i].running = handles[i];
      lanes[i].depth = 0;
    }
    const thread_ctx*& current = current_thread;  // one thread-local lookup per group
    // One pass over the threads per round: it resumes those not waiting (and, when the barrier
    // has just opened, those it releases) and tallies where each one stops.
    unsigned live = n, at_simd = 0, at_barrier = 0;
    int predicates = 0;  // non-zero barrier predicates, for __syncthreads_count/_and/_or
    bool open = false;
    barrier_tally opened = {0, 0};
    while (live > 0) {
      for (unsigned i = 0; i < n; ++i) {
        if (!handles[i]) continue;
        lane& l = lanes[i];
        if (l.waiting == wait::barrier) {
          // Threads released earlier in this pass that reach a barrier again wait for the next.
          if (!open) continue;
          set_result(&l, opened);
          l.waiting = wait::none;
        } else if (l.waiting == wait::simd) {
          continue;
        }
        current = &threads[i];
        l.running.resume();
        if (handles[i].done()) {
          handles[i].destroy();
          handles[i] = nullptr;
          --live;
        } else if (l.waiting == wait::barrier) {
          predicates += operand<int>(&l) != 0;
          ++at_barrier;
        } else {
          ++at_simd;
        }
      }
      open = false;
      if (at_simd == 0) {
        // Every live thread is at the barrier (exited threads count as arrived): it opens.
        if (at_barrier > 0) checks.barrier_opens(lanes, handles, threads, n);
        opened = {predicates, static_cast<int>(at_barrier)};
        open = true;
        predicates = 0;
        at_barrier = 0;
        continue;
      }
      // In each simdgroup, the operation earliest in the body resolves first, among the lanes
      // waiting there; the others wait on, so that lanes that ran ahead past a branch
      // ("if (lane < 10) ...; ballot(...)") meet the rest at the join. The barrier opens only
      // when no SIMD-group operation waits.
      for (unsigned s = 0; s < n; s += 32) {
        const lane* first = nullptr;
        for (unsigned i = s; i < s + 32 && i < n; ++i) {
          if (handles[i] && lanes[i].waiting == wait::simd &&
              (!first || lanes[i].compare_place(*first) < 0)) {
            first = &lanes[i];
          }
        }
        if (!first) continue;
        lane* group[32];
        unsigned ids[32];
        int count = 0;
        for (unsigned i = s; i < s + 32 && i < n; ++i) {
          if (!handles[i] || lanes[i].waiting != wait::simd ||
              lanes[i].compare_place(*first) != 0) {
            continue;
          }
          group[count] = &lanes[i];
          ids[count++] = i - s;
        }
        group[0]->request.combine(group, ids, count);
        for (int k = 0; k < count; ++k) group[k]->waiting = wait::none;
        at_simd -= static_cast<unsigned>(count);
      }
    }
    checks.end_group();
  }
}

}  // namespace kjit::coop
