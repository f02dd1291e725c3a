// kjit's exceptions as Python exceptions.
#pragma once

#include <nanobind/nanobind.h>

#include <exception>
#include <type_traits>

namespace kjit::python {

/// Registers the translation of kjit's exceptions with nanobind (and library warnings as
/// Python warnings).
void init_errors(nanobind::module_& m);

/// Issues, as Python warnings, the library warnings that threads without the GIL left: called
/// with the GIL held, after library code that ran without it. When a warning filter turns one
/// into an error, throws nanobind::python_error if |raise|, else drops it (a call that failed
/// reports its own error).
void flush_warnings(bool raise = true);

/// Releases the GIL for its lifetime. Taking it back while the interpreter finalizes would end
/// the thread (a daemon thread's fate) by unwinding through this destructor, which cannot be
/// unwound: the process would abort. Such a thread waits for the process to end instead.
class GilReleased {
 public:
  GilReleased() : state_(PyEval_SaveThread()) {}
  ~GilReleased();
  GilReleased(const GilReleased&) = delete;
  GilReleased& operator=(const GilReleased&) = delete;

 private:
  PyThreadState* state_;
};

/// Runs |work| (library code) without the GIL and returns what it returns, then issues the
/// warnings it left (flush_warnings); when it throws, issues them without raising and rethrows.
template <class Work>
auto run_without_gil(Work&& work) {
  auto released = [&] {
    GilReleased release;
    return work();
  };
  try {
    if constexpr (std::is_void_v<decltype(released())>) {
      released();
      flush_warnings();
    } else {
      auto result = released();
      flush_warnings();
      return result;
    }
  } catch (...) {
    flush_warnings(/*raise=*/false);  // none left if flushing itself raised
    throw;
  }
}

/// Sets the Python error for |error|, as nanobind's translation would: for code that Python
/// calls directly rather than through nanobind's dispatch.
void set_python_error(const std::exception_ptr& error) noexcept;

}  // namespace kjit::python
