// cooperative_groups basics on the GPU (no toolkit header needed). Blocks are numbered x-fastest
// over the launch's grid of blocks, which is the kernel's grid of groups or its flattening.
#pragma once

#include "common/lanes.h"

namespace kjit::lanes {

// A value and the bytes that round it up to whole 32-bit words.
template <class T, unsigned Pad>
struct padded {
  T value;
  unsigned char rest[Pad];
};
template <class T>
struct padded<T, 0> {
  T value;
};

// A value of any trivially copyable type through a warp shuffle, as cooperative groups' own
// shuffles take one: the intrinsics' types directly, any other (float2, a struct, __half) as
// 32-bit words, each shuffled alike.
template <class T, class Shuffle>
KJIT_INLINE T shuffled(T v, Shuffle shuffle) {
  if constexpr (is_same_v<T, int> || is_same_v<T, unsigned> || is_same_v<T, long> ||
                is_same_v<T, unsigned long> || is_same_v<T, long long> ||
                is_same_v<T, unsigned long long> || is_same_v<T, float> || is_same_v<T, double>) {
    return shuffle(v);
  } else {
    static_assert(__is_trivially_copyable(T),
                  "a cooperative groups shuffle or reduce needs a trivially copyable type");
    constexpr unsigned n = (sizeof(T) + 3) / 4;
    using bytes = padded<T, n * 4 - sizeof(T)>;
    struct words {
      unsigned w[n];
    };
    static_assert(sizeof(bytes) == sizeof(words), "a value padded to whole words");
    words raw = __builtin_bit_cast(words, bytes{v});
    for (unsigned& w : raw.w) w = shuffle(w);
    return __builtin_bit_cast(bytes, raw).value;
  }
}

}  // namespace kjit::lanes

namespace cooperative_groups {

struct thread_block {
  KJIT_INLINE unsigned thread_rank() const {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  KJIT_INLINE unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
  KJIT_INLINE unsigned num_threads() const { return size(); }
  KJIT_INLINE void sync() const { __syncthreads(); }
};

struct grid_group {
  KJIT_INLINE unsigned long long thread_rank() const {
    const unsigned long long block = blockIdx.x + static_cast<unsigned long long>(gridDim.x) *
                                                      (blockIdx.y + gridDim.y * blockIdx.z);
    return block * thread_block{}.size() + thread_block{}.thread_rank();
  }
  KJIT_INLINE unsigned long long size() const {
    return static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z *
           thread_block{}.size();
  }
  KJIT_INLINE unsigned long long num_threads() const { return size(); }
};

// A tile of N consecutive threads of a block (N a power of two up to 32): the warp functions over
// segments of N lanes, among the lanes that reach the call.
template <unsigned N>
struct thread_block_tile {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0,
                "thread_block_tile: the size must be a power of two up to 32");
  KJIT_INLINE unsigned block_rank() const { return thread_block{}.thread_rank(); }
  KJIT_INLINE unsigned thread_rank() const { return block_rank() % N; }
  KJIT_INLINE static constexpr unsigned size() { return N; }
  KJIT_INLINE static constexpr unsigned num_threads() { return N; }
  KJIT_INLINE unsigned meta_group_rank() const { return block_rank() / N; }
  KJIT_INLINE unsigned meta_group_size() const { return (thread_block{}.size() + N - 1) / N; }
  KJIT_INLINE void sync() const { __syncwarp(__activemask()); }
  template <class T>
  KJIT_INLINE T shfl(T v, int src) const {
    return ::kjit::lanes::shuffled(v,
                                   [=](auto w) { return __shfl_sync(__activemask(), w, src, N); });
  }
  template <class T>
  KJIT_INLINE T shfl_up(T v, unsigned delta) const {
    return ::kjit::lanes::shuffled(
        v, [=](auto w) { return __shfl_up_sync(__activemask(), w, delta, N); });
  }
  template <class T>
  KJIT_INLINE T shfl_down(T v, unsigned delta) const {
    return ::kjit::lanes::shuffled(
        v, [=](auto w) { return __shfl_down_sync(__activemask(), w, delta, N); });
  }
  template <class T>
  KJIT_INLINE T shfl_xor(T v, unsigned mask) const {
    return ::kjit::lanes::shuffled(
        v, [=](auto w) { return __shfl_xor_sync(__activemask(), w, mask, N); });
  }
  // This tile's bits of a warp-wide mask, in the tile's lane order.
  KJIT_INLINE unsigned tile_bits(unsigned warp_bits) const {
    return N == 32 ? warp_bits : (warp_bits >> (block_rank() % 32 / N * N)) & ((1u << N) - 1);
  }
  KJIT_INLINE unsigned ballot(int predicate) const {
    return tile_bits(__ballot_sync(__activemask(), predicate));
  }
  KJIT_INLINE bool any(int predicate) const { return ballot(predicate) != 0; }
  KJIT_INLINE bool all(int predicate) const {
    return ballot(predicate) == tile_bits(__activemask());
  }
};

KJIT_INLINE void sync(const thread_block& block) { block.sync(); }
template <unsigned N>
KJIT_INLINE void sync(const thread_block_tile<N>& tile) {
  tile.sync();
}

// A butterfly over the tile's lanes: at each step both partners take op(the lower lane's value,
// the higher lane's), so every lane ends with the same result. A tile with lanes absent (past
// the grid's edge, or in a branch) reduces the lanes present, in the same order
// (lanes::butterfly), as the CPU does.
template <unsigned N, class T, class Op>
KJIT_INLINE T reduce(const thread_block_tile<N>& tile, T v, Op op) {
  const unsigned lane = tile.block_rank() % 32, first = lane & ~(N - 1);
  const unsigned tile_lanes = N == 32 ? 0xffffffffu : ((1u << N) - 1u) << first;
  const unsigned active = __activemask() & tile_lanes;
  if (active == tile_lanes) {
    // The tile's own lanes only: those of a partial tile in the same warp take the other path.
    for (unsigned step = N / 2; step > 0; step /= 2) {
      const T other = ::kjit::lanes::shuffled(
          v, [=](auto w) { return __shfl_xor_sync(tile_lanes, w, int(step), int(N)); });
      v = tile.thread_rank() & step ? op(other, v) : op(v, other);
    }
    return v;
  }
  T values[N];
  bool present[N];
  for (unsigned j = 0; j < N; ++j) {
    present[j] = (active >> (first + j)) & 1u;
    // An absent lane's value is not used.
    values[j] =
        ::kjit::lanes::shuffled(v, [=](auto w) { return __shfl_sync(active, w, int(first + j)); });
  }
  ::kjit::lanes::butterfly(values, present, N, op);
  return values[lane - first];
}

}  // namespace cooperative_groups
