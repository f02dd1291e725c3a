// Device blocks kept after release for later allocations on the stream that released them, as
// CuPy's and PyTorch's pools do. A block comes back only to the same stream, whose own order
// puts the new use after every earlier use on it; a kernel kjit runs on another stream with the
// block as an argument leaves an event, which the block's next user waits for. Nothing is handed
// back to the driver on a user's stream, which may be destroyed before the arrays made on it
// (freeing on a dead stream crashes the driver): the blocks go back all at once, after the whole
// device has synchronised, when the device runs out of memory or holds more than a limit in
// kept blocks (so that blocks kept for streams that are gone do not pile up). Reuse also costs a
// lock and a vector instead of two driver calls (cuMemAllocAsync and cuMemFreeAsync: about 1.6 µs
// per output on an H200 host). Blocks, streams and events are opaque handles here.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kjit::cuda {

class BlockCache {
 public:
  /// A cache that reports a device holding more than |limit| bytes in kept blocks.
  explicit BlockCache(size_t limit) : limit_(limit) {}

  /// The block size that serves |bytes|: powers of two from 512 bytes up to 1 MiB, then whole
  /// MiB.
  static size_t block_size(size_t bytes);

  /// A block handed out for |stream|, and the events its user must wait for first.
  struct Lent {
    uintptr_t block = 0;
    std::vector<uintptr_t> waits;
  };
  /// A kept block of |size| bytes released on |stream| of |device| (block 0 when there is none),
  /// now lent to |stream|.
  Lent take(int device, uintptr_t stream, size_t size);
  /// Records a new block of |size| bytes from the driver as lent to |stream|.
  void lend(uintptr_t block, size_t size, uintptr_t stream);
  /// Keeps a released block for its stream; true when |device| now holds more than the limit.
  bool keep(int device, uintptr_t stream, size_t size, uintptr_t block);
  /// The block that holds |ptr| when it is lent to another stream than |stream|, else 0.
  uintptr_t lent_elsewhere(uintptr_t ptr, uintptr_t stream);
  /// The event that marks the end of |stream|'s work on |block| so far (one per stream and
  /// block, re-recorded after each use), or 0 when there is none yet.
  uintptr_t event_for(uintptr_t block, uintptr_t stream);
  /// Records |event| as that event; the block's next user waits for it.
  void add_wait(uintptr_t block, uintptr_t stream, uintptr_t event);
  /// Every block kept for |device|, no longer kept; |waits| receives the events still attached
  /// to them.
  std::vector<uintptr_t> take_all(int device, std::vector<uintptr_t>& waits);

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
  std::vector<uintptr_t> waits_of(uintptr_t block);  // with mutex_ held
  void add_loan(uintptr_t block, size_t size, uintptr_t stream);  // with mutex_ held
  void end_loan(uintptr_t block);                                 // with mutex_ held
  void publish_sole_stream();                                     // with mutex_ held

  const size_t limit_;
  std::mutex mutex_;
  std::unordered_map<Key, std::vector<uintptr_t>, KeyHash> kept_;
  std::unordered_map<int, size_t> held_;  // bytes kept per device
  struct Loan {
    uintptr_t end, stream;
  };
  std::map<uintptr_t, Loan> lent_;  // by start, to find the block of a view
  std::unordered_map<uintptr_t, size_t> loans_per_stream_;
  // The one stream every lent block is lent to, kNoLoans or kManyStreams: lent_elsewhere, asked
  // at every launch, answers without the lock while a program uses one stream. An array's loan
  // is published before the array can reach another thread, so a launch on it sees it here.
  static constexpr uintptr_t kNoLoans = ~uintptr_t{0}, kManyStreams = ~uintptr_t{0} - 1;
  std::atomic<uintptr_t> sole_stream_{kNoLoans};
  struct Wait {
    uintptr_t stream, event;
  };
  std::unordered_map<uintptr_t, std::vector<Wait>> waits_;
};

}  // namespace kjit::cuda
