#include "backend/cpu/kernel_traps.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <iterator>
#include <memory>
#include <mutex>

namespace kjit::cpu {
namespace {

constexpr int kWatched[] = {SIGFPE, SIGILL, SIGTRAP, SIGSEGV, SIGBUS};

// Where a trap in this thread's kernel code jumps to; null outside kernel code.
thread_local sigjmp_buf* trap_landing = nullptr;
// How many threads run kernel code now. The handler reads the thread-local above only while
// some do: on a thread that never ran a kernel, reading it first would call malloc, and a crash
// inside malloc would then deadlock rather than end.
std::atomic<int> kernel_threads{0};
struct sigaction handlers_before[std::size(kWatched)];

// SIGINT stops the kernels running on the CPU, where a program has a handler for it (Python's
// raises KeyboardInterrupt): the thread it reaches sends it on to each thread in kernel code,
// listed here by id (0: a free slot), whose handler leaves the kernel as a trap's does.
constexpr size_t kMostKernelThreads = 1024;
std::atomic<pid_t> kernel_thread_ids[kMostKernelThreads];
// Set while kernels run when SIGINT came; a thread entering kernel code then leaves at once.
// Cleared by the next launch.
std::atomic<bool> interrupt_pending{false};
struct sigaction interrupt_before;

pid_t thread_id() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void on_interrupt(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;  // the code interrupted may be about to read it
  // Sent on by another thread of this process (below), not by the program's user.
  const bool passed_on = info->si_code == SI_TKILL && info->si_pid == getpid();
  const bool kernels = kernel_threads.load(std::memory_order_acquire) > 0;
  // Pending first: a thread listed but not yet in its kernel when the signal reaches it sees
  // this as it enters.
  if (kernels && !passed_on) interrupt_pending.store(true, std::memory_order_release);
  const pid_t self = thread_id();
  bool listed = false;  // only a listed thread has its trap landing set up (reading it may not)
  for (std::atomic<pid_t>& slot : kernel_thread_ids) {
    const pid_t id = kernels ? slot.load(std::memory_order_acquire) : 0;
    if (id != 0 && id == self) {
      listed = true;
    } else if (id != 0 && !passed_on) {
      syscall(SYS_tgkill, getpid(), id, SIGINT);
    }
  }
  if (!passed_on) {
    // The program's own handler (Python's notes the signal, to raise KeyboardInterrupt).
    if (interrupt_before.sa_flags & SA_SIGINFO) {
      interrupt_before.sa_sigaction(signal, info, context);
    } else {
      interrupt_before.sa_handler(signal);
    }
  }
  if (listed) {
    if (sigjmp_buf* landing = trap_landing) {
      trap_landing = nullptr;
      siglongjmp(*landing, signal);
    }
  }
  errno = saved_errno;
}

void on_trap(int signal, siginfo_t* info, void* context) {
  if (kernel_threads.load(std::memory_order_acquire) > 0) {
    if (sigjmp_buf* landing = trap_landing) {
      trap_landing = nullptr;
      siglongjmp(*landing, signal);
    }
  }
  // Not kernel code: what happened before kjit was here.
  for (size_t k = 0; k < std::size(kWatched); ++k) {
    if (kWatched[k] != signal) continue;
    const struct sigaction& before = handlers_before[k];
    if (before.sa_flags & SA_SIGINFO) {
      before.sa_sigaction(signal, info, context);
    } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
      before.sa_handler(signal);
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
    // SIGINT only where the program handles it: its default ends the process, as before, and a
    // program that ignores it keeps ignoring it. The program's flags are kept (Python's leave
    // out SA_RESTART, so that a blocking call returns to run its handler).
    struct sigaction current = {};
    if (sigaction(SIGINT, nullptr, &current) != 0 || current.sa_handler == SIG_DFL ||
        current.sa_handler == SIG_IGN) {
      return;
    }
    interrupt_before = current;
    struct sigaction interrupt = current;
    interrupt.sa_sigaction = on_interrupt;
    interrupt.sa_flags = (current.sa_flags & ~SA_RESETHAND) | SA_SIGINFO | SA_NODEFER;
    sigaction(SIGINT, &interrupt, nullptr);
  });
}

// This thread's place in kernel_thread_ids while it runs kernel code (none if all are taken:
// SIGINT then stops the other threads, and this one at its next launch).
class ListedThread {
 public:
  ListedThread() {
    for (std::atomic<pid_t>& slot : kernel_thread_ids) {
      pid_t free = 0;
      if (slot.compare_exchange_strong(free, thread_id(), std::memory_order_acq_rel)) {
        slot_ = &slot;
        return;
      }
    }
  }
  ~ListedThread() {
    if (slot_) slot_->store(0, std::memory_order_release);
  }
  ListedThread(const ListedThread&) = delete;
  ListedThread& operator=(const ListedThread&) = delete;

 private:
  std::atomic<pid_t>* slot_ = nullptr;
};

// A thread's alternate signal stack, given unless it has one (Python's faulthandler gives the
// threads it watches theirs), and withdrawn before its memory is freed when the thread ends.
class AlternateStack {
 public:
  AlternateStack() {
    stack_t current = {};
    if (sigaltstack(nullptr, &current) != 0 || !(current.ss_flags & SS_DISABLE)) return;
    memory_ = std::make_unique<char[]>(kSize);
    stack_t ours = {};
    ours.ss_sp = memory_.get();
    ours.ss_size = kSize;
    if (sigaltstack(&ours, nullptr) != 0) memory_.reset();
  }
  ~AlternateStack() {
    stack_t current = {};
    // Still ours (faulthandler, enabled later, may have put its own in its place).
    if (!memory_ || sigaltstack(nullptr, &current) != 0 || current.ss_sp != memory_.get()) return;
    stack_t off = {};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
  }
  AlternateStack(const AlternateStack&) = delete;
  AlternateStack& operator=(const AlternateStack&) = delete;

 private:
  static constexpr size_t kSize = 256 * 1024;
  std::unique_ptr<char[]> memory_;
};

}  // namespace

namespace detail {

int run_trapping(void (*call)(const void*), const void* context) {
  install_handlers();
  thread_local AlternateStack alternate_stack;
  const ListedThread listed;  // before the landing: the jump back does not leave this frame
  // Unwatched again however call() ends, an exception or a trap too: a later trap must not land
  // here.
  auto leave = [] {
    trap_landing = nullptr;
    kernel_threads.fetch_sub(1, std::memory_order_release);
  };
  sigjmp_buf landing;
  if (const int signal = sigsetjmp(landing, 0); signal != 0) {
    leave();
    return signal;
  }
  kernel_threads.fetch_add(1, std::memory_order_acq_rel);
  trap_landing = &landing;
  if (interrupt_pending.load(std::memory_order_acquire)) {
    leave();
    return SIGINT;
  }
  try {
    call(context);
  } catch (...) {
    leave();
    throw;
  }
  leave();
  return 0;
}

}  // namespace detail

void clear_interrupt() { interrupt_pending.store(false, std::memory_order_release); }

}  // namespace kjit::cpu
