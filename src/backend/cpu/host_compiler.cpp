#include "backend/cpu/host_compiler.h"

#include <kjit/errors.h>

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "backend/cpu/build_directory.h"
#include "backend/cpu/compiler_process.h"
#include "cache/hash.h"
#include "codegen/diagnostics.h"
#include "support/env_bytes.h"
#include "support/warning.h"

extern char** environ;

namespace kjit::cpu {
namespace {

struct Compiler {
  // As found on PATH, or the name as given when it cannot be found. It is run by this name:
  // clang++ is a link to clang, which run as "clang" would not link the C++ runtime.
  std::string path;
  std::string identity;  // the file it leads to, its size and mtime
  bool found = false;
  bool clang = false;  // that file is Clang's (GCC's options otherwise, which Clang accepts)
};

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path_env = std::getenv("PATH");
  std::stringstream dirs(path_env ? path_env : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

const Compiler& compiler() {
  static const Compiler c = [] {
    Compiler c;
    std::string name;
    for (const char* var : {"KJIT_CXX", "CXX"}) {
      if (const char* v = std::getenv(var); v && *v) {
        name = v;
        break;
      }
    }
    // A compiler the user names must exist; the build-time default may fall back to c++.
    const bool chosen = !name.empty();
    if (!chosen) name = KJIT_DEFAULT_CXX;
    std::string found = find_in_path(name);
    if (found.empty() && !chosen) found = find_in_path(name = "c++");
    char resolved[4096];
    struct stat st;
    if (!found.empty() && realpath(found.c_str(), resolved) && stat(resolved, &st) == 0) {
      c.path = found;
      c.found = true;
      c.clang = std::strstr(std::strrchr(resolved, '/'), "clang") != nullptr;
      c.identity = std::string(resolved) + " " + std::to_string(st.st_size) + " " +
                   std::to_string(st.st_mtime);
    } else {
      c.path = name;
      c.identity = "missing " + name;
    }
    return c;
  }();
  return c;
}

// The CPU's model and feature flags: -march=native code is only valid on a CPU like this one.
std::string cpu_identity() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(in, line) && (model.empty() || flags.empty())) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line;
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
  }
  return cache::hex64(cache::hash64(model + "\n" + flags));
}

}  // namespace

const std::string& cpu_arch() {
  static const std::string arch = [] {
    const char* v = std::getenv("KJIT_CPU_ARCH");
    return std::string(v && *v ? v : "native");
  }();
  return arch;
}

std::vector<std::string> compiler_flags(MathMode mode, const std::string& arch) {
  // Kernels written for GPUs reinterpret memory through pointer casts (an int* over a float);
  // without strict aliasing such a read sees the last store, as it does on the GPU. A frame
  // larger than the stack (a big local array) touches the stack's guard page, which traps
  // (kernel_traps.h), rather than memory beyond it. A kernel cannot observe floating-point
  // exception flags, so no mode needs trapping math; without it the compiler may compute both
  // sides of a select and convert floats to integers speculatively, which is what lets a loop
  // over exp's clamps and selects vectorise without AVX-512's masked operations.
  std::vector<std::string> f = {"-std=c++20",
                                "-O3",
                                "-march=" + arch,
                                "-fPIC",
                                "-shared",
                                "-fno-math-errno",
                                "-fno-trapping-math",
                                "-fno-strict-aliasing",
                                "-fstack-clash-protection",
                                "-fvisibility=hidden",
                                "-w"};
  // An error flood (a body that is not C++) stays short.
  f.push_back(compiler().clang ? "-ferror-limit=20" : "-fmax-errors=20");
  // Safe mode rounds every operation (no contraction into fused multiply-adds); Metal's relaxed
  // and fast modes allow contraction, reassociation and reciprocals, never -ffinite-math-only,
  // which would break isnan/isinf.
  if (mode == MathMode::Safe) f.push_back("-ffp-contract=off");
  if (mode != MathMode::Safe) {
    for (const char* x : {"-fno-signed-zeros", "-freciprocal-math", "-ffp-contract=fast"}) {
      f.push_back(x);
    }
  }
  if (mode == MathMode::Fast) {
    f.push_back("-fassociative-math");
    f.push_back("-D__FAST_MATH__=1");
  }
  return f;
}

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// KJIT_COMPILE_TIMEOUT: seconds, 0 for no limit; anything else is warned about once.
double compile_seconds() {
  static const double seconds = [] {
    constexpr double kDefault = 300;
    const char* text = std::getenv("KJIT_COMPILE_TIMEOUT");
    if (!text || !*text) return kDefault;
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text, &end);
    if (errno == 0 && end && *end == '\0' && std::isdigit(static_cast<unsigned char>(text[0])) &&
        std::isfinite(v)) {
      return v;
    }
    warn(std::string("KJIT_COMPILE_TIMEOUT='") + text +
         "' is not a number of seconds; using the default (300)");
    return kDefault;
  }();
  return seconds;
}

CompilerLimits compile_limits() {
  static const uint64_t address_space =
      bytes_from_env("KJIT_COMPILE_MEMORY", uint64_t{4} << 30);  // 0: no limit
  return {compile_seconds(), address_space};
}

