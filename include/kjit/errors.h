// The exceptions kjit throws. Each says whose fault it is.
#pragma once

#include <new>
#include <stdexcept>
#include <string>

namespace kjit {

/// A bad argument value (Python: ValueError).
class ValueError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// An argument of the wrong type (Python: TypeError).
class TypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A kernel failed to compile. what() quotes the failing lines of the user's source/header.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& message, std::string log, std::string source)
      : std::runtime_error(message), log_(std::move(log)), source_(std::move(source)) {}
  /// The compiler's diagnostics with file names and lines mapped to the user's text.
  const std::string& log() const { return log_; }
  /// The complete generated translation unit that was compiled.
  const std::string& source() const { return source_; }

 private:
  std::string log_;
  std::string source_;
};

/// A launch failed in the driver or runtime, or its stream refused what the call needed (a
/// stream that captures a CUDA graph builds no kernel, lends no memory of kjit's pool and
/// copies nothing from or to the host).
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// SIGINT (Ctrl-C) stopped a kernel on the CPU, whose outputs are incomplete, or the compile of
/// one. (Python: the KeyboardInterrupt that the signal's handler raises.)
class Interrupted : public LaunchError {
 public:
  using LaunchError::LaunchError;
};

/// Memory for an array could not be had (Python: MemoryError); the message names the array.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

/// A broken internal invariant: a bug in kjit, never the user's fault.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace kjit
