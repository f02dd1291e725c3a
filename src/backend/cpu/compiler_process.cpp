#include "backend/cpu/compiler_process.h"

#include <kjit/errors.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include "backend/cpu/build_directory.h"
#include "backend/cpu/kernel_traps.h"

namespace kjit::cpu {
namespace {

// What the supervisor and the compiler tell this process, each in one write (atomic on a pipe).
struct Report {
  enum Kind : int { NotStarted = 1, Ended = 2 };
  Kind kind;
  int value;  // errno for NotStarted; the compiler's wait status for Ended
};

// Where the supervisor and the compiler find their report pipe.
constexpr int kReportFd = 3;
// How often the wait for the compiler looks for a Ctrl-C and the time limit.
constexpr int kPollMs = 20;
constexpr size_t kMostOutput = 1 << 20;

// All the supervisor and the compiler use, made before the fork: a child of a process with
// threads may only make async-signal-safe calls (no allocation) until it runs a program.
struct Launch {
  std::vector<char*> argv, envp;
  const char* build_dir = nullptr;
  uint64_t address_space = 0;
  pid_t parent = 0;
  int output_fd = -1, report_fd = -1, null_fd = -1;
};

void report(Report::Kind kind, int value) {
  const Report r{kind, value};
  (void)!::write(kReportFd, &r, sizeof r);
}

// In the compiler's process, a vfork child of the supervisor: its own process group, killed
// when the supervisor ends, the address-space limit, the default signal dispositions and an
// empty mask (the supervisor blocks everything), then the compiler.
[[noreturn]] void exec_compiler(const Launch& launch) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  struct rlimit limit = {};
  if (launch.address_space && getrlimit(RLIMIT_AS, &limit) == 0 &&
      (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > launch.address_space)) {
    limit.rlim_cur = launch.address_space;
    setrlimit(RLIMIT_AS, &limit);
  }
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) sigaction(s, &default_action, nullptr);  // some refuse: fine
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(launch.argv[0], launch.argv.data(), launch.envp.data());
  report(Report::NotStarted, errno);
  _exit(127);
}

// Closes every descriptor from |first| on.
void close_from(int first) {
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
  struct rlimit files = {};
  const rlim_t end = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
                         ? files.rlim_cur
                         : 1 << 16;
  for (rlim_t fd = static_cast<rlim_t>(first); fd < end; ++fd) ::close(static_cast<int>(fd));
}

// In the supervisor, a child of this process with every signal blocked: starts the compiler,
// then waits for it to end (and reports how), or for SIGTERM, which comes when this process
// ends (PR_SET_PDEATHSIG) or stops the compile: it then kills the compiler's group and removes
// the build directory.
[[noreturn]] void supervise(const Launch& launch) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != launch.parent) {  // ended already, before the line above
    remove_build_directory(launch.build_dir);
    _exit(1);
  }
  // Only the compiler's descriptors stay open: another thread's compile's pipes, inherited
  // here, would keep its compile from seeing the end of its output.
  const int output = fcntl(launch.output_fd, F_DUPFD, 10);
  const int reports = fcntl(launch.report_fd, F_DUPFD, 10);
  const int null = fcntl(launch.null_fd, F_DUPFD, 10);
  dup2(null, 0);
  dup2(output, 1);
  dup2(output, 2);
  dup2(reports, kReportFd);
  fcntl(kReportFd, F_SETFD, FD_CLOEXEC);
  close_from(kReportFd + 1);
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &default_action, nullptr);  // an ignored SIGCHLD would reap the compiler
  const pid_t compiler = vfork();
  if (compiler == 0) exec_compiler(launch);
  if (compiler < 0) {
    report(Report::NotStarted, errno);
    _exit(127);
  }
  sigset_t wake;
  sigemptyset(&wake);
  sigaddset(&wake, SIGCHLD);
  sigaddset(&wake, SIGTERM);
  for (;;) {
    const int signal = sigwaitinfo(&wake, nullptr);
    int status = 0;
    if (signal == SIGTERM) {
      kill(-compiler, SIGKILL);
      waitpid(compiler, &status, 0);
      remove_build_directory(launch.build_dir);
      _exit(1);
    }
    if (signal == SIGCHLD && waitpid(compiler, &status, WNOHANG) == compiler) {
      kill(-compiler, SIGKILL);  // anything the driver left running
      report(Report::Ended, status);
      _exit(0);
    }
  }
}

// fork() without the process's fork handlers, which the supervisor has no use for (and which
// may take locks): it runs no code of theirs.
pid_t fork_plain() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  return _Fork();
#else
  return fork();
#endif
}

