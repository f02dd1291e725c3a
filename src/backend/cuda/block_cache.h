// Device blocks kept after release for later allocations on the stream that released them, as
// CuPy's and PyTorch's pools do. A block comes back only to the same stream, whose own order
// puts the new use after every earlier one. Nothing is handed back to the driver on a user's
// stream, which may be destroyed before the arrays made on it are (freeing on a dead stream
// crashes the driver); the blocks go back only when the device runs out of memory, after the
// whole device has synchronised. Reuse also costs a lock and a vector instead of two driver
// calls (cuMemAllocAsync and cuMemFreeAsync: about 1.6 µs per output on an H200 host).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kjit::cuda {

class BlockCache {
 public:
  /// The block size that serves |bytes|: powers of two from 512 bytes up to 1 MiB, then whole
  /// MiB.
  static size_t block_size(size_t bytes);

  /// A kept block of |size| bytes released on |stream| of |device|, or 0 when there is none.
  uintptr_t take(int device, uintptr_t stream, size_t size);
  /// Keeps a released block.
  void keep(int device, uintptr_t stream, size_t size, uintptr_t block);
  /// Every block kept for |device|, no longer kept.
  std::vector<uintptr_t> take_all(int device);

 private:
  struct Key {
    int device;
    uintptr_t stream;
    size_t size;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uintptr_t>()(k.stream) ^ (k.size << 8) ^ static_cast<size_t>(k.device);
    }
  };
  std::mutex mutex_;
  std::unordered_map<Key, std::vector<uintptr_t>, KeyHash> blocks_;
};

}  // namespace kjit::cuda
