#include "backend/cpu/host_compiler.h"

#include <kjit/errors.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "backend/cpu/build_directory.h"
#include "cache/hash.h"
#include "codegen/diagnostics.h"

extern char** environ;

namespace kjit::cpu {
namespace {

struct Compiler {
  // As found on PATH, or the name as given when it cannot be found. It is run by this name:
  // clang++ is a link to clang, which run as "clang" would not link the C++ runtime.
  std::string path;
  std::string identity;  // the file it leads to, its size and mtime
  bool found = false;
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

std::vector<std::string> flags(MathMode mode) {
  // Kernels written for GPUs reinterpret memory through pointer casts (an int* over a float);
  // without strict aliasing such a read sees the last store, as it does on the GPU. A frame
  // larger than the stack (a big local array) touches the stack's guard page, which traps
  // (kernel_traps.h), rather than memory beyond it.
  std::vector<std::string> f = {"-std=c++20",
                                "-O3",
                                "-march=native",
                                "-fPIC",
                                "-shared",
                                "-fno-math-errno",
                                "-fno-strict-aliasing",
                                "-fstack-clash-protection",
                                "-fvisibility=hidden",
                                "-w"};
  // Safe mode rounds every operation (no contraction into fused multiply-adds); Metal's relaxed
  // and fast modes allow contraction, reassociation and reciprocals, never -ffinite-math-only,
  // which would break isnan/isinf.
  if (mode == MathMode::Safe) f.push_back("-ffp-contract=off");
  if (mode != MathMode::Safe) {
    for (const char* x :
         {"-fno-signed-zeros", "-fno-trapping-math", "-freciprocal-math", "-ffp-contract=fast"}) {
      f.push_back(x);
    }
  }
  if (mode == MathMode::Fast) {
    f.push_back("-fassociative-math");
    f.push_back("-D__FAST_MATH__=1");
  }
  return f;
}

// Runs argv with |environment|, returning its wait status; stdout and stderr go to |output|.
int run(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
        std::string& output) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("kjit: pipe() failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (const std::string& e : environment) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    throw std::runtime_error("kjit: cannot run the C++ compiler '" + argv[0] +
                             "': " + std::strerror(rc) + " (set KJIT_CXX to a working compiler)");
  }
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    output.append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
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

// The reason a failed compile gives for itself beyond its diagnostics, or "": a full disk.
std::string failure_cause(const std::string& log, const std::string& build_dir) {
  for (const int error : {ENOSPC, EDQUOT, EFBIG}) {
    if (log.find(std::strerror(error)) != std::string::npos) {
      return "the compiler could not write its files in " + build_dir + ": " + std::strerror(error);
    }
  }
  return {};
}

}  // namespace

HostCompiler host_compiler() { return {compiler().path, compiler().found}; }

const std::string& compiler_identity(MathMode mode) {
  static std::once_flag once;
  static std::array<std::string, 3> ids;
  std::call_once(once, [] {
    std::string base = compiler().identity + "\ncpu " + cpu_identity() + "\nflags";
    for (int m = 0; m < 3; ++m) {
      ids[m] = base;
      for (const std::string& f : flags(static_cast<MathMode>(m))) ids[m] += " " + f;
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
  // kjit's own failures (no build directory, a full disk) name the kernel as its diagnostics do.
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
  for (const std::string& f : flags(mode)) argv.push_back(f);
  argv.insert(argv.end(), {src, "-o", obj});
  std::string log;
  const int status = run(argv, compiler_environment(dir->path()), log);
  const bool compiled = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::string shared_object = compiled ? read_file(obj) : std::string();
  // Ctrl-C reaches the compiler too (the terminal signals the whole process group).
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) {
    throw Interrupted("SIGINT (Ctrl-C) stopped the compile for the CPU");
  }
  if (!compiled || shared_object.empty()) {
    if (std::string why = failure_cause(log, dir->path()); !why.empty()) {
      fail(why + ":\n" + log.substr(0, 4000), log);
    }
    codegen::throw_compile_error(spec, "the CPU", log, source);
  }
  return shared_object;
}

}  // namespace kjit::cpu
