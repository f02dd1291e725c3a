// A call's launches, kept for the next calls of the same settings: a call on arrays laid out as
// a recorded call's were does only what depends on the arrays themselves (their addresses, the
// values of 0-d inputs), as its checks, plan and prepared launch depend on the layouts alone.
#pragma once

#include <kjit/array.h>
#include <kjit/kernel.h>

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "codegen/kernel_spec.h"
#include "core/array_ref.h"
#include "core/backend.h"
#include "core/call.h"
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

/// A launch as a call made it, with the layouts of that call's arrays.
struct RecordedLaunch {
  std::optional<Device> device_asked;  // the call's LaunchOptions::device
  Device device;                       // where the kernel ran
  bool outputs_given;                  // else made by the call
  std::vector<ArrayLayout> inputs;
  std::vector<ArrayLayout> outputs;   // those given; none when made
  std::vector<Strides> made_strides;  // the row-contiguous strides of the outputs made
  std::unique_ptr<const PreparedLaunch> launch;

  /// The record of |launch|, which |call| ran on |inputs| and |outputs| as given (made by the
  /// call when |options| gives none).
  static std::shared_ptr<const RecordedLaunch> of(const ResolvedCall& call,
                                                  const LaunchOptions& options,
                                                  std::span<const ArrayRef> inputs,
                                                  std::span<const ArrayRef> outputs,
                                                  std::unique_ptr<const PreparedLaunch> launch);

  /// Whether a call on |inputs| and |outputs| (given, or none), asked to run on |asked|, would
  /// make this launch.
  bool matches(std::span<const ArrayRef> inputs, std::optional<std::span<const ArrayRef>> outputs,
               const std::optional<Device>& asked) const;
};

/// A call's last recorded launches: one that wrote outputs given to it, one that made them.
class RecordedLaunches {
 public:
  /// The last recorded launch of the kind a call on |inputs| and |outputs| (given, or none to
  /// make them) asked to run on |device| makes, when that call would make it; else null.
  std::shared_ptr<const RecordedLaunch> find(std::span<const ArrayRef> inputs,
                                             std::optional<std::span<const ArrayRef>> outputs,
                                             const std::optional<Device>& device) const;
  /// Keeps |launch| as the last recorded launch of its kind.
  void keep(std::shared_ptr<const RecordedLaunch> launch) const;

 private:
  mutable std::mutex mutex_;
  mutable std::shared_ptr<const RecordedLaunch> last_[2];  // indexed by whether outputs were given
};

/// Memory for the outputs of a launch made again, from its caller (the binding hands out blocks
/// that its library's arrays will hold).
class OutputMemory {
 public:
  /// Output |o|'s memory, laid out as |layout| says (its data null; its shape and strides valid
  /// during the call only), or null when there is none: then nothing is launched.
  virtual void* provide(size_t o, const ArrayRef& layout) = 0;

 protected:
  ~OutputMemory() = default;
};

/// A call's settings, owned, with the launches calls of those settings recorded: what a bound
/// kernel keeps, and a kernel for its last keyword call's settings. Shared by the copies of a
/// bound kernel, which make the same launches.
struct CallRecord {
  std::shared_ptr<const KernelSpec> spec;
  OwnedSettings settings;
  RecordedLaunches launches;

  /// Makes the last recorded launch of the same kind again, on |stream|, when a call on
  /// |inputs| and |outputs| (given, or none to make them) asked to run on |device| would make
  /// it: returns the outputs made (none when given). Nothing, having done nothing, otherwise.
  std::optional<std::vector<Array>> run_again(std::span<const ArrayRef> inputs,
                                              std::optional<std::span<const ArrayRef>> outputs,
                                              const std::optional<Device>& device,
                                              uintptr_t stream) const;
  /// The same for a call that makes its outputs, with their memory from |memory| rather than
  /// Arrays: returns whether it ran.
  bool run_again_into(std::span<const ArrayRef> inputs, const std::optional<Device>& device,
                      uintptr_t stream, OutputMemory& memory) const;

  /// What |bound| keeps.
  static const CallRecord& of(const BoundKernel& bound) { return *bound.record_; }
  /// What |kernel| keeps for its last keyword call, when that call's settings were |settings|;
  /// else null.
  static std::shared_ptr<const CallRecord> of_keyword_call(const Kernel& kernel,
                                                           const CallSettings& settings);
};

}  // namespace kjit
