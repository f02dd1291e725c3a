#include "backend/cpu/kernel_traps.h"

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
struct sigaction handlers_before[std::size(kWatched)];

void on_trap(int signal, siginfo_t* info, void* context) {
  if (sigjmp_buf* landing = trap_landing) {
    trap_landing = nullptr;
    siglongjmp(*landing, signal);
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
      std::signal(signal, SIG_DFL);
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

// Gives this thread an alternate signal stack unless it has one (Python's faulthandler gives the
// threads it watches theirs). Kept for the thread's life.
void ensure_alternate_stack() {
  thread_local bool ready = false;
  if (ready) return;
  ready = true;
  stack_t current = {};
  if (sigaltstack(nullptr, &current) != 0 || !(current.ss_flags & SS_DISABLE)) return;
  constexpr size_t kSize = 256 * 1024;
  thread_local std::unique_ptr<char[]> memory(new char[kSize]);
  stack_t ours = {};
  ours.ss_sp = memory.get();
  ours.ss_size = kSize;
  sigaltstack(&ours, nullptr);
}

}  // namespace

namespace detail {

int run_trapping(void (*call)(const void*), const void* context) {
  install_handlers();
  ensure_alternate_stack();
  sigjmp_buf landing;
  if (const int signal = sigsetjmp(landing, 0); signal != 0) return signal;
  // Unwatched again however call() ends, an exception too: a later trap must not land here.
  // (No object with a destructor lives in this frame, which the jump back leaves.)
  trap_landing = &landing;
  try {
    call(context);
  } catch (...) {
    trap_landing = nullptr;
    throw;
  }
  trap_landing = nullptr;
  return 0;
}

}  // namespace detail
}  // namespace kjit::cpu