// The process's environment, with the compiler's temporary files in |build_dir|, which is
// removed with them.
std::vector<std::string> compiler_environment(const std::string& build_dir) {
  std::vector<std::string> env = {"TMPDIR=" + build_dir};
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "TMPDIR=", 7) != 0) env.emplace_back(*e);
  }
  return env;
}

// The reason a failed compile gives for itself beyond its diagnostics, or "": a full disk, or
// the memory limit.
std::string failure_cause(const std::string& log, const std::string& build_dir,
                          uint64_t address_space) {
  for (const int error : {ENOSPC, EDQUOT, EFBIG}) {
    if (log.find(std::strerror(error)) != std::string::npos) {
      return "the compiler could not write its files in " + build_dir + ": " + std::strerror(error);
    }
  }
  if (address_space && (log.find("out of memory") != std::string::npos ||
                        log.find(std::strerror(ENOMEM)) != std::string::npos ||
                        log.find("bad_alloc") != std::string::npos)) {
    return "the compiler ran out of memory: kjit allows it " + std::to_string(address_space) +
           " bytes of address space (KJIT_COMPILE_MEMORY; 0 for no limit)";
  }
  return {};
}

// Whether the compiler's output says it refused the -march= value: GCC names the option, Clang
// the "target CPU". A kernel's own diagnostics name neither.
bool arch_refused(const std::string& log) {
  return cpu_arch() != "native" && (log.find("-march=") != std::string::npos ||
                                    log.find("unknown target CPU") != std::string::npos);
}

}  // namespace

HostCompiler host_compiler() { return {compiler().path, compiler().found}; }

const std::string& compiler_identity(MathMode mode) {
  static std::once_flag once;
  static std::array<std::string, 3> ids;
  std::call_once(once, [] {
    std::string base = compiler().identity;
    // Code for a named CPU is the same wherever it is compiled: its -march= flag identifies it,
    // and machines sharing a cache directory share it.
    if (cpu_arch() == "native") base += "\ncpu " + cpu_identity();
    base += "\nflags";
    for (int m = 0; m < 3; ++m) {
      ids[m] = base;
      for (const std::string& f : compiler_flags(static_cast<MathMode>(m), cpu_arch())) {
        ids[m] += " " + f;
      }
    }
  });
  return ids[static_cast<int>(mode)];
}

std::string compile_shared_object(const std::string& source, const KernelSpec& spec,
                                  MathMode mode) {
  codegen::assert_may_compile(spec);
  const Compiler& cxx = compiler();
  if (!cxx.found) {
    throw std::runtime_error("kjit: no C++ compiler found for the CPU backend (tried '" + cxx.path +
                             "'); set KJIT_CXX");
  }
  // kjit's own failures (no build directory, a time or memory limit, a full disk) name the
  // kernel as its diagnostics do.
  auto fail = [&](const std::string& why, const std::string& log) {
    throw CompileError(
        prefix(spec) + "kernel '" + spec.name + "' failed to compile for the CPU: " + why, log,
        source);
  };
  std::optional<BuildDirectory> dir;
  try {
    dir.emplace("kjit_kernel.cpp", source);
  } catch (const CompileError& e) {
    fail(e.what(), e.log());
  }
  if (const char* keep = std::getenv("KJIT_KEEP_BUILD"); keep && std::strcmp(keep, "1") == 0) {
    dir->keep();
  }
  const std::string src = dir->file("kjit_kernel.cpp"), obj = dir->file("kjit_kernel.so");
  std::vector<std::string> argv = {cxx.path};
  for (const std::string& f : compiler_flags(mode, cpu_arch())) argv.push_back(f);
  argv.insert(argv.end(), {src, "-o", obj});
  const CompilerLimits limits = compile_limits();
  CompilerRun run;
  try {
    run = run_compiler(argv, compiler_environment(dir->path()), limits, dir->path());
  } catch (const CompileError& e) {
    fail(e.what(), e.log());
  }
  if (run.end == CompilerRun::End::Interrupted) {
    throw Interrupted("SIGINT (Ctrl-C) stopped the compile for the CPU");
  }
  if (run.end == CompilerRun::End::TimedOut) {
    std::ostringstream seconds;
    seconds << limits.seconds;
    fail("the compiler was stopped after KJIT_COMPILE_TIMEOUT=" + seconds.str() +
             " seconds (set it higher, or to 0 for no limit, for a kernel that takes longer)",
         run.output);
  }
  if (run.end == CompilerRun::End::Signalled) {
    fail(std::string("the compiler was killed by signal ") + std::to_string(run.code) + " (" +
             strsignal(run.code) + ")" + (run.output.empty() ? "" : ":\n" + run.output),
         run.output);
  }
  std::string shared_object = run.code == 0 ? read_file(obj) : std::string();
  if (shared_object.empty()) {
    if (std::string why = failure_cause(run.output, dir->path(), limits.address_space);
        !why.empty()) {
      fail(why + ":\n" + run.output.substr(0, 4000), run.output);
    }
    if (arch_refused(run.output)) {
      fail("KJIT_CPU_ARCH='" + cpu_arch() + "' is not a CPU " + cxx.path + " knows as -march=" +
               cpu_arch() + " (unset it for this machine's CPU):\n" + run.output.substr(0, 4000),
           run.output);
    }
    codegen::throw_compile_error(spec, "the CPU", run.output, source);
  }
  return shared_object;
}

}  // namespace kjit::cpu
