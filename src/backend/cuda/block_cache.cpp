#include "backend/cuda/block_cache.h"

#include <utility>

namespace kjit::cuda {

size_t BlockCache::block_size(size_t bytes) {
  constexpr size_t kMiB = size_t{1} << 20;
  if (bytes > kMiB) return (bytes + kMiB - 1) / kMiB * kMiB;
  size_t size = 512;
  while (size < bytes) size *= 2;
  return size;
}

BlockCache::Block* BlockCache::block_at(uintptr_t start) {
  auto it = blocks_.find(start);
  return it == blocks_.end() ? nullptr : &it->second;
}

size_t& BlockCache::held(int device) {
  if (static_cast<size_t>(device) >= held_.size()) held_.resize(static_cast<size_t>(device) + 1);
  return held_[static_cast<size_t>(device)];
}

void BlockCache::publish_sole_stream() {
  uintptr_t sole = streams_lending_ == 0 ? kNoLoans : kManyStreams;
  if (streams_lending_ == 1) {
    for (const auto& [stream, loans] : loans_per_stream_) {
      if (loans > 0) sole = stream;
    }
  }
  sole_stream_.store(sole, std::memory_order_release);
}

void BlockCache::add_loan(uintptr_t stream) {
  if (loans_per_stream_[stream]++ > 0) return;
  ++streams_lending_;
  publish_sole_stream();
}

void BlockCache::end_loan(uintptr_t stream) {
  auto count = loans_per_stream_.find(stream);
  if (--count->second > 0) return;
  --streams_lending_;
  if (loans_per_stream_.size() > 2 * streams_lending_ + 16) {
    std::erase_if(loans_per_stream_, [](const auto& entry) { return entry.second == 0; });
  }
  publish_sole_stream();
}

// Each change below comes after everything that may throw (out of host memory), so that a
// failure leaves the cache as it was.

BlockCache::Lent BlockCache::take(int device, uintptr_t stream, size_t size) {
  std::lock_guard lock(mutex_);
  auto it = kept_.find({device, stream, size});
  if (it == kept_.end() || it->second.empty()) return {};
  Block* block = it->second.back();
  Lent lent{block, block->start, {}};
  for (const Block::Wait& w : block->waits) lent.waits.push_back(w.event);
  size_t& held_bytes = held(device);
  add_loan(stream);
  it->second.pop_back();
  held_bytes -= size;
  block->lent = true;
  block->waits.clear();
  return lent;
}

BlockCache::Block* BlockCache::lend(int device, uintptr_t start, size_t size, uintptr_t stream) {
  std::lock_guard lock(mutex_);
  add_loan(stream);
  try {
    // The driver hands out an address again only after take_all forgot it.
    return &blocks_.insert_or_assign(start, Block{start, start + size, device, stream, true, {}})
                .first->second;
  } catch (...) {
    end_loan(stream);
    throw;
  }
}

bool BlockCache::keep(Block* block) {
  std::lock_guard lock(mutex_);
  const size_t size = block->end - block->start;
  size_t& held_bytes = held(block->device);
  kept_[{block->device, block->stream, size}].push_back(block);
  block->lent = false;
  end_loan(block->stream);
  return (held_bytes += size) > limit_;
}

uintptr_t BlockCache::lent_elsewhere(uintptr_t ptr, uintptr_t stream) {
  const uintptr_t sole = sole_stream_.load(std::memory_order_acquire);
  if (sole == kNoLoans || sole == stream) return 0;
  std::lock_guard lock(mutex_);
  auto it = blocks_.upper_bound(ptr);
  if (it == blocks_.begin()) return 0;
  const Block& block = std::prev(it)->second;  // the last block starting at or before ptr
  return block.lent && ptr < block.end && block.stream != stream ? block.start : 0;
}

uintptr_t BlockCache::event_for(uintptr_t start, uintptr_t stream) {
  std::lock_guard lock(mutex_);
  if (const Block* block = block_at(start)) {
    for (const Block::Wait& w : block->waits) {
      if (w.stream == stream) return w.event;
    }
  }
  return 0;
}

bool BlockCache::add_wait(uintptr_t start, uintptr_t stream, uintptr_t event) {
  std::lock_guard lock(mutex_);
  Block* block = block_at(start);
  if (block) block->waits.push_back({stream, event});
  return block != nullptr;
}

std::vector<uintptr_t> BlockCache::take_all(int device, std::vector<uintptr_t>& waits) {
  std::lock_guard lock(mutex_);
  std::vector<uintptr_t> all;
  held(device) = 0;
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (it->first.device != device) {
      ++it;
      continue;
    }
    for (const Block* block : it->second) {
      all.push_back(block->start);
      for (const Block::Wait& w : block->waits) waits.push_back(w.event);
      blocks_.erase(block->start);
    }
    it = kept_.erase(it);
  }
  return all;
}

}  // namespace kjit::cuda
