// The call pipeline: every launch, from a keyword call, a bound call or a launch made again,
// goes through these stages.
//   resolve          checks the arrays against the kernel, finds the device and the plan
//   prepare_outputs  the caller's outputs, checked, or fresh ones; the init value's fill
//   stage_inputs     inputs copied to the device, or made row-contiguous, where needed
//   dispatch         the launch prepared for the arrays' layouts, and run
// A bound kernel keeps what its settings fix (checked once), and its recorded launches
// (launch_record.h) skip to running a prepared launch.
#pragma once

#include <kjit/array.h>
#include <kjit/kernel.h>

#include <memory>
#include <span>
#include <vector>

#include "codegen/kernel_spec.h"
#include "core/array_ref.h"
#include "core/backend.h"
#include "core/call_settings.h"
#include "core/launch_dims.h"
#include "core/plan.h"

namespace kjit {

class RecordedLaunches;
struct CallRecord;

/// Where and how a call runs, once its arrays have been checked.
struct ResolvedCall {
  Device device;
  const Plan* plan;
  LaunchDims dims;
};

/// The device a call on |inputs| runs on: |requested|, else where its arrays (not its 0-d
/// inputs) live, else the default device. Arrays on two devices are an error. A precompiled
/// kernel's arrays on the host go to the default device.
Device resolve_device(const KernelSpec& spec, std::span<const Array> inputs,
                      const std::optional<Device>& requested);

/// The launch sizes of |grid| in groups of |threadgroup| (edge groups partial).
LaunchDims launch_dims(Dim3 grid, Dim3 threadgroup);

/// Stage 1: checks |inputs| (count, validity, device, sizes) and the outputs given in
/// |options|, finds the device and the plan (building it on first use).
ResolvedCall resolve(const std::shared_ptr<const KernelSpec>& spec, PlanCache& plans,
                     const CallSettings& settings, std::span<const Array> inputs,
                     const LaunchOptions& options);

/// The arrays a kernel writes: the caller's outputs, or copies of those on another device
/// (copied back by finish_outputs), or fresh ones.
struct KernelOutputs {
  std::vector<Array> arrays;  // empty when the caller's are written in place
  bool moved = false;         // some of the caller's outputs are elsewhere
  const std::vector<Array>& written(const LaunchOptions& options) const {
    return options.outputs && !moved ? *options.outputs : arrays;
  }
};

/// Stage 2: checks the outputs given against the settings, or makes them; fills them with the
/// init value.
KernelOutputs prepare_outputs(const KernelSpec& spec, const CallSettings& settings,
                              const ResolvedCall& call, const LaunchOptions& options);

/// Fresh row-contiguous outputs on |device| for work on |stream|; running out of memory, or
/// memory refused (LaunchError), is said of the output that did not get it.
std::vector<Array> make_outputs(const KernelSpec& spec, const std::vector<Shape>& shapes,
                                const std::vector<Dtype>& dtypes, const Device& device,
                                uintptr_t stream);

/// Rethrows the OutOfMemory or LaunchError that making output |o| raised as one that names it.
[[noreturn]] void rethrow_for_output(const KernelSpec& spec, size_t o);

/// Stage 3: the inputs as the kernel reads them, on its device and row-contiguous when the
/// kernel asks; empty when the inputs serve as they are (most calls).
std::vector<Array> stage_inputs(const KernelSpec& spec, const ResolvedCall& call,
                                std::span<const Array> inputs, uintptr_t stream);

/// Stage 4: prepares the launch for these arrays' layouts and runs it on |stream|. Returns the
/// prepared launch, which may run again on arrays laid out alike.
std::unique_ptr<const PreparedLaunch> dispatch(const KernelSpec& spec, const ResolvedCall& call,
                                               std::span<const ArrayRef> inputs,
                                               std::span<const ArrayRef> outputs, uintptr_t stream,
                                               bool fresh_outputs);

/// Runs a prepared launch (checked, for a debug build: core/debug_launch.h); its errors name
/// the kernel. |fresh_outputs|: the outputs hold nothing the kernel may read (kjit made them
/// and no init value filled them).
void run_launch(const KernelSpec& spec, const PreparedLaunch& launch,
                std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs,
                uintptr_t stream, bool fresh_outputs);

/// The caller's outputs that live elsewhere get what the kernel wrote.
void finish_outputs(const KernelOutputs& outputs, const ResolvedCall& call,
                    const LaunchOptions& options);

/// One call through every stage. With |recorded|, a launch that used the arrays as given and
/// did nothing but launch is kept there, to be made again on arrays laid out alike.
std::vector<Array> run_pipeline(const std::shared_ptr<const KernelSpec>& spec, PlanCache& plans,
                                const CallSettings& settings, const std::vector<Array>& inputs,
                                const LaunchOptions& options, const RecordedLaunches* recorded);

/// A call of |record|'s settings: what the last such call of its kind launched, made again when
/// the arrays are laid out as that call's were; else the whole pipeline, whose launch is kept
/// in |record| when |keep|.
std::vector<Array> run_call(PlanCache& plans, const CallRecord& record,
                            const std::vector<Array>& inputs, const LaunchOptions& options,
                            bool keep = true);

}  // namespace kjit
