// A debug build's checks of how a group's threads share its memory, on the CPU, where one worker
// runs all the threads of a group:
// - races: two threads of a group touching one element of a group-memory array between the
//   same two barriers, one of them writing. Every access through a group array's view
//   (common/debug_group_view.h) is recorded in a shadow of the array; whether it wrote is seen
//   by the element's value at its next access or at the end of the stretch between barriers
//   (so a write that leaves the value as it was is not seen);
// - barrier divergence: threads of a group waiting at different barriers, or some waiting at a
//   barrier that others never reach because they left the kernel.
// The first finding goes to the launch's report (common/debug_view.h).
#pragma once

#include "common/debug_view.h"

namespace kjit::debug::races {

// One thread's access: its index in the group and the body's line.
struct access_at {
  unsigned thread;
  int line;
};

// What the shadow knows of one element within one stretch between barriers.
struct cell {
  unsigned long long epoch;    // the stretch the accesses below belong to (0: none yet)
  unsigned long long pending;  // the stretch of |last| while its value is to be compared (0: none)
  access_at last, first, other, writer;  // |other|: a thread other than |first|'s
  bool has_other, has_writer;
};

// The shadow of one array on one worker: a cell and the last access's value per element, and
// what a report of the array names, as its latest access left them.
struct shadow {
  const unsigned char* base;
  long long count;
  unsigned size;  // of an element
  cell* cells;
  unsigned char* values;
  unsigned long long stretch;  // of the latest access
  int array, rank;
  long long extents[4];
  report* to;
  thread_ctx group;  // the group of the latest access (its thread aside)
};

// One worker's state: the stretch between barriers running now, counted over every group the
// worker runs (from 1: a new cell's 0 is none), and the shadows of the arrays it has seen (the
// oldest make room for new ones).
struct worker_state {
  static constexpr unsigned kShadows = 16;
  unsigned long long epoch;
  shadow shadows[kShadows];
  unsigned next;
};
inline worker_state& worker() {
  static thread_local worker_state state;
  return state;
}

inline shadow* shadow_of(const unsigned char* base, long long count, unsigned size) {
  worker_state& w = worker();
  for (shadow& s : w.shadows) {
    if (s.base == base && s.count == count && s.size == size) return &s;
  }
  shadow& s = w.shadows[w.next++ % worker_state::kShadows];
  __builtin_free(s.cells);
  __builtin_free(s.values);
  s.cells = static_cast<cell*>(__builtin_calloc(static_cast<size_t>(count), sizeof(cell)));
  s.values = static_cast<unsigned char*>(__builtin_malloc(static_cast<size_t>(count) * size));
  const bool made = s.cells && s.values;
  s.base = made ? base : nullptr;
  s.count = count;
  s.size = size;
  s.stretch = 0;
  return made ? &s : nullptr;
}

// The grid position of the thread at |index| in |group|'s group.
KJIT_INLINE uint3 position_of(const thread_ctx& group, unsigned index) {
  const uint3 n = group.group_size;
  return group.origin + uint3(index % n.x, (index / n.x) % n.y, index / (n.x * n.y));
}

// Reports a race on element |flat| of |s|'s array: |a| and |b| touched it.
inline void found(const shadow& s, long long flat, access_at a, bool a_wrote, access_at b,
                  bool b_wrote) {
  report* r = s.to;
  if (!claim(r)) return;
  thread_ctx t = s.group;
  t.global_id = position_of(s.group, a.thread);
  write_finding(r, report::race_kind, s.array, a.line, flat, t);
  write_position(r->other_thread, position_of(s.group, b.thread));
  r->other_line = b.line;
  r->wrote = a_wrote;
  r->other_wrote = b_wrote;
  r->rank = s.rank;
  for (int d = 0; d < 4; ++d) r->extents[d] = s.extents[d];
}

// Whether the element's last access changed it: then that access wrote, a race with any other
// thread's access in the same stretch.
inline void settle(shadow& s, long long flat) {
  cell& c = s.cells[flat];
  if (!c.pending) return;
  c.pending = 0;
  if (__builtin_memcmp(s.base + flat * s.size, s.values + flat * s.size, s.size) == 0) return;
  const access_at w = c.last;
  if (c.has_writer && c.writer.thread != w.thread) {
    found(s, flat, w, true, c.writer, true);
  } else if (c.first.thread != w.thread) {
    found(s, flat, w, true, c.first, false);
  } else if (c.has_other) {
    found(s, flat, w, true, c.other, false);
  }
  c.writer = w;
  c.has_writer = true;
}

// A stretch ends (a barrier, or the group's end): the last accesses of every element are told
// reads or writes, and a new stretch begins.
inline void next_stretch() {
  worker_state& w = worker();
  for (shadow& s : w.shadows) {
    if (!s.base || s.stretch != w.epoch) continue;
    for (long long flat = 0; flat < s.count; ++flat) settle(s, flat);
  }
  ++w.epoch;
}

// Records an access, by the thread and at the line of |use|, to the element at |p| (of |size|
// bytes) of the array |use| names. A use that takes the element's address (an atomic operation,
// a pointer) is not recorded, and what changes the element until its next access is nobody's
// write.
template <class Use>
void touch(const Use& use, const void* p, unsigned size) {
  shadow* s = shadow_of(use.base, use.count, size);
  if (!s) return;
  const unsigned long long now = worker().epoch;
  if (s->stretch != now) {
    s->stretch = now;
    s->array = use.array;
    s->rank = use.rank;
    for (int d = 0; d < 4; ++d) s->extents[d] = use.extents[d];
    s->to = use.to;
    s->group = *use.thread;
  }
  const unsigned char* at = static_cast<const unsigned char*>(p);
  const long long flat = (at - use.base) / size;
  settle(*s, flat);
  if (!use.tracked) return;
  cell& c = s->cells[flat];
  const access_at me{use.thread->thread_index_in_threadgroup(), use.line};
  if (c.epoch != now) {
    c.epoch = now;
    c.first = me;
    c.has_other = c.has_writer = false;
  } else {
    if (c.has_writer && c.writer.thread != me.thread) found(*s, flat, c.writer, true, me, false);
    if (!c.has_other && me.thread != c.first.thread) {
      c.other = me;
      c.has_other = true;
    }
  }
  c.last = me;
  c.pending = now;
  __builtin_memcpy(s->values + flat * size, at, size);
}

// Reports threads |a| (waiting at the barrier at |a_line|) and |b| (at |b_line|, or 0: it left
// the kernel) of one group.
inline void diverged(report* r, const thread_ctx& a, int a_line, const thread_ctx& b, int b_line) {
  if (!claim(r)) return;
  write_finding(r, report::divergence_kind, -1, a_line, 0, a);
  write_position(r->other_thread, b.thread_position_in_grid());
  r->other_line = b_line;
}

// What a debug build's launch does at each group's start and end and, in cooperative mode, when
// a barrier opens (target/cpu/thread.h's no_group_checks does nothing): a new stretch begins,
// and at a barrier, the threads must all wait there.
struct group_checks {
  report* to;
  KJIT_INLINE void begin_group() const { next_stretch(); }
  KJIT_INLINE void end_group() const { next_stretch(); }
  // Every live thread of the group waits at a barrier (lanes[i], or handles[i] null for a thread
  // that left the kernel): they must wait at the same one. Threads that left count as arrived,
  // as on NVIDIA's GPUs: "if (i >= n) return;" before a barrier is common and runs the same
  // everywhere kjit runs.
  template <class Lane, class Handle>
  void barrier_opens(const Lane* lanes, const Handle* handles, const thread_ctx* threads,
                     unsigned n) const {
    unsigned waiting = n, apart = n;
    for (unsigned i = 0; i < n; ++i) {
      if (!handles[i]) continue;
      if (waiting == n) {
        waiting = i;
      } else if (apart == n && lanes[i].compare_place(lanes[waiting]) != 0) {
        apart = i;
      }
    }
    if (waiting < n && apart < n) {
      diverged(to, threads[waiting], static_cast<int>(call_line(lanes[waiting].request.site)),
               threads[apart], static_cast<int>(call_line(lanes[apart].request.site)));
    }
    next_stretch();
  }
};

}  // namespace kjit::debug::races
