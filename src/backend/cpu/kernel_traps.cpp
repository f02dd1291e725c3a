#include "backend/cpu/kernel_traps.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <iterator>
#include <mutex>

#include "backend/cpu/alternate_stack.h"

namespace kjit::cpu {
namespace {

constexpr int kWatched[] = {SIGFPE, SIGILL, SIGTRAP, SIGSEGV, SIGBUS};

struct sigaction handlers_before[std::size(kWatched)];

// Each thread that runs kernels has a slot for its life, holding its id while it runs kernel
// code (0 otherwise) and where a trap there jumps to, which a handler can read (it could not
// read a thread-local the thread has not touched: that calls malloc, and the signal may have
// come inside malloc).
// SIGINT stops the kernels running on the CPU, where a program has a handler for it (Python's
// raises KeyboardInterrupt). The thread it reaches sends it on to each thread in kernel code,
// whose handler leaves the kernel as a trap's does, if the thread is in the kernel's own machine
// code; elsewhere (a library call, which may hold a lock), the thread's timer signals it again a
// moment later, unless a Ctrl-C comes a while after it was found outside. For that the slot holds
// the count of interrupts the thread's launch started at, where the kernel's machine code is, the
// thread's timer, and when the thread was first found outside the kernel's code.
struct ThreadSlot {
  std::atomic<bool> claimed{false};
  std::atomic<pid_t> running{0};
  std::atomic<sigjmp_buf*> landing{nullptr};
  std::atomic<uint64_t> since{0};
  std::atomic<uintptr_t> code_begin{0}, code_end{0};
  std::atomic<bool> has_timer{false};
  std::atomic<bool> armed{false};  // the timer set to go off
  std::atomic<timer_t> timer{};
  std::atomic<int64_t> outside_since{0};  // CLOCK_MONOTONIC ns; 0: not found outside
};
static_assert(std::atomic<pid_t>::is_always_lock_free &&
                  std::atomic<sigjmp_buf*>::is_always_lock_free &&
                  std::atomic<int64_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free &&
                  std::atomic<uintptr_t>::is_always_lock_free &&
                  std::atomic<timer_t>::is_always_lock_free,
              "a signal handler reads them");
// The slots come in chunks, linked for good: a chunk is added when every slot is claimed (by a
// thread about to run kernel code, never in a signal handler) and never freed, so a handler can
// walk the list at any time. A thread's slot is free again when it ends.
struct SlotChunk {
  ThreadSlot slots[256];
  std::atomic<SlotChunk*> next{nullptr};
};
SlotChunk first_chunk;
// This thread's slot, for the fork handler (never read in a signal handler).
thread_local ThreadSlot* own_slot = nullptr;
// Whether kjit's SIGINT handler went in: only then do threads need timers.
bool interrupts_watched = false;
// SIGINTs from outside kjit so far. A launch notes the count as it starts; a thread entering
// kernel code after a newer one leaves at once. (A count, not a flag that launches clear: a
// concurrent launch could clear it before a thread of the interrupted one saw it.)
std::atomic<uint64_t> interrupts{0};
// How many times this process and its ancestors forked since the fork handler went in (a child
// starts from its parent's count): a thread that sees it change is a forked child's.
std::atomic<uint64_t> forks{0};
// When the latest SIGINT from outside kjit came (CLOCK_MONOTONIC ns).
std::atomic<int64_t> last_interrupt_at{0};
// How long a thread outside its kernel's code waits to be signalled again, and how long after it
// was first found there a Ctrl-C stops it where it is.
constexpr int64_t kSignalAgainAfter = 1'000'000, kStopAnywhereAfter = 250'000'000;
struct sigaction interrupt_before;
// Marks the SIGINTs kjit sends on (sigqueue's and the timers' value), which the program itself
// never sends.
constexpr int kSentOn = 0x6b6a6974;

pid_t thread_id() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// The first slot for which found(slot) is true, else null; a handler may call it.
template <class Found>
ThreadSlot* find_slot(const Found& found) {
  for (SlotChunk* chunk = &first_chunk; chunk;
       chunk = chunk->next.load(std::memory_order_acquire)) {
    for (ThreadSlot& slot : chunk->slots) {
      if (found(slot)) return &slot;
    }
  }
  return nullptr;
}

// The slot of thread |self| while it runs kernel code, else null.
ThreadSlot* running_slot(pid_t self) {
  return find_slot([self](const ThreadSlot& slot) {
    return slot.running.load(std::memory_order_seq_cst) == self;
  });
}

// A slot for the calling thread's life: a free one, else the first of a new chunk.
ThreadSlot* claim_slot() {
  if (ThreadSlot* free = find_slot([](ThreadSlot& slot) {
        bool claimed = false;
        return slot.claimed.compare_exchange_strong(claimed, true, std::memory_order_acq_rel);
      })) {
    return free;
  }
  auto* chunk = new SlotChunk();
  chunk->slots[0].claimed.store(true, std::memory_order_relaxed);
  // Appended at the end, which another thread may have moved meanwhile.
  for (SlotChunk* last = &first_chunk;;) {
    SlotChunk* next = nullptr;
    if (last->next.compare_exchange_strong(next, chunk, std::memory_order_acq_rel)) {
      return &chunk->slots[0];
    }
    last = next;
  }
}

// Runs the handler function that |handler| holds (not SIG_DFL or SIG_IGN).
void run_handler(const struct sigaction& handler, int signal, siginfo_t* info, void* context) {
  if (handler.sa_flags & SA_SIGINFO) {
    handler.sa_sigaction(signal, info, context);
  } else {
    handler.sa_handler(signal);
  }
}

void send_on(pid_t thread) {
  siginfo_t info = {};
  info.si_signo = SIGINT;
  info.si_code = SI_QUEUE;
  info.si_pid = getpid();
  info.si_uid = getuid();
  info.si_value.sival_int = kSentOn;
  syscall(SYS_rt_tgsigqueueinfo, getpid(), thread, SIGINT, &info);
}

// Whether the thread that |context| describes was in the running kernel's own machine code.
bool in_kernel_code(const ThreadSlot& slot, const void* context) {
  const uintptr_t begin = slot.code_begin.load(std::memory_order_relaxed);
  const uintptr_t end = slot.code_end.load(std::memory_order_relaxed);
  const mcontext_t& machine = static_cast<const ucontext_t*>(context)->uc_mcontext;
#if defined(__x86_64__)
  const auto at = static_cast<uintptr_t>(machine.gregs[REG_RIP]);
#elif defined(__aarch64__)
  const auto at = static_cast<uintptr_t>(machine.pc);
#else
#error "kjit reads the interrupted instruction's address on x86-64 and AArch64 only"
#endif
  return at >= begin && at < end;
}

// CLOCK_MONOTONIC in ns (clock_gettime is async-signal-safe).
int64_t now_ns() {
  struct timespec now = {};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * int64_t{1'000'000'000} + now.tv_nsec;
}

// Whether a Ctrl-C came long enough after the thread was first found outside its kernel's code
// in this launch to stop it there; notes the first time it is found there.
bool stop_outside(ThreadSlot& slot) {
  const int64_t found = slot.outside_since.load(std::memory_order_relaxed);
  if (found == 0) {
    slot.outside_since.store(now_ns(), std::memory_order_relaxed);
    return false;
  }
  return last_interrupt_at.load(std::memory_order_seq_cst) - found >= kStopAnywhereAfter;
}

// The thread's timer signals it again in a millisecond (timer_settime is async-signal-safe).
void signal_again(ThreadSlot& slot) {
  if (!slot.has_timer.load(std::memory_order_relaxed)) return;
  struct itimerspec soon = {};
  soon.it_value.tv_nsec = kSignalAgainAfter;
  slot.armed.store(true, std::memory_order_relaxed);
  timer_settime(slot.timer.load(std::memory_order_relaxed), 0, &soon, nullptr);
}

void on_interrupt(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;  // the code interrupted may be about to read it
  const bool sent_on =
      ((info->si_code == SI_QUEUE && info->si_pid == getpid()) || info->si_code == SI_TIMER) &&
      info->si_value.sival_int == kSentOn;
  if (!sent_on) {
    // The program's own handler first (Python's notes the signal, to raise KeyboardInterrupt),
    // so that it has run by the time a stopped launch returns.
    run_handler(interrupt_before, signal, info, context);
    // Counted before the slots are read, and a thread entering kernel code fills its slot
    // before reading the count (both in this order everywhere): each sees the other.
    last_interrupt_at.store(now_ns(), std::memory_order_seq_cst);
    interrupts.fetch_add(1, std::memory_order_seq_cst);
  }
  const pid_t self = thread_id();
  ThreadSlot* mine = nullptr;
  find_slot([&](ThreadSlot& slot) {
    const pid_t id = slot.running.load(std::memory_order_seq_cst);
    if (id != 0 && id == self) {
      mine = &slot;
    } else if (id != 0 && !sent_on) {
      send_on(id);
    }
    return false;
  });
  // A signal sent on late, after this thread's launch ended and another began, stops nothing.
  // Outside the kernel's own code, a thread is signalled again a moment later; a Ctrl-C that
  // comes a quarter of a second or more after it was first found there stops it there (it may
  // never come back: a sleep, or a thread without a timer), whatever that leaves held. (The
  // time of the Ctrl-C, not of this signal: the thread's own timer keeps signalling it.)
  if (mine &&
      interrupts.load(std::memory_order_seq_cst) != mine->since.load(std::memory_order_relaxed)) {
    if (!in_kernel_code(*mine, context) && !stop_outside(*mine)) {
      signal_again(*mine);
    } else if (sigjmp_buf* landing = mine->landing.exchange(nullptr)) {
      // The jump keeps the handler's signal mask (the program's handler may block signals):
      // the one from before the signal is put back first.
      pthread_sigmask(SIG_SETMASK, &static_cast<ucontext_t*>(context)->uc_sigmask, nullptr);
      siglongjmp(*landing, signal);
    }
  }
  errno = saved_errno;
}

void on_trap(int signal, siginfo_t* info, void* context) {
  if (ThreadSlot* mine = running_slot(thread_id())) {
    if (sigjmp_buf* landing = mine->landing.exchange(nullptr)) siglongjmp(*landing, signal);
  }
  // Not kernel code: what happened before kjit was here.
  for (size_t k = 0; k < std::size(kWatched); ++k) {
    if (kWatched[k] != signal) continue;
    const struct sigaction& before = handlers_before[k];
    if ((before.sa_flags & SA_SIGINFO) ||
        (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN)) {
      run_handler(before, signal, info, context);
    } else {
      // The default action: a fault of an instruction (not a trap, which is past it) runs it
      // again, so that the core dump keeps the fault's own address and code.
      std::signal(signal, SIG_DFL);
      if (info->si_code > 0 && signal != SIGTRAP) return;
      std::raise(signal);
    }
  }
}

void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action = {};
    action.sa_sigaction = on_trap;
    // The signal stays unblocked in the handler, which leaves it by a jump that restores no mask.
    // The handler runs on the thread's alternate stack, so that a kernel that overflowed its
    // own stack can be left too.
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (size_t k = 0; k < std::size(kWatched); ++k) {
      sigaction(kWatched[k], &action, &handlers_before[k]);
    }
    // In a child forked after this, only the forking thread lives, with a new id and no timer
    // (a child has none of its parent's); the other threads' slots are free again.
    pthread_atfork(nullptr, nullptr, [] {
      find_slot([](ThreadSlot& slot) {
        slot.running.store(0, std::memory_order_relaxed);
        slot.has_timer.store(false, std::memory_order_relaxed);
        slot.armed.store(false, std::memory_order_relaxed);
        if (&slot != own_slot) slot.claimed.store(false, std::memory_order_relaxed);
        return false;
      });
      forks.fetch_add(1, std::memory_order_relaxed);
    });
    // SIGINT only where the program handles it, and for good (not with SA_RESETHAND: the
    // default the first one puts back would end the process at the signals kjit sends on). Its
    // default ends the process, as before, and a program that ignores it keeps ignoring it.
    // The program's flags are kept (Python's leave out SA_RESTART, so that a blocking call
    // returns to run its handler), and its mask, with SIGINT in it: a second SIGINT waits for
    // the handler to end.
    struct sigaction current = {};
    if (sigaction(SIGINT, nullptr, &current) != 0 || current.sa_handler == SIG_DFL ||
        current.sa_handler == SIG_IGN || (current.sa_flags & SA_RESETHAND)) {
      return;
    }
    interrupt_before = current;
    struct sigaction interrupt = current;
    interrupt.sa_sigaction = on_interrupt;
    interrupt.sa_flags = (current.sa_flags & ~SA_NODEFER) | SA_SIGINFO | SA_ONSTACK;
    sigaddset(&interrupt.sa_mask, SIGINT);
    sigaction(SIGINT, &interrupt, nullptr);
    interrupts_watched = true;
  });
}

