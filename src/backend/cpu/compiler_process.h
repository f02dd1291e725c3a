// The host compiler's process, which ends with the call that started it: on return, on Ctrl-C,
// at a time limit, and with the process that started it, however that ends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kjit::cpu {

struct CompilerLimits {
  double seconds = 0;          // 0: none
  uint64_t address_space = 0;  // bytes of each of the compiler's processes (RLIMIT_AS); 0: none
};

struct CompilerRun {
  enum class End { Exited, Signalled, TimedOut, Interrupted };
  End end = End::Exited;
  int code = 0;        // the exit status, or the signal that ended it
  std::string output;  // standard output and error, the first MiB
};

/// Runs |argv| (argv[0] a path) with |environment| and standard input from /dev/null, in a
/// process group of its own, under |limits|, and removes |build_dir| should this process end
/// first. A supervisor process stays with it: when this process ends (SIGKILL too), it kills
/// the compiler's whole group (cc1plus and the assembler with the driver) and removes
/// |build_dir|. A SIGINT that kjit sees (kernel_traps.h) while it runs, or the time limit, stops
/// it there. Throws CompileError when it cannot be started.
CompilerRun run_compiler(const std::vector<std::string>& argv,
                         const std::vector<std::string>& environment, const CompilerLimits& limits,
                         const std::string& build_dir);

}  // namespace kjit::cpu
