// The private directories a CPU compile writes its files in, and a load the shared object that
// dlopen maps: on a file system that allows executables, in the first place that can hold them.
#pragma once

#include <string>
#include <string_view>

namespace kjit::cpu {

/// A fresh directory, private to the user, holding |file_name| with |contents|, in the first of
/// $TMPDIR, /tmp, /var/tmp and the kernel cache directory where it can be made, written and
/// mapped executable (a noexec mount cannot load kernels). Removed with what is in it when
/// destroyed, unless kept. A place passed over is named in a warning, once per process. Throws
/// kjit::CompileError naming each place tried and why it could not be used.
class BuildDirectory {
 public:
  BuildDirectory(const std::string& file_name, std::string_view contents);
  ~BuildDirectory();
  BuildDirectory(const BuildDirectory&) = delete;
  BuildDirectory& operator=(const BuildDirectory&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  /// Leaves the directory in place when destroyed (KJIT_KEEP_BUILD=1).
  void keep() { kept_ = true; }

 private:
  std::string path_;
  bool kept_ = false;
};

/// Removes the directory |path| and the files and empty folders in it. Async-signal-safe: a
/// compile's supervisor calls it after its process is gone.
void remove_build_directory(const char* path) noexcept;

}  // namespace kjit::cpu
