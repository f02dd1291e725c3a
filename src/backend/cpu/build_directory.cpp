#include "backend/cpu/build_directory.h"

#include <kjit/errors.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cache/disk_cache.h"
#include "support/warning.h"

namespace kjit::cpu {
namespace {

struct Place {
  std::string kind;  // how messages name it, before its path: "TMPDIR", "the kernel cache"
  std::string path;
  std::string label() const { return (kind.empty() ? "" : kind + " ") + "'" + path + "'"; }
};

// Where build directories may go, in order. The cache directory, the user's own, is the last
// resort where every temporary directory is unwritable or mounted noexec.
std::vector<Place> places() {
  std::vector<Place> found;
  if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp) found.push_back({"TMPDIR", tmp});
  for (const char* dir : {"/tmp", "/var/tmp"}) {
    if (found.empty() || found.front().path != dir) found.push_back({"", dir});
  }
  if (cache::DiskCache& disk = cache::DiskCache::instance(); disk.enabled()) {
    found.push_back({"the kernel cache directory", disk.directory()});
  }
  return found;
}

// Writes |contents| to the new file |path|; the reason it could not, or "".
std::string write_new_file(const std::string& path, std::string_view contents) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot create " + path + ": " + std::strerror(errno);
  const char* data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;
      ::close(fd);
      return "cannot write " + path + ": " + std::strerror(error);
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return "cannot write " + path + ": " + std::strerror(errno);
  return {};
}

// A fresh directory under |place| holding the file; the reason it could not be made, or "".
std::string try_place(const Place& place, const std::string& file_name, std::string_view contents,
                      std::string& made) {
  std::string dir = place.path + "/kjit-build-XXXXXX";
  if (!mkdtemp(dir.data())) return std::strerror(errno);
  struct statvfs fs = {};
  if (statvfs(dir.c_str(), &fs) == 0 && (fs.f_flag & ST_NOEXEC)) {
    ::rmdir(dir.c_str());
    return "it is mounted noexec, and kernels are loaded from there";
  }
  if (std::string why = write_new_file(dir + "/" + file_name, contents); !why.empty()) {
    remove_build_directory(dir.c_str());
    return why;
  }
  made = std::move(dir);
  return {};
}

}  // namespace

BuildDirectory::BuildDirectory(const std::string& file_name, std::string_view contents) {
  std::string passed_over;
  for (const Place& place : places()) {
    const std::string why = try_place(place, file_name, contents, path_);
    if (why.empty()) break;
    passed_over += (passed_over.empty() ? "" : "; ") + place.label() + ": " + why;
  }
  if (path_.empty()) {
    throw CompileError("cannot make a build directory for the CPU backend (" + passed_over +
                           "); set TMPDIR to a writable directory on a file system that allows "
                           "executables",
                       passed_over, "");
  }
  static std::atomic<bool> warned{false};
  if (!passed_over.empty() && !warned.exchange(true)) {
    warn("kernels for the CPU are built in '" + path_.substr(0, path_.rfind('/')) +
         "' instead of " + passed_over);
  }
}

BuildDirectory::~BuildDirectory() {
  if (!kept_) remove_build_directory(path_.c_str());
}

void remove_build_directory(const char* path) noexcept {
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    // Read again from the start after each removal pass: entries removed while reading may
    // move the others.
    for (bool removed = true; removed && lseek(fd, 0, SEEK_SET) == 0;) {
      removed = false;
      alignas(dirent64) char entries[4096];
      for (long n; (n = syscall(SYS_getdents64, fd, entries, sizeof entries)) > 0;) {
        for (long at = 0; at < n;) {
          const auto* entry = reinterpret_cast<const dirent64*>(entries + at);
          at += entry->d_reclen;
          const char* name = entry->d_name;
          if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
          if (unlinkat(fd, name, 0) == 0 || unlinkat(fd, name, AT_REMOVEDIR) == 0) removed = true;
        }
      }
    }
    ::close(fd);
  }
  ::rmdir(path);
}

}  // namespace kjit::cpu
