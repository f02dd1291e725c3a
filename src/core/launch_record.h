// A bound kernel's GPU launch, kept for its next calls: a call on arrays laid out as the recorded
// call's were does only what depends on the arrays themselves (their addresses, the values of 0-d
// inputs), as its checks, plan and packed parameters depend on the layouts alone.
#pragma once

#include <kjit/array.h>
#include <kjit/kernel.h>

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "core/array_ref.h"
#include "codegen/kernel_spec.h"

namespace kjit {

/// What of an array a launch depends on, besides its memory.
class ArrayLayout {
 public:
  explicit ArrayLayout(const ArrayRef& a);
  bool matches(const ArrayRef& a) const;

 private:
  Device device_;
  Dtype dtype_;
  bool read_only_;
  int ndim_;
  // Each dimension's extent, then its stride: a call's first dimensions are compared from
  // memory that lies together.
  int64_t dims_[2 * kMaxNdim] = {};
};

/// A launch as a bound kernel's call made it, with the layouts of that call's arrays.
struct RecordedLaunch {
  std::optional<Device> device_asked;  // the call's LaunchOptions::device
  Device device;                       // where the kernel ran
  size_t n_inputs;
  bool outputs_given;               // else made by the call
  std::vector<ArrayLayout> arrays;  // the inputs', then those of the outputs given
  cuda::PreparedLaunch launch;

  /// Whether a call on |inputs| and |outputs| (given, or none), asked to run on |asked|, would
  /// make this launch.
  bool matches(std::span<const ArrayRef> inputs, std::optional<std::span<const ArrayRef>> outputs,
               const std::optional<Device>& asked) const;
  /// Launches again, on |stream|, on arrays that matches() accepted (with the outputs made, for
  /// a launch that made them).
  void run_again(std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs,
                 uintptr_t stream) const;
};

/// A bound kernel's last recorded launches: one that wrote outputs given to it, one that made
/// them. Shared by the copies of a bound kernel, which make the same launches.
class RecordedLaunches {
 public:
  /// Makes |bound|'s last recorded launch of the same kind again, on |stream|, when a call on
  /// |inputs| and |outputs| (given, or none to make them) asked to run on |device| would make
  /// it: returns the outputs made (none when given). Nothing, having done nothing, otherwise.
  static std::optional<std::vector<Array>> run(const BoundKernel& bound,
                                               std::span<const ArrayRef> inputs,
                                               std::optional<std::span<const ArrayRef>> outputs,
                                               const std::optional<Device>& device,
                                               uintptr_t stream);
  /// |bound|'s last recorded launch of the kind a call on |inputs| and |outputs| (given, or none
  /// to make them) asked to run on |device| makes, when that call would make it; else null.
  static std::shared_ptr<const RecordedLaunch> find(
      const BoundKernel& bound, std::span<const ArrayRef> inputs,
      std::optional<std::span<const ArrayRef>> outputs, const std::optional<Device>& device);
  /// Keeps |launch| as |bound|'s last recorded launch of its kind.
  static void keep(const BoundKernel& bound, std::shared_ptr<const RecordedLaunch> launch);

 private:
  std::mutex mutex_;
  std::shared_ptr<const RecordedLaunch> last_[2];  // indexed by whether outputs were given
};

/// Fresh row-contiguous outputs of |spec|'s kernel on |device| for work on |stream|; running
/// out of memory is said of the output that did not fit.
std::vector<Array> make_outputs(const KernelSpec& spec, const std::vector<Shape>& shapes,
                                const std::vector<Dtype>& dtypes, const Device& device,
                                uintptr_t stream);

}  // namespace kjit