[[noreturn]] void cannot_start(const std::string& what, int error) {
  throw CompileError("cannot start the C++ compiler: " + what + ": " + std::strerror(error), "",
                     "");
}

std::vector<char*> pointers_to(const std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (const std::string& s : strings) p.push_back(const_cast<char*>(s.c_str()));
  p.push_back(nullptr);
  return p;
}

void append_output(std::string& output, const char* data, size_t n) {
  if (output.size() < kMostOutput) output.append(data, std::min(n, kMostOutput - output.size()));
}

}  // namespace

CompilerRun run_compiler(const std::vector<std::string>& argv,
                         const std::vector<std::string>& environment, const CompilerLimits& limits,
                         const std::string& build_dir) {
  Launch launch;
  launch.argv = pointers_to(argv);
  launch.envp = pointers_to(environment);
  launch.build_dir = build_dir.c_str();
  launch.address_space = limits.address_space;
  launch.parent = getpid();
  int output[2], reports[2];
  if (pipe2(output, O_CLOEXEC) != 0) cannot_start("pipe", errno);
  if (pipe2(reports, O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(output[0]);
    ::close(output[1]);
    cannot_start("pipe", error);
  }
  launch.output_fd = output[1];
  launch.report_fd = reports[1];
  launch.null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const uint64_t interrupts = interrupt_count();  // a SIGINT from here on stops the compile
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(limits.seconds > 0 ? limits.seconds : 0);
  // No handler of this process may run in the supervisor before it blocks signals itself.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  const pid_t supervisor = launch.null_fd >= 0 ? fork_plain() : -1;
  if (supervisor == 0) supervise(launch);
  const int fork_error = errno;
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ::close(output[1]);
  ::close(reports[1]);
  if (launch.null_fd >= 0) ::close(launch.null_fd);
  if (supervisor < 0) {
    ::close(output[0]);
    ::close(reports[0]);
    cannot_start(launch.null_fd >= 0 ? "fork" : "/dev/null", fork_error);
  }

  CompilerRun run;
  bool stopped = false, reaped = false;
  int supervisor_status = 0;
  char buf[4096];
  for (bool reading = true; reading;) {
    pollfd ready = {output[0], POLLIN, 0};
    if (poll(&ready, 1, kPollMs) > 0) {
      const ssize_t n = ::read(output[0], buf, sizeof buf);
      if (n > 0) append_output(run.output, buf, static_cast<size_t>(n));
      // The end of the output: the compiler and the supervisor are gone, or about to be.
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
    }
    if (interrupt_count() != interrupts) {
      run.end = CompilerRun::End::Interrupted;
      stopped = true;
    } else if (limits.seconds > 0 && std::chrono::steady_clock::now() >= deadline) {
      run.end = CompilerRun::End::TimedOut;
      stopped = true;
    } else if (waitpid(supervisor, &supervisor_status, WNOHANG) == supervisor) {
      // Ended while something outside the compiler's group holds the output open: take what
      // is there.
      reaped = true;
      fcntl(output[0], F_SETFL, O_NONBLOCK);
      for (ssize_t n; (n = ::read(output[0], buf, sizeof buf)) > 0;) {
        append_output(run.output, buf, static_cast<size_t>(n));
      }
    }
    reading = !stopped && !reaped;
  }
  if (stopped) kill(supervisor, SIGTERM);
  if (!reaped) {
    while (waitpid(supervisor, &supervisor_status, 0) < 0 && errno == EINTR) {
    }
  }
  ::close(output[0]);
  fcntl(reports[0], F_SETFL, O_NONBLOCK);
  Report r = {};
  int not_started = 0;
  bool ended = false;
  while (::read(reports[0], &r, sizeof r) == static_cast<ssize_t>(sizeof r)) {
    if (r.kind == Report::NotStarted) not_started = r.value;
    if (r.kind == Report::Ended) {
      ended = true;
      run.code = r.value;
    }
  }
  ::close(reports[0]);
  if (stopped) return run;
  if (not_started) {
    throw CompileError("cannot run the C++ compiler '" + argv[0] + "': " +
                           std::strerror(not_started) + " (set KJIT_CXX to a working compiler)",
                       "", "");
  }
  if (!ended) {  // the supervisor itself was killed (by the OOM killer, say)
    run.end = CompilerRun::End::Signalled;
    run.code = WIFSIGNALED(supervisor_status) ? WTERMSIG(supervisor_status) : SIGKILL;
  } else if (WIFSIGNALED(run.code)) {
    run.end = CompilerRun::End::Signalled;
    run.code = WTERMSIG(run.code);
  } else {
    run.end = CompilerRun::End::Exited;
    run.code = WEXITSTATUS(run.code);
  }
  return run;
}

}  // namespace kjit::cpu
