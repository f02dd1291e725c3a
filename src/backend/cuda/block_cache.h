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
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  /// The block size that serves |bytes|: powers of two from 512 bytes up to 1 MiB, then whole
  /// MiB.
  static size_t block_size(size_t bytes);

  /// A block the cache knows, lent or kept, from its first loan until take_all hands it back.
  /// Its owner holds it only to give it back to keep(), which then need not look for it.
  struct Block {
    struct Wait {
      uintptr_t stream, event;
    };
    uintptr_t start, end;
    int device;
    uintptr_t stream;  // the stream it is lent to, or kept for
    bool lent;
    std::vector<Wait> waits;  // events of its uses on other streams, for its next user
  };

  /// A block handed out for |stream| (nullptr when there is none), and the events its user must
  /// wait for first.
  struct Lent {
    Block* block = nullptr;
    uintptr_t start = 0;
    std::vector<uintptr_t> waits;
  };

  /// A kept block of |size| bytes released on |stream| of |device|, now lent to |stream|.
  Lent take(int device, uintptr_t stream, size_t size);
  /// Records a new block of |size| bytes of |device|, from the driver, as lent to |stream|.
  Block* lend(int device, uintptr_t start, size_t size, uintptr_t stream);
  /// Keeps a lent block, released, for its stream; true when its device now holds more than the
  /// limit.
  bool keep(Block* block);
  /// The start of the block that holds |ptr| when it is lent to another stream than |stream|,
  /// else 0.
  uintptr_t lent_elsewhere(uintptr_t ptr, uintptr_t stream);
  /// The event that marks the end of |stream|'s work on the block at |start| so far (one per
  /// stream and block, re-recorded after each use), or 0 when there is none yet.
  uintptr_t event_for(uintptr_t start, uintptr_t stream);
  /// Records |event| as that event; the block's next user waits for it. False, recording
  /// nothing, when the cache no longer knows the block.
  bool add_wait(uintptr_t start, uintptr_t stream, uintptr_t event);
  /// The start of every block kept for |device|, now forgotten; |waits| receives the events
  /// still attached to them.
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
  // With mutex_ held:
  Block* block_at(uintptr_t start);
  void add_loan(uintptr_t stream);
  void end_loan(uintptr_t stream);
  void publish_sole_stream();
  size_t& held(int device);

  const size_t limit_;
  std::mutex mutex_;
  // Every block known, by start: nodes stay put, so kept lists and owners point at them, and a
  // block lent and kept again allocates nothing.
  std::map<uintptr_t, Block> blocks_;
  std::unordered_map<Key, std::vector<Block*>, KeyHash> kept_;
  std::vector<size_t> held_;  // bytes kept, by device
  // Loans per stream. A stream's entry stays at zero, so that a stream that takes and keeps a
  // block per call allocates nothing; zeros are swept when they outnumber the streams lending.
  std::unordered_map<uintptr_t, size_t> loans_per_stream_;
  size_t streams_lending_ = 0;
  // The one stream every lent block is lent to, kNoLoans or kManyStreams: lent_elsewhere, asked
  // at every launch, answers without the lock while a program uses one stream. An array's loan
  // is published before the array can reach another thread, so a launch on it sees it here.
  static constexpr uintptr_t kNoLoans = ~uintptr_t{0}, kManyStreams = ~uintptr_t{0} - 1;
  std::atomic<uintptr_t> sole_stream_{kNoLoans};
};

}  // namespace kjit::cuda
