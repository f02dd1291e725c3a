// The in-memory cache: one built value per key, built once even when callers race for it. A
// failed build is not remembered: every waiter gets the exception and the next call retries.
// The cache holds at most a number of values and of bytes: past either limit it forgets the
// least recently used values that nothing else holds. A value still held elsewhere (by a kernel,
// a recorded launch) is never forgotten, so that no second copy of it is loaded.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kjit::cache {

struct MemoryLimits {
  uint64_t entries = std::numeric_limits<uint64_t>::max();
  uint64_t bytes = std::numeric_limits<uint64_t>::max();
};

/// The limits of the programs' memory caches, from KJIT_MEMORY_CACHE_MAX_ENTRIES and
/// KJIT_MEMORY_CACHE_MAX_BYTES (read once).
const MemoryLimits& memory_limits();

struct MemoryUsage {
  uint64_t entries = 0;    // values built and kept
  uint64_t bytes = 0;      // their keys' and values' sizes
  uint64_t evictions = 0;  // values forgotten for the limits since the process started
};

template <class V>
class MemoryCache {
 public:
  using Measure = std::function<uint64_t(const V&)>;

  MemoryCache() = default;
  /// A cache within |limits|, each value taking the bytes |bytes_of| gives (and its key's).
  MemoryCache(MemoryLimits limits, Measure bytes_of)
      : limits_(limits), bytes_of_(std::move(bytes_of)) {}

  std::shared_ptr<V> get_or_build(const std::string& key,
                                  const std::function<std::shared_ptr<V>()>& build) {
    std::shared_ptr<std::promise<std::shared_ptr<V>>> mine;
    std::shared_future<std::shared_ptr<V>> future;
    Entry* entry = nullptr;
    const std::string* stored_key = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end()) {
        future = it->second.value;
        touch(it->second);
      } else {
        mine = std::make_shared<std::promise<std::shared_ptr<V>>>();
        future = mine->get_future().share();
        Entry fresh;
        fresh.value = future;
        auto made = entries_.emplace(key, std::move(fresh)).first;
        entry = &made->second;
        stored_key = &made->first;
      }
    }
    if (!mine) return future.get();  // built, or being built by another caller
    std::shared_ptr<V> value;
    try {
      value = build();
    } catch (...) {
      {
        std::lock_guard lock(mutex_);
        entries_.erase(key);
      }
      mine->set_exception(std::current_exception());
      throw;
    }
    mine->set_value(value);
    // The key is the whole generated source: often larger than the program itself.
    const uint64_t bytes = key.size() + (bytes_of_ && value ? bytes_of_(*value) : 0);
    std::vector<std::shared_future<std::shared_ptr<V>>> forgotten;
    {
      // Only its builder erases an entry being built: |entry| and |stored_key| are still valid.
      std::lock_guard lock(mutex_);
      entry->bytes = bytes;
      entry->built = true;
      recent_.push_front(stored_key);
      entry->recent = recent_.begin();
      bytes_ += bytes;
      forgotten = trim();
    }
    return value;  // |forgotten| is released here, outside the lock: unloading takes time
  }

  /// The value built for |key|, or null when there is none (yet).
  std::shared_ptr<V> find(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end() || !it->second.built) return nullptr;
    touch(it->second);
    return it->second.value.get();  // failed builds are not kept: a built entry holds a value
  }

  MemoryUsage usage() const {
    std::lock_guard lock(mutex_);
    return {recent_.size(), bytes_, evictions_};
  }

  /// Forgets every finished entry (entries being built stay).
  void clear() {
    std::vector<std::shared_future<std::shared_ptr<V>>> forgotten;
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (!it->second.built) {
        ++it;
        continue;
      }
      forgotten.push_back(std::move(it->second.value));
      recent_.erase(it->second.recent);
      it = entries_.erase(it);
    }
    bytes_ = 0;
  }

 private:
  struct Entry {
    std::shared_future<std::shared_ptr<V>> value;
    bool built = false;  // else being built: not in |recent_|, not counted
    uint64_t bytes = 0;
    typename std::list<const std::string*>::iterator recent;
  };

  void touch(Entry& e) {
    if (e.built) recent_.splice(recent_.begin(), recent_, e.recent);
  }

  // Forgets the least recently used values nothing else holds while the cache is over a
  // limit; returns them, for the caller to release once the lock is given up.
  std::vector<std::shared_future<std::shared_ptr<V>>> trim() {
    std::vector<std::shared_future<std::shared_ptr<V>>> forgotten;
    auto it = recent_.end();
    while ((recent_.size() > limits_.entries || bytes_ > limits_.bytes) && it != recent_.begin()) {
      --it;
      auto found = entries_.find(**it);
      // In use: it stays loaded whatever the cache does, and a later build would load a copy.
      if (found->second.value.get().use_count() > 1) continue;
      bytes_ -= found->second.bytes;
      ++evictions_;
      forgotten.push_back(std::move(found->second.value));
      it = recent_.erase(it);
      entries_.erase(found);
    }
    return forgotten;
  }

  mutable std::mutex mutex_;
  MemoryLimits limits_;
  Measure bytes_of_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<const std::string*> recent_;  // the built entries' keys, most recently used first
  uint64_t bytes_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace kjit::cache
