#include "backend/cpu/kernel_traps.h"

#include <atomic>
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
  });
}

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
  // Unwatched again however call() ends, an exception or a trap too: a later trap must not land
  // here. (No object with a destructor lives in this frame, which the jump back leaves.)
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
}  // namespace kjit::cpu
