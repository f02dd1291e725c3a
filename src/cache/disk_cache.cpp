#include "cache/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "cache/directory_trust.h"
#include "cache/hash.h"
#include "support/env_bytes.h"
#include "support/warning.h"

namespace kjit::cache {
namespace {

constexpr char kMagic[8] = {'K', 'J', 'I', 'T', 'C', 'A', 'C', '2'};  // format version 2
constexpr const char* kSuffix = ".kjit";
// No kernel's shared object or image comes near this; an entry claiming more is damaged.
constexpr uint64_t kMaxEntryBytes = uint64_t{1} << 30;

struct Header {
  char magic[8];
  uint64_t key_size;
  uint64_t payload_size;
  uint64_t payload_checksum;
};

std::string default_directory() {
  if (const char* d = std::getenv("KJIT_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kjit";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kjit";
  return {};
}

// mkdir -p; new directories are private to the user.
bool make_directories(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string part = path.substr(0, pos);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return true;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The payload of the entry open at |fd|, of |file_size| bytes, when it is whole, at most
// |max_entry_bytes| and stored under |key|.
std::optional<std::string> read_entry(int fd, uint64_t file_size, std::string_view key,
                                      uint64_t max_entry_bytes) {
  // The header's sizes are checked against the file and the cap before anything is allocated
  // for them: a damaged or sparse file may claim any size.
  Header h{};
  if (file_size < sizeof h + key.size() || file_size > max_entry_bytes ||
      !read_all(fd, reinterpret_cast<char*>(&h), sizeof h) ||
      std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.key_size != key.size() ||
      h.payload_size != file_size - sizeof h - key.size()) {
    return std::nullopt;
  }
  std::string stored_key(key.size(), '\0');
  if (!read_all(fd, stored_key.data(), stored_key.size()) || stored_key != key) {
    return std::nullopt;
  }
  std::string payload(static_cast<size_t>(h.payload_size), '\0');
  if (!read_all(fd, payload.data(), payload.size()) || hash64(payload) != h.payload_checksum) {
    return std::nullopt;
  }
  return payload;
}

bool ends_with(const char* s, const char* suffix) {
  size_t a = std::strlen(s), b = std::strlen(suffix);
  return a >= b && std::strcmp(s + a - b, suffix) == 0;
}

}  // namespace

DiskCache& DiskCache::instance() {
  static DiskCache cache = [] {
    const char* off = std::getenv("KJIT_CACHE");
    bool disabled = off && (std::strcmp(off, "0") == 0 || std::strcmp(off, "off") == 0);
    const uint64_t max_bytes = bytes_from_env("KJIT_CACHE_MAX_BYTES", uint64_t{1} << 30, 1);
    return DiskCache(disabled ? std::string() : default_directory(), max_bytes);
  }();
  return cache;
}

DiskCache::DiskCache(std::string directory, uint64_t max_bytes)
    : dir_(std::move(directory)), max_bytes_(max_bytes) {
  if (dir_.empty()) return;
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  // Resolved once: a later change of working directory must not move the cache.
  const std::string given = dir_;
  dir_ = absolute_path(dir_);
  if (dir_.empty()) {
    dir_ = given;
    disable("the working directory it is relative to has no name");
    return;
  }
  if (!make_directories(dir_)) {
    disable("cannot create it (" + std::string(std::strerror(errno)) + ")");
    return;
  }
  struct stat st;
  if (lstat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    disable("it is not a directory");
    return;
  }
  if (st.st_uid != geteuid()) {
    disable("it is owned by another user");
    return;
  }
  if (const std::string why = untrusted_parent(dir_); !why.empty()) {
    disable(why);
    return;
  }
  if ((st.st_mode & 077) != 0 && chmod(dir_.c_str(), 0700) != 0) {
    disable("it is accessible to other users and its mode cannot be changed");
    return;
  }
  enabled_ = true;
}

void DiskCache::disable(const std::string& why) {
  enabled_ = false;
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    warn("the kernel cache directory '" + dir_ + "' cannot be used: " + why +
         "; compiled kernels are kept in memory only");
  }
}

std::string DiskCache::path_for(std::string_view key) const {
  return dir_ + "/" + hex64(hash64(key)) + kSuffix;
}

std::optional<std::string> DiskCache::load(std::string_view key) {
  if (!enabled_) return std::nullopt;
  const std::string path = path_for(key);
  // Non-blocking: a FIFO planted under an entry's name must not hang the process.
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st;
  bool trusted = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
                 (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
  if (!trusted) {
    ::close(fd);
    return std::nullopt;  // never run what someone else could have written
  }
  std::optional<std::string> payload =
      read_entry(fd, static_cast<uint64_t>(st.st_size), key, max_entry_bytes());
  if (payload) futimens(fd, nullptr);  // recently used: last to be evicted
  ::close(fd);
  if (!payload) ::unlink(path.c_str());  // damaged or from another key: rebuild it
  return payload;
}

uint64_t DiskCache::max_entry_bytes() const { return std::min(max_bytes_, kMaxEntryBytes); }

void DiskCache::store(std::string_view key, std::string_view payload) {
  // An entry over the cap would be refused by every load: it is not written.
  if (!enabled_ || sizeof(Header) + key.size() + payload.size() > max_entry_bytes()) return;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.key_size = key.size();
  h.payload_size = payload.size();
  h.payload_checksum = hash64(payload);
  std::string tmp = dir_ + "/.tmp-XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) {
    disable("cannot write to it (" + std::string(std::strerror(errno)) + ")");
    return;
  }
  bool ok = write_all(fd, reinterpret_cast<const char*>(&h), sizeof h) &&
            write_all(fd, key.data(), key.size()) &&
            write_all(fd, payload.data(), payload.size());
  ok = (::close(fd) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path_for(key).c_str()) != 0) {
    ::unlink(tmp.c_str());
    disable("writing an entry failed (" + std::string(std::strerror(errno)) + ")");
    return;
  }
  evict();
}

void DiskCache::evict() {
  std::lock_guard lock(mutex_);
  struct Entry {
    std::string path;
    uint64_t size;
    timespec mtime;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  DIR* d = opendir(dir_.c_str());
  if (!d) return;
  const time_t stale = std::time(nullptr) - 3600;
  while (dirent* e = readdir(d)) {
    std::string path = dir_ + "/" + e->d_name;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (std::strncmp(e->d_name, ".tmp-", 5) == 0) {
      if (st.st_mtime < stale) ::unlink(path.c_str());  // left by a crashed writer
      continue;
    }
    if (!ends_with(e->d_name, kSuffix)) continue;
    entries.push_back({path, static_cast<uint64_t>(st.st_size), st.st_mtim});
    total += static_cast<uint64_t>(st.st_size);
  }
  closedir(d);
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec
                                            : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (::unlink(e.path.c_str()) == 0) total -= e.size;
  }
}

DiskCache::Usage DiskCache::usage() const {
  Usage u;
  if (!enabled_) return u;
  DIR* d = opendir(dir_.c_str());
  if (!d) return u;
  while (dirent* e = readdir(d)) {
    if (!ends_with(e->d_name, kSuffix)) continue;
    struct stat st;
    std::string path = dir_ + "/" + e->d_name;
    if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      ++u.entries;
      u.bytes += static_cast<uint64_t>(st.st_size);
    }
  }
  closedir(d);
  return u;
}

void DiskCache::clear() {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  DIR* d = opendir(dir_.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    if (ends_with(e->d_name, kSuffix)) ::unlink((dir_ + "/" + e->d_name).c_str());
  }
  closedir(d);
}

}  // namespace kjit::cache
