// The disk cache: one file per entry, holding a header (format version, the full key, payload
// size and checksum) and the payload. Entries are written to a temporary file and renamed, so
// readers see whole entries or none; every load re-checks the header, owner and permissions.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::cache {

class DiskCache {
 public:
  /// The process-wide cache, configured from KJIT_CACHE_DIR / XDG_CACHE_HOME / HOME,
  /// KJIT_CACHE=0 and KJIT_CACHE_MAX_BYTES on first use (a relative directory is taken from the
  /// working directory then).
  static DiskCache& instance();

  /// A cache in |directory|, made absolute now; off, with a warning, when it is not a directory
  /// of this user's that only this user (and root) can replace.
  explicit DiskCache(std::string directory, uint64_t max_bytes);

  bool enabled() const { return enabled_; }
  const std::string& directory() const { return dir_; }
  uint64_t max_bytes() const { return max_bytes_; }

  /// The verified payload stored under |key|, or nothing. A damaged entry is deleted.
  std::optional<std::string> load(std::string_view key);
  /// Stores |payload| under |key|, then evicts least-recently-used entries over the size cap.
  void store(std::string_view key, std::string_view payload);

  struct Usage {
    uint64_t entries = 0;
    uint64_t bytes = 0;
  };
  Usage usage() const;
  void clear();

 private:
  std::string path_for(std::string_view key) const;
  uint64_t max_entry_bytes() const;
  void disable(const std::string& why);
  void evict();

  std::string dir_;
  uint64_t max_bytes_;
  std::atomic<bool> enabled_{false};
  std::mutex mutex_;
};

}  // namespace kjit::cache