// This thread's slot, claimed for the thread's life.
class ListedThread {
 public:
  ListedThread() : slot_(claim_slot()) {
    own_slot = slot_;
    make_timer();
  }
  ~ListedThread() {
    slot_->running.store(0, std::memory_order_seq_cst);
    if (slot_->has_timer.exchange(false)) timer_delete(slot_->timer.load());
    own_slot = nullptr;
    slot_->claimed.store(false, std::memory_order_release);
  }
  ListedThread(const ListedThread&) = delete;
  ListedThread& operator=(const ListedThread&) = delete;

  // Kernel code from here, for a launch that began at |since| interrupts, of a kernel whose
  // machine code is |code|; a trap in it lands at |landing|.
  void enter(uint64_t since, const CodeRange& code, sigjmp_buf* landing) {
    if (const uint64_t now = forks.load(std::memory_order_relaxed); now != forks_seen_) {
      id_ = thread_id();  // a forked child's
      forks_seen_ = now;
      make_timer();
    }
    slot_->since.store(since, std::memory_order_relaxed);
    slot_->code_begin.store(code.begin, std::memory_order_relaxed);
    slot_->code_end.store(code.end, std::memory_order_relaxed);
    slot_->landing.store(landing, std::memory_order_relaxed);
    slot_->running.store(id_, std::memory_order_seq_cst);
  }
  void leave() {
    slot_->running.store(0, std::memory_order_seq_cst);
    slot_->landing.store(nullptr, std::memory_order_relaxed);
    slot_->outside_since.store(0, std::memory_order_relaxed);
    // A timer still set would signal the thread outside kernel code, where the program's own
    // handler may be back by then. (Only this thread's handler sets it, while it runs kernel
    // code: not after the store above.)
    if (slot_->armed.load(std::memory_order_relaxed)) {
      slot_->armed.store(false, std::memory_order_relaxed);
      const struct itimerspec off = {};
      timer_settime(slot_->timer.load(std::memory_order_relaxed), 0, &off, nullptr);
    }
  }

