#include "backend/cpu/kernel_traps.h"

#include <csetjmp>
#include <csignal>
#include <iterator>
#include <mutex>

namespace kjit::cpu {
namespace {

constexpr int kWatched[] = {SIGFPE, SIGILL, SIGTRAP};

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
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    for (size_t k = 0; k < std::size(kWatched); ++k) {
      sigaction(kWatched[k], &action, &handlers_before[k]);
    }
  });
}

}  // namespace

namespace detail {

int run_trapping(void (*call)(const void*), const void* context) {
  install_handlers();
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
