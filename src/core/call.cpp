#include "core/call.h"

#include <kjit/errors.h>

#include <algorithm>
#include <iostream>

#include "codegen/mlx_source.h"
#include "core/debug_launch.h"
#include "core/device_ops.h"
#include "core/launch_record.h"

namespace kjit {

Device resolve_device(const KernelSpec& spec, std::span<const Array> inputs,
                      const std::optional<Device>& requested) {
  std::optional<Device> found;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].ndim() == 0) continue;  // scalars go wherever the kernel runs
    if (found && !(*found == inputs[i].device())) {
      throw ValueError(prefix_named(spec) + "inputs: arrays on different devices (" + found->str() +
                       " and " + inputs[i].device().str() + " for '" + spec.input_names[i] + "')");
    }
    found = inputs[i].device();
  }
  if (requested) return *requested;
  // A precompiled kernel is GPU code: arrays on the host are copied to the first GPU.
  if (spec.dialect == Dialect::Precompiled && found && found->type == DeviceType::CPU) {
    return default_device();
  }
  return found ? *found : default_device();
}

LaunchDims launch_dims(Dim3 grid, Dim3 threadgroup) {
  const int64_t g[3] = {grid.x, grid.y, grid.z};
  const int64_t t[3] = {threadgroup.x, threadgroup.y, threadgroup.z};
  LaunchDims dims;
  for (int d = 0; d < 3; ++d) {
    dims.grid[d] = static_cast<unsigned>(g[d]);
    dims.group[d] = static_cast<unsigned>(std::max<int64_t>(1, std::min(t[d], g[d])));
    dims.groups[d] = static_cast<unsigned>((g[d] + dims.group[d] - 1) / dims.group[d]);
    dims.threadgroup[d] = static_cast<unsigned>(t[d]);
  }
  return dims;
}

ResolvedCall resolve(const std::shared_ptr<const KernelSpec>& spec_ptr, PlanCache& plans,
                     const CallSettings& settings, std::span<const Array> inputs,
                     const LaunchOptions& options) {
  const KernelSpec& spec = *spec_ptr;
  const size_t n_in = spec.input_names.size(), n_out = spec.output_names.size();
  check_count(spec, "inputs", spec.input_names, inputs.size());
  const Device device = resolve_device(spec, inputs, options.device);
  const Dim3 t = settings.threadgroup;
  const int64_t max_threads = backend_for(device.type).max_threads_per_group(device.index);
  if (t.x * t.y * t.z > max_threads) {
    throw ValueError(prefix_named(spec) + "threadgroup: (" + std::to_string(t.x) + ", " +
                     std::to_string(t.y) + ", " + std::to_string(t.z) + ") has " +
                     std::to_string(t.x * t.y * t.z) + " threads; at most " +
                     std::to_string(max_threads) + " are allowed per threadgroup");
  }
  // Each array given: not empty, and not on another GPU (a copy between two devices' streams
  // could not be ordered with the work queued on either).
  auto check_array = [&](const Array& a, const char* list, size_t i,
                         const std::vector<std::string>& names) {
    auto what = [&] {
      return prefix_named(spec) + list + "[" + std::to_string(i) + "] ('" + names[i] + "')";
    };
    if (!a.valid()) throw ValueError(what() + " is an empty Array");
    if (device.type == DeviceType::CUDA && a.device().type == DeviceType::CUDA &&
        !(a.device() == device)) {
      throw ValueError(what() + " is on " + a.device().str() + " but the kernel runs on " +
                       device.str() + "; move it there first");
    }
  };
  for (size_t i = 0; i < n_in; ++i) check_array(inputs[i], "inputs", i, spec.input_names);
  for (size_t o = 0; options.outputs && o < std::min(n_out, options.outputs->size()); ++o) {
    check_array((*options.outputs)[o], "outputs", o, spec.output_names);
  }
  for (size_t i = 0; i < n_in; ++i) {
    const Array& a = inputs[i];
    for (int d = 0; d < a.ndim(); ++d) {
      if (a.shape(d) > 0x7fffffff && spec.input_uses[i].shape) {
        throw ValueError(prefix_named(spec) + "inputs[" + std::to_string(i) +
                         "]: a dimension over 2^31-1 cannot be passed as " + spec.input_names[i] +
                         "_shape");
      }
    }
  }
  const Plan* plan = plans.find(
      device, n_in,
      [&](size_t i) {
        return std::pair{inputs[i].dtype(), inputs[i].ndim()};
      },
      settings.output_dtypes, settings.template_args);
  if (!plan) {
    // A plan's arguments were checked when it was made.
    check_template_args(spec, settings.template_args);
    codegen::CallSignature sig;
    for (const Array& a : inputs) sig.inputs.emplace_back(a.dtype(), a.ndim());
    sig.outputs = settings.output_dtypes;
    sig.template_args = settings.template_args;
    plan = plans.add(build_plan(spec_ptr, std::move(sig), device));
  }
  return {device, plan, launch_dims(settings.grid, settings.threadgroup)};
}

