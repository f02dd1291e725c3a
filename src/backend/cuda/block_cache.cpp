#include "backend/cuda/block_cache.h"

namespace kjit::cuda {

size_t BlockCache::block_size(size_t bytes) {
  constexpr size_t kMiB = size_t{1} << 20;
  if (bytes > kMiB) return (bytes + kMiB - 1) / kMiB * kMiB;
  size_t size = 512;
  while (size < bytes) size *= 2;
  return size;
}

uintptr_t BlockCache::take(int device, uintptr_t stream, size_t size) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find({device, stream, size});
  if (it == blocks_.end() || it->second.empty()) return 0;
  const uintptr_t block = it->second.back();
  it->second.pop_back();
  return block;
}

void BlockCache::keep(int device, uintptr_t stream, size_t size, uintptr_t block) {
  std::lock_guard lock(mutex_);
  blocks_[{device, stream, size}].push_back(block);
}

std::vector<uintptr_t> BlockCache::take_all(int device) {
  std::lock_guard lock(mutex_);
  std::vector<uintptr_t> all;
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    if (it->first.device == device) {
      all.insert(all.end(), it->second.begin(), it->second.end());
      it = blocks_.erase(it);
    } else {
      ++it;
    }
  }
  return all;
}

}  // namespace kjit::cuda
