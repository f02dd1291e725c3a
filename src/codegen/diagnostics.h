// Compiler diagnostics mapped back to the user's text. Generated sources mark the user's header
// and body with #line directives naming "<header>" and "<source>"; this turns the compilers'
// lines about those files into "source line N: <message>" followed by the user's line N.
#pragma once

#include <string>

#include "codegen/kernel_spec.h"

namespace kjit::codegen {

struct MappedDiagnostics {
  std::string text;  // one entry per error, quoting the user's line
  int count = 0;     // how many diagnostics were mapped
};

/// Understands GCC/Clang ("<source>:3:5: error: ...") and NVRTC ("<source>(3): error: ...").
MappedDiagnostics map_diagnostics(const std::string& log, const KernelSpec& spec);

/// Throws when KJIT_ASSERT_NO_COMPILE=1 (tests use it to prove that a kernel came from a cache):
/// every compiler calls it before it starts.
void assert_may_compile(const KernelSpec& spec);

/// The CompileError for a failed build: the mapped errors when there are any, else the log.
[[noreturn]] void throw_compile_error(const KernelSpec& spec, const char* target,
                                      const std::string& log, const std::string& source);

}  // namespace kjit::codegen