 private:
  // A timer that sends this thread a SIGINT kjit marks as its own (without one, a thread found
  // outside its kernel's code when signalled runs on).
  void make_timer() {
    if (!interrupts_watched) return;
    sigevent event = {};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = SIGINT;
    event.sigev_value.sival_int = kSentOn;
    event._sigev_un._tid = id_;  // glibc's name for sigev_notify_thread_id
    timer_t timer = {};
    if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) return;
    slot_->timer.store(timer, std::memory_order_relaxed);
    slot_->has_timer.store(true, std::memory_order_release);
  }

  pid_t id_ = thread_id();
  uint64_t forks_seen_ = forks.load(std::memory_order_relaxed);
  ThreadSlot* const slot_;
};

}  // namespace

namespace detail {

int run_trapping(void (*call)(const void*), const void* context, uint64_t since,
                 const CodeRange& code) {
  install_handlers();
  thread_local AlternateStack alternate_stack;
  thread_local ListedThread listed;
  // Unwatched again however call() ends, an exception or a trap too: a later trap must not land
  // here. (No object with a destructor lives in this frame, which the jump comes back to.)
  sigjmp_buf landing;
  if (const int signal = sigsetjmp(landing, 0); signal != 0) {
    listed.leave();
    return signal;
  }
  listed.enter(since, code, &landing);
  if (interrupts.load(std::memory_order_seq_cst) != since) {
    listed.leave();
    return SIGINT;
  }
  try {
    call(context);
  } catch (...) {
    listed.leave();
    throw;
  }
  listed.leave();
  return 0;
}

}  // namespace detail

uint64_t interrupt_count() {
  install_handlers();
  return interrupts.load(std::memory_order_seq_cst);
}

}  // namespace kjit::cpu