std::vector<Array> make_outputs(const KernelSpec& spec, const std::vector<Shape>& shapes,
                                const std::vector<Dtype>& dtypes, const Device& device,
                                uintptr_t stream) {
  std::vector<Array> outputs;
  outputs.reserve(shapes.size());
  for (size_t o = 0; o < shapes.size(); ++o) {
    try {
      outputs.push_back(make_array(shapes[o], dtypes[o], device, stream));
    } catch (...) {
      rethrow_for_output(spec, o);
    }
  }
  return outputs;
}

void rethrow_for_output(const KernelSpec& spec, size_t o) {
  const std::string what = prefix_named(spec) + "output_shapes[" + std::to_string(o) + "] ('" +
                           spec.output_names[o] + "'): ";
  try {
    throw;
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(what + e.what());
  } catch (const Interrupted&) {
    throw;
  } catch (const LaunchError& e) {
    throw LaunchError(what + e.what());
  }
}

namespace {

// The caller's outputs: of the settings' dtypes and shapes, writable and row-contiguous.
void check_outputs_given(const KernelSpec& spec, const CallSettings& settings,
                         const std::vector<Array>& given) {
  const size_t n_out = spec.output_names.size();
  check_count(spec, "outputs", spec.output_names, given.size());
  for (size_t o = 0; o < n_out; ++o) {
    const Array& a = given[o];
    auto what = [&] {
      return "outputs[" + std::to_string(o) + "] ('" + spec.output_names[o] + "')";
    };
    const Dtype dtype = settings.output_dtypes[o];
    const Shape& shape = settings.output_shapes[o];
    if (a.dtype() != dtype) {
      throw ValueError(prefix_named(spec) + what() + " has dtype " +
                       std::string(dtype_name(a.dtype())) + " but output_dtypes says " +
                       std::string(dtype_name(dtype)));
    }
    if (!std::equal(a.shape().begin(), a.shape().end(), shape.begin(), shape.end())) {
      throw ValueError(prefix_named(spec) + what() + " does not have the shape output_shapes[" +
                       std::to_string(o) + "] gives");
    }
    if (a.read_only()) throw ValueError(prefix_named(spec) + what() + " is read-only");
    if (!a.is_row_contiguous()) {
      throw ValueError(prefix_named(spec) + what() + " must be row-contiguous");
    }
  }
}

}  // namespace

KernelOutputs prepare_outputs(const KernelSpec& spec, const CallSettings& settings,
                              const ResolvedCall& call, const LaunchOptions& options) {
  KernelOutputs outputs;
  if (options.outputs) {
    const std::vector<Array>& given = *options.outputs;
    check_outputs_given(spec, settings, given);
    // Outputs elsewhere (NumPy arrays for a GPU kernel) are copied over and back; the kernel
    // writes the others in place.
    outputs.moved = std::any_of(given.begin(), given.end(),
                                [&](const Array& a) { return !(a.device() == call.device); });
    if (outputs.moved) {
      for (const Array& a : given) {
        outputs.arrays.push_back(
            a.device() == call.device ? a : to_contiguous(a, call.device, options.stream));
      }
    }
  } else {
    outputs.arrays = make_outputs(spec, settings.output_shapes, settings.output_dtypes, call.device,
                                  options.stream);
  }
  if (settings.init_value) {
    const double value = *settings.init_value;
    const std::vector<Array>& written = outputs.written(options);
    for (size_t o = 0; o < written.size(); ++o) {
      const Dtype dtype = written[o].dtype();
      if (in_range(dtype, value)) continue;
      throw ValueError(prefix_named(spec) + "init_value (for outputs[" + std::to_string(o) +
                       "] ('" + spec.output_names[o] + "')): " + out_of_range(dtype, value));
    }
    for (const Array& a : written) fill(a, value, options.stream);
  }
  return outputs;
}

std::vector<Array> stage_inputs(const KernelSpec& spec, const ResolvedCall& call,
                                std::span<const Array> inputs, uintptr_t stream) {
  // A 0-d input is passed by value, which a GPU kernel reads from either side, and a CPU
  // kernel from host memory only. A precompiled kernel takes every input by its address.
  const Device& device = call.device;
  auto needs_copy = [&](const Array& a) {
    if (a.ndim() == 0 && spec.dialect != Dialect::Precompiled) {
      return device.type == DeviceType::CPU && !(a.device() == device);
    }
    return !(a.device() == device) || (spec.ensure_row_contiguous && !a.is_row_contiguous());
  };
  std::vector<Array> staged;
  if (std::none_of(inputs.begin(), inputs.end(), needs_copy)) return staged;
  staged.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Array& a = inputs[i];
    try {
      staged.push_back(needs_copy(a) ? to_contiguous(a, device, stream) : a);
    } catch (const Interrupted&) {
      throw;
    } catch (const LaunchError& e) {
      // A copy the stream refuses (one capturing a CUDA graph): say which input needs it.
      throw LaunchError(prefix_named(spec) + "inputs[" + std::to_string(i) + "] ('" +
                        spec.input_names[i] + "') is copied for the kernel on " + device.str() +
                        ": " + e.what());
    }
  }
  return staged;
}

