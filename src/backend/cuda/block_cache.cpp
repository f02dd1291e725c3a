#include "backend/cuda/block_cache.h"

namespace kjit::cuda {

size_t BlockCache::block_size(size_t bytes) {
  if (bytes > kLargestBlock) return 0;
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
  held_ -= size;
  return block;
}

bool BlockCache::keep(int device, uintptr_t stream, size_t size, uintptr_t block) {
  std::lock_guard lock(mutex_);
  if (held_ + size > kCapacity) return false;
  blocks_[{device, stream, size}].push_back(block);
  held_ += size;
  return true;
}

}  // namespace kjit::cuda
