// cooperative_groups basics on the GPU (no toolkit header needed). The launch is a 1-D grid of
// blocks, so the native indices give CUDA's ranks directly.
namespace cooperative_groups {

struct grid_group {
  KJIT_INLINE unsigned long long thread_rank() const {
    return static_cast<unsigned long long>(blockIdx.x) * (blockDim.x * blockDim.y * blockDim.z) +
           (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  }
  KJIT_INLINE unsigned long long size() const {
    return static_cast<unsigned long long>(gridDim.x) * (blockDim.x * blockDim.y * blockDim.z);
  }
  KJIT_INLINE unsigned long long num_threads() const { return size(); }
};

struct thread_block {
  KJIT_INLINE unsigned thread_rank() const {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  KJIT_INLINE unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
  KJIT_INLINE unsigned num_threads() const { return size(); }
  KJIT_INLINE void sync() const { __syncthreads(); }
};

KJIT_INLINE grid_group this_grid() { return {}; }
KJIT_INLINE thread_block this_thread_block() { return {}; }

}  // namespace cooperative_groups