void run_launch(const KernelSpec& spec, const PreparedLaunch& launch,
                std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs,
                uintptr_t stream, bool fresh_outputs) {
  try {
    if (spec.compile_options.debug) {
      run_debug_launch(spec, launch, inputs, outputs, stream, fresh_outputs);
    } else {
      launch.run(inputs, outputs, stream);
    }
  } catch (const LaunchError&) {
    rethrow_named(spec);
  }
}

std::unique_ptr<const PreparedLaunch> dispatch(const KernelSpec& spec, const ResolvedCall& call,
                                               std::span<const ArrayRef> inputs,
                                               std::span<const ArrayRef> outputs, uintptr_t stream,
                                               bool fresh_outputs) {
  std::unique_ptr<const PreparedLaunch> launch =
      call.plan->program->prepare({inputs, outputs, call.dims, stream});
  run_launch(spec, *launch, inputs, outputs, stream, fresh_outputs);
  return launch;
}

void finish_outputs(const KernelOutputs& outputs, const ResolvedCall& call,
                    const LaunchOptions& options) {
  if (!outputs.moved) return;
  for (size_t o = 0; o < options.outputs->size(); ++o) {
    const Array& given = (*options.outputs)[o];
    if (!(given.device() == call.device)) copy_into(given, outputs.arrays[o], options.stream);
  }
}

namespace {

// The kernel as MLX would generate it for these inputs, as MLX prints it, then the source kjit
// compiles for the device (without its prelude), each under its own heading.
void print_source(const KernelSpec& spec, const Plan& plan, std::span<const Array> inputs,
                  const LaunchOptions& options) {
  std::vector<int64_t> sizes;
  for (const Array& a : inputs) sizes.push_back(a.size());
  std::string text = "Generated source code for `" + spec.name + "` (as MLX generates it):\n```\n" +
                     codegen::mlx_source(spec, plan.signature, sizes) + "\n```\n" +
                     "Source kjit compiles for `" + spec.name + "` on " + plan.device.str() +
                     ":\n```\n" + plan.source->text.substr(plan.source->user_part) + "```\n";
  if (plan.device.type == DeviceType::CPU) {
    text += "On the CPU its threads run in " +
            std::string(codegen::cpu_mode_name(plan.source->cpu_mode)) +
            " mode: " + plan.source->cpu_mode_reason + ".\n";
  }
  if (options.print) {
    options.print(text);
  } else {
    std::cout << text << std::flush;
  }
}

}  // namespace

std::vector<Array> run_pipeline(const std::shared_ptr<const KernelSpec>& spec, PlanCache& plans,
                                const CallSettings& settings, const std::vector<Array>& inputs,
                                const LaunchOptions& options, const RecordedLaunches* recorded) {
  const ResolvedCall call = resolve(spec, plans, settings, inputs, options);
  if (settings.verbose) print_source(*spec, *call.plan, inputs, options);
  KernelOutputs outputs = prepare_outputs(*spec, settings, call, options);
  const std::vector<Array> staged = stage_inputs(*spec, call, inputs, options.stream);
  const std::vector<Array>& kernel_inputs = staged.empty() ? inputs : staged;
  const std::vector<Array>& kernel_outputs = outputs.written(options);
  const auto in = refs_of(kernel_inputs), out = refs_of(kernel_outputs);
  std::unique_ptr<const PreparedLaunch> launch =
      dispatch(*spec, call, in, out, options.stream, !options.outputs && !settings.init_value);
  if (recorded && staged.empty() && !outputs.moved && !settings.init_value && !settings.verbose) {
    recorded->keep(RecordedLaunch::of(call, options, in, out, std::move(launch)));
  }
  finish_outputs(outputs, call, options);
  return options.outputs ? *options.outputs : std::move(outputs.arrays);
}

std::vector<Array> run_call(PlanCache& plans, const CallRecord& record,
                            const std::vector<Array>& inputs, const LaunchOptions& options,
                            bool keep) {
  const auto in = refs_of(inputs);
  std::optional<SmallVector<ArrayRef, 16>> out;
  if (options.outputs) out = refs_of(*options.outputs);
  if (std::optional<std::vector<Array>> made =
          record.run_again(in, out ? std::optional<std::span<const ArrayRef>>(*out) : std::nullopt,
                           options.device, options.stream)) {
    return options.outputs ? *options.outputs : *std::move(made);
  }
  return run_pipeline(record.spec, plans, record.settings.view(), inputs, options,
                      keep ? &record.launches : nullptr);
}

}  // namespace kjit
