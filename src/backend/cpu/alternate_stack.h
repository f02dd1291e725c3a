// A thread's alternate signal stack, on which the handlers of kernel traps run: a kernel that
// overflowed its own stack can be left too.
#pragma once

#include <csignal>
#include <cstddef>
#include <memory>

namespace kjit::cpu {

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

}  // namespace kjit::cpu
