// kjit's exceptions as Python exceptions.
#pragma once

#include <nanobind/nanobind.h>

#include <exception>

namespace kjit::python {

/// Registers the translation of kjit's exceptions with nanobind (and library warnings as
/// Python warnings).
void init_errors(nanobind::module_& m);

/// Issues, as Python warnings, the library warnings that threads without the GIL left: called
/// with the GIL held, after library code that ran without it. When a warning filter turns one
/// into an error, throws nanobind::python_error if |raise|, else drops it (a call that failed
/// reports its own error).
void flush_warnings(bool raise = true);

/// Sets the Python error for |error|, as nanobind's translation would: for code that Python
/// calls directly rather than through nanobind's dispatch.
void set_python_error(const std::exception_ptr& error) noexcept;

}  // namespace kjit::python
