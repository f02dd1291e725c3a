// The in-memory cache: one built value per key, built once even when callers race for it. A
// failed build is not remembered: every waiter gets the exception and the next call retries.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace kjit::cache {

template <class V>
class MemoryCache {
 public:
  std::shared_ptr<V> get_or_build(const std::string& key,
                                  const std::function<std::shared_ptr<V>()>& build) {
    std::shared_ptr<std::promise<std::shared_ptr<V>>> mine;
    std::shared_future<std::shared_ptr<V>> future;
    {
      std::lock_guard lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end()) {
        future = it->second;
      } else {
        mine = std::make_shared<std::promise<std::shared_ptr<V>>>();
        future = mine->get_future().share();
        entries_.emplace(key, future);
      }
    }
    if (!mine) return future.get();  // built, or being built by another caller
    try {
      std::shared_ptr<V> value = build();
      mine->set_value(value);
      return value;
    } catch (...) {
      {
        std::lock_guard lock(mutex_);
        entries_.erase(key);
      }
      mine->set_exception(std::current_exception());
      throw;
    }
  }

  /// The value built for |key|, or null when there is none (yet).
  std::shared_ptr<V> find(const std::string& key) const {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end() ||
        it->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      return nullptr;
    }
    return it->second.get();  // failed builds are not kept: a ready entry holds a value
  }

  size_t size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
  }

  /// Forgets every finished entry (entries being built stay).
  void clear() {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      bool done = it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
      it = done ? entries_.erase(it) : std::next(it);
    }
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<V>>> entries_;
};

}  // namespace kjit::cache
