#include "backend/cpu/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace kjit::cpu {
namespace {

class ThreadPool {
 public:
  ThreadPool() {
    unsigned n = std::max(1u, std::thread::hardware_concurrency());
    if (const char* env = std::getenv("KJIT_NUM_THREADS"); env && std::atoi(env) > 0) {
      n = static_cast<unsigned>(std::atoi(env));
    }
    size_ = n;
    for (unsigned i = 1; i < n; ++i) {
      std::thread([this] { worker(); }).detach();  // lives as long as the process
    }
  }

  unsigned size() const { return size_; }

  void run(uint64_t n, const std::function<void(uint64_t, uint64_t)>& fn) {
    std::unique_lock lock(busy_, std::try_to_lock);
    if (!lock.owns_lock() || size_ == 1) {
      fn(0, n);
      return;
    }
    fn_ = &fn;
    n_ = n;
    chunk_ = std::max<uint64_t>(1, n / (uint64_t{size_} * 8));
    next_.store(0, std::memory_order_relaxed);
    active_.store(size_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    work();
    // Wait for the workers to leave this job before its state is reused.
    for (uint32_t a = active_.load(std::memory_order_acquire); a != 0;
         a = active_.load(std::memory_order_acquire)) {
      active_.wait(a, std::memory_order_acquire);
    }
  }

 private:
  void work() {
    for (;;) {
      uint64_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
      if (begin >= n_) return;
      (*fn_)(begin, std::min(n_, begin + chunk_));
    }
  }

  // Workers start before any job exists, at generation 0; reading the counter here instead could
  // skip a job that started before this thread ran.
  void worker() {
    uint64_t seen = 0;
    for (;;) {
      generation_.wait(seen, std::memory_order_acquire);
      seen = generation_.load(std::memory_order_acquire);
      work();
      if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) active_.notify_one();
    }
  }

  unsigned size_ = 1;
  std::mutex busy_;
  const std::function<void(uint64_t, uint64_t)>* fn_ = nullptr;
  uint64_t n_ = 0;
  uint64_t chunk_ = 1;
  std::atomic<uint64_t> next_{0};
  std::atomic<uint32_t> active_{0};
  std::atomic<uint64_t> generation_{0};
};

// The pool of this process. Never destroyed: workers outlive static teardown. A child made by
// fork() has none of its parent's threads, and makes a pool of its own (the parent's is left
// behind: its state may be mid-job).
std::atomic<ThreadPool*> current_pool{nullptr};

ThreadPool& pool() {
  if (ThreadPool* p = current_pool.load(std::memory_order_acquire)) return *p;
  static std::mutex making;
  std::lock_guard lock(making);
  ThreadPool* p = current_pool.load(std::memory_order_relaxed);
  if (!p) {
    static const bool forget_in_child = [] {
      pthread_atfork(nullptr, nullptr,
                     [] { current_pool.store(nullptr, std::memory_order_relaxed); });
      return true;
    }();
    (void)forget_in_child;
    p = new ThreadPool();
    current_pool.store(p, std::memory_order_release);
  }
  return *p;
}

}  // namespace

void parallel_for(uint64_t n, const std::function<void(uint64_t, uint64_t)>& fn) {
  pool().run(n, fn);
}

unsigned pool_size() { return pool().size(); }

}  // namespace kjit::cpu
