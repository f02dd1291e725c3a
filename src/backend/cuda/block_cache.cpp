#include "backend/cuda/block_cache.h"

namespace kjit::cuda {

size_t BlockCache::block_size(size_t bytes) {
  constexpr size_t kMiB = size_t{1} << 20;
  if (bytes > kMiB) return (bytes + kMiB - 1) / kMiB * kMiB;
  size_t size = 512;
  while (size < bytes) size *= 2;
  return size;
}

std::vector<uintptr_t> BlockCache::waits_of(uintptr_t block) {
  if (waits_.empty()) return {};
  auto it = waits_.find(block);
  if (it == waits_.end()) return {};
  std::vector<uintptr_t> events;
  for (const Wait& w : it->second) events.push_back(w.event);
  waits_.erase(it);
  return events;
}

void BlockCache::publish_sole_stream() {
  sole_stream_.store(loans_per_stream_.empty()       ? kNoLoans
                     : loans_per_stream_.size() == 1 ? loans_per_stream_.begin()->first
                                                     : kManyStreams,
                     std::memory_order_release);
}

void BlockCache::add_loan(uintptr_t block, size_t size, uintptr_t stream) {
  lent_[block] = {block + size, stream};
  ++loans_per_stream_[stream];
  publish_sole_stream();
}

void BlockCache::end_loan(uintptr_t block) {
  auto it = lent_.find(block);
  if (it == lent_.end()) return;
  auto count = loans_per_stream_.find(it->second.stream);
  if (--count->second == 0) loans_per_stream_.erase(count);
  lent_.erase(it);
  publish_sole_stream();
}

BlockCache::Lent BlockCache::take(int device, uintptr_t stream, size_t size) {
  std::lock_guard lock(mutex_);
  auto it = kept_.find({device, stream, size});
  if (it == kept_.end() || it->second.empty()) return {};
  const uintptr_t block = it->second.back();
  it->second.pop_back();
  held_[device] -= size;
  add_loan(block, size, stream);
  return {block, waits_of(block)};
}

void BlockCache::lend(uintptr_t block, size_t size, uintptr_t stream) {
  std::lock_guard lock(mutex_);
  add_loan(block, size, stream);
}

bool BlockCache::keep(int device, uintptr_t stream, size_t size, uintptr_t block) {
  std::lock_guard lock(mutex_);
  end_loan(block);
  kept_[{device, stream, size}].push_back(block);
  return (held_[device] += size) > limit_;
}

uintptr_t BlockCache::lent_elsewhere(uintptr_t ptr, uintptr_t stream) {
  const uintptr_t sole = sole_stream_.load(std::memory_order_acquire);
  if (sole == kNoLoans || sole == stream) return 0;
  std::lock_guard lock(mutex_);
  auto it = lent_.upper_bound(ptr);
  if (it == lent_.begin()) return 0;
  --it;  // the last block starting at or before ptr
  return ptr < it->second.end && it->second.stream != stream ? it->first : 0;
}

uintptr_t BlockCache::event_for(uintptr_t block, uintptr_t stream) {
  std::lock_guard lock(mutex_);
  auto it = waits_.find(block);
  if (it == waits_.end()) return 0;
  for (const Wait& w : it->second) {
    if (w.stream == stream) return w.event;
  }
  return 0;
}

void BlockCache::add_wait(uintptr_t block, uintptr_t stream, uintptr_t event) {
  std::lock_guard lock(mutex_);
  waits_[block].push_back({stream, event});
}

std::vector<uintptr_t> BlockCache::take_all(int device, std::vector<uintptr_t>& waits) {
  std::lock_guard lock(mutex_);
  std::vector<uintptr_t> all;
  held_[device] = 0;
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (it->first.device == device) {
      for (uintptr_t block : it->second) {
        all.push_back(block);
        for (uintptr_t e : waits_of(block)) waits.push_back(e);
      }
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
  return all;
}

}  // namespace kjit::cuda
