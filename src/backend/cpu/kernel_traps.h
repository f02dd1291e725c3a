// Traps in kernel code on the CPU, which would otherwise end the whole process: an integer
// division by zero, or of the lowest value of a signed type by -1 (SIGFPE; a GPU gives an
// unspecified value), a trap instruction, which a failed assert or __trap() executes (SIGILL or
// SIGTRAP; a GPU stops the kernel too), and an access to memory the process does not have, an
// index far out of bounds or the kernel's stack overflowing (SIGSEGV or SIGBUS; a GPU reports
// an illegal address). And SIGINT (Ctrl-C), where the program handles it, which stops every
// thread in kernel code (its handler, Python's, still runs): in the kernel's own machine code,
// not inside a library function it called (malloc, which a kernel's thread-locals and coroutine
// frames call too), where stopping could leave a lock held that the rest of the process then
// waits for. A thread found there is signalled again a moment later; a Ctrl-C that comes a while
// after it was found there stops it where it is.
#pragma once

#include <cstdint>

#include "backend/cpu/code_range.h"

namespace kjit::cpu {

namespace detail {
/// Runs call(context) under the watch.
int run_trapping(void (*call)(const void*), const void* context, uint64_t since,
                 const CodeRange& code);
}  // namespace detail

/// How many SIGINTs have come from outside kjit since kjit began to watch for them (at the first
/// call of this or of run_trapping): a launch or a compile notes it as it starts.
uint64_t interrupt_count();

/// Runs fn(), which runs the kernel whose machine code is |code|; 0, or the signal of a trap in
/// it, which ends fn() there, or SIGINT when one came after interrupt_count() was |since| (at
/// once, if it came before fn() began). Only fn()'s own thread is watched; other threads'
/// signals go to the handlers that were there before.
template <class F>
int run_trapping(const F& fn, uint64_t since, const CodeRange& code) {
  return detail::run_trapping([](const void* f) { (*static_cast<const F*>(f))(); }, &fn, since,
                              code);
}

}  // namespace kjit::cpu
