// The host C++ compiler that turns a generated translation unit into a shared object. It runs
// as a subprocess; nothing else in kjit starts processes.
#pragma once

#include <kjit/kernel.h>

#include <string>
#include <vector>

#include "codegen/kernel_spec.h"

namespace kjit::cpu {

/// The -march= value kernels are compiled for: KJIT_CPU_ARCH, else (unset or empty) "native".
/// Read once.
const std::string& cpu_arch();

/// The compiler's options, but for the files, for a kernel in |mode| compiled for -march=|arch|.
std::vector<std::string> compiler_flags(MathMode mode, const std::string& arch);

/// What identifies the compiler and target in cache keys: the compiler's resolved path, size
/// and modification time, the flags (with cpu_arch()), and with -march=native this CPU's model
/// and features. Computed without running the compiler.
const std::string& compiler_identity(MathMode mode);

/// The compiler kjit would run (KJIT_CXX, else CXX, else the one kjit was built with, else c++),
/// resolved on PATH; |found| is false when it does not exist.
struct HostCompiler {
  std::string path;
  bool found = false;
};
HostCompiler host_compiler();

/// Compiles |source| to a shared object and returns its bytes, in a build directory
/// (build_directory.h) with the compiler under kjit's limits (compiler_process.h): at most
/// KJIT_COMPILE_TIMEOUT seconds and KJIT_COMPILE_MEMORY bytes of address space. Throws
/// kjit::CompileError with the diagnostics mapped to the user's source/header lines, or saying
/// which limit stopped it, or that the disk was full; kjit::Interrupted when a SIGINT did.
std::string compile_shared_object(const std::string& source, const KernelSpec& spec, MathMode mode);

}  // namespace kjit::cpu
