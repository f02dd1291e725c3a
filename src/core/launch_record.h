// A bound kernel's launches, kept for its next calls: a call on arrays laid out as a recorded
// call's were does only what depends on the arrays themselves (their addresses, the values of
// 0-d inputs), as its checks, plan and prepared launch depend on the layouts alone.
#pragma once

#include <kjit/array.h>
#include <kjit/kernel.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "codegen/kernel_spec.h"
#include "core/array_ref.h"
#include "core/backend.h"
#include "core/call_settings.h"

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
  bool outputs_given;                  // else made by the call
  std::vector<ArrayLayout> inputs;
  std::vector<ArrayLayout> outputs;   // those given; none when made
  std::vector<Strides> made_strides;  // the row-contiguous strides of the outputs made
  std::unique_ptr<const PreparedLaunch> launch;

  /// Whether a call on |inputs| and |outputs| (given, or none), asked to run on |asked|, would
  /// make this launch.
  bool matches(std::span<const ArrayRef> inputs, std::optional<std::span<const ArrayRef>> outputs,
               const std::optional<Device>& asked) const;
};

/// Gives output |o|'s memory for a launch made again, laid out as |layout| says (its data
/// null); throws OutOfMemory when there is none.
using OutputMemory = std::function<void*(size_t o, const ArrayRef& layout)>;

/// A bound kernel's last recorded launches: one that wrote outputs given to it, one that made
/// them. Shared by the copies of a bound kernel, which make the same launches.
class RecordedLaunches {
 public:
  /// Makes the last recorded launch of the same kind again, on |stream|, when a call of |spec|'s
  /// kernel with |settings| on |inputs| and |outputs| (given, or none to make them) asked to run
  /// on |device| would make it: returns the outputs made (none when given). Nothing, having
  /// done nothing, otherwise.
  std::optional<std::vector<Array>> run(const KernelSpec& spec, const CallSettings& settings,
                                        std::span<const ArrayRef> inputs,
                                        std::optional<std::span<const ArrayRef>> outputs,
                                        const std::optional<Device>& device, uintptr_t stream);
  /// The same for a call that makes its outputs, with their memory from |memory| rather than
  /// Arrays: returns whether it ran. |made| receives the outputs as the launch wrote them.
  bool run_into(const KernelSpec& spec, const CallSettings& settings,
                std::span<const ArrayRef> inputs, const std::optional<Device>& device,
                uintptr_t stream, const OutputMemory& memory, std::span<ArrayRef> made);
  /// Keeps |launch| as the last recorded launch of its kind.
  void keep(std::shared_ptr<const RecordedLaunch> launch);

  /// run for |bound|'s call.
  static std::optional<std::vector<Array>> run(const BoundKernel& bound,
                                               std::span<const ArrayRef> inputs,
                                               std::optional<std::span<const ArrayRef>> outputs,
                                               const std::optional<Device>& device,
                                               uintptr_t stream);
  /// run_into for |bound|'s call.
  static bool run_into(const BoundKernel& bound, std::span<const ArrayRef> inputs,
                       const std::optional<Device>& device, uintptr_t stream,
                       const OutputMemory& memory, std::span<ArrayRef> made);
  /// The settings |bound| fixes.
  static CallSettings settings_of(const BoundKernel& bound);

 private:
  std::shared_ptr<const RecordedLaunch> find(std::span<const ArrayRef> inputs,
                                             std::optional<std::span<const ArrayRef>> outputs,
                                             const std::optional<Device>& device);

  std::mutex mutex_;
  std::shared_ptr<const RecordedLaunch> last_[2];  // indexed by whether outputs were given
};

}  // namespace kjit
