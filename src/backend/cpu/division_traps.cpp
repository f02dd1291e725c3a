#include "backend/cpu/division_traps.h"

#include <csetjmp>
#include <csignal>
#include <mutex>

namespace kjit::cpu {
namespace {

// Where a trap in this thread's kernel code jumps to; null outside kernel code.
thread_local sigjmp_buf* trap_landing = nullptr;
struct sigaction handler_before;

void on_fpe(int signal, siginfo_t* info, void* context) {
  if (sigjmp_buf* landing = trap_landing) {
    trap_landing = nullptr;
    siglongjmp(*landing, 1);
  }
  // Not kernel code: what happened before kjit was here.
  if (handler_before.sa_flags & SA_SIGINFO) {
    handler_before.sa_sigaction(signal, info, context);
  } else if (handler_before.sa_handler != SIG_DFL && handler_before.sa_handler != SIG_IGN) {
    handler_before.sa_handler(signal);
  } else {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
}

void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action = {};
    action.sa_sigaction = on_fpe;
    // SIGFPE stays unblocked in the handler, which leaves it by a jump that restores no mask.
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGFPE, &action, &handler_before);
  });
}

}  // namespace

namespace detail {

bool run_trapping_divisions(void (*call)(const void*), const void* context) {
  install_handler();
  sigjmp_buf landing;
  if (sigsetjmp(landing, 0) != 0) return false;
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
  return true;
}

}  // namespace detail
}  // namespace kjit::cpu
