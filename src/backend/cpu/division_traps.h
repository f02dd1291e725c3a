// Integer division traps in kernel code on the CPU. A division by zero, or of the lowest value of
// a signed type by -1, gives an unspecified value on a GPU; the CPU's divide instruction raises
// SIGFPE instead, which would end the whole process.
#pragma once

namespace kjit::cpu {

namespace detail {
/// Runs call(context) under the watch.
bool run_trapping_divisions(void (*call)(const void*), const void* context);
}  // namespace detail

/// Runs fn(); false when an integer division in it trapped, which ends fn() there. Only fn()'s
/// own thread is watched; other SIGFPEs go to the handler that was there before.
template <class F>
bool run_trapping_divisions(const F& fn) {
  return detail::run_trapping_divisions([](const void* f) { (*static_cast<const F*>(f))(); }, &fn);
}

}  // namespace kjit::cpu
