#include <kjit/errors.h>
#include <kjit/kernel.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <set>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "codegen/kernel_spec.h"
#include "codegen/source.h"
#include "core/device_ops.h"
#include "core/launch_record.h"
#include "core/shape_check.h"

namespace kjit {
namespace {

constexpr int64_t kMaxThreadsPerGroup = 1024;
constexpr int64_t kMaxGridDim = 0xffffffffll;

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

struct Plan {
  codegen::CallSignature signature;
  Device device;
  codegen::GeneratedSource source;
  std::shared_ptr<const cpu::Module> cpu_module;
  mutable cuda::EntryPoints cuda_entry_points;  // built as launches need them
};

}  // namespace

struct Kernel::State {
  std::mutex mutex;
  std::vector<std::shared_ptr<const Plan>> plans;  // only ever added to
  // The plan found last: a loop's calls find theirs here, without the lock. It points into
  // |plans|, which keeps it.
  std::atomic<const Plan*> last{nullptr};

  // The plan for |device|, |outputs|, |targs| and |n| inputs whose dtype and ndim |input(i)|
  // gives. The hot path passes its arrays, so that the lookup builds nothing.
  template <class Input>
  const Plan* find(const Device& device, size_t n, Input input, const std::vector<Dtype>& outputs,
                   const TemplateArgs& targs) {
    auto fits = [&](const Plan& p) {
      const codegen::CallSignature& s = p.signature;
      if (!(p.device == device) || s.inputs.size() != n || s.outputs != outputs ||
          s.template_args != targs) {
        return false;
      }
      for (size_t i = 0; i < n; ++i) {
        if (!(s.inputs[i] == input(i))) return false;
      }
      return true;
    };
    const Plan* recent = last.load(std::memory_order_acquire);
    if (recent && fits(*recent)) return recent;
    std::lock_guard lock(mutex);
    for (const auto& p : plans) {
      if (fits(*p)) {
        last.store(p.get(), std::memory_order_release);
        return p.get();
      }
    }
    return nullptr;
  }

  const Plan* find(const codegen::CallSignature& sig, const Device& device) {
    return find(
        device, sig.inputs.size(), [&](size_t i) { return sig.inputs[i]; }, sig.outputs,
        sig.template_args);
  }

  const Plan* add(std::shared_ptr<const Plan> plan) {
    std::lock_guard lock(mutex);
    plans.push_back(std::move(plan));
    last.store(plans.back().get(), std::memory_order_release);
    return plans.back().get();
  }
};

Kernel::Kernel(std::shared_ptr<const KernelSpec> spec)
    : spec_(std::move(spec)), state_(std::make_shared<State>()) {}
Kernel::~Kernel() = default;

const std::string& Kernel::name() const { return spec_->name; }
const std::vector<std::string>& Kernel::input_names() const { return spec_->input_names; }
const std::vector<std::string>& Kernel::output_names() const { return spec_->output_names; }
const char* Kernel::api() const { return spec_->api(); }

namespace {

void check_template_args(const KernelSpec& spec, const TemplateArgs& args) {
  std::set<std::string> seen;
  for (const auto& [name, value] : args) {
    check_usable_name(prefix_named(spec) + "template", name, spec.dialect);
    if (!seen.insert(name).second) {
      throw ValueError(prefix_named(spec) + "template: the name '" + name +
                       "' is given more than once");
    }
    auto clash = [&](const std::vector<std::string>& v) {
      return std::find(v.begin(), v.end(), name) != v.end();
    };
    if (clash(spec.input_names) || clash(spec.output_names)) {
      throw ValueError(prefix_named(spec) + "template: '" + name +
                       "' is also the name of an input or output");
    }
    if (const std::string clash = input_attribute_named(spec.input_names, name); !clash.empty()) {
      throw ValueError(prefix_named(spec) + "template: '" + name + "' is the name of " + clash);
    }
  }
}

// Metal has 32-bit atomics only (int, uint, float).
void check_atomic_outputs(const KernelSpec& spec, const std::vector<Dtype>& outputs) {
  if (!spec.atomic_outputs || spec.dialect != Dialect::Metal) return;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Dtype d = outputs[o];
    if (d != Dtype::Int32 && d != Dtype::UInt32 && d != Dtype::Float32) {
      throw ValueError(prefix_named(spec) + "output_dtypes[" + std::to_string(o) +
                       "]: " + std::string(dtype_name(d)) +
                       " outputs cannot be atomic (atomic_outputs=True needs int32, uint32 or "
                       "float32, as on Metal)");
    }
  }
}

void check_cuda_device(const KernelSpec& spec, const Device& device) {
  std::string reason = cuda::unavailable_reason();
  if (!reason.empty()) {
    throw ValueError(prefix_named(spec) + "device: " + device.str() +
                     " is not available: " + reason);
  }
  if (device.index >= cuda::device_count()) {
    throw ValueError(prefix_named(spec) + "device: " + device.str() +
                     " is not available: there are " + std::to_string(cuda::device_count()) +
                     " CUDA device(s) here");
  }
}

// The launch error being handled, thrown again with the kernel's name before its message, and
// of the same type.
[[noreturn]] void rethrow_named(const KernelSpec& spec) {
  try {
    throw;
  } catch (const Interrupted& e) {
    throw Interrupted(prefix_named(spec) + e.what());
  } catch (const LaunchError& e) {
    throw LaunchError(prefix_named(spec) + e.what());
  }
}

std::shared_ptr<const Plan> build_plan(const KernelSpec& spec, codegen::CallSignature sig,
                                       const Device& device) {
  const bool gpu = device.type == DeviceType::CUDA;
  const codegen::Target target = gpu ? codegen::Target::Cuda : codegen::Target::Cpu;
  if (gpu) check_cuda_device(spec, device);
  check_atomic_outputs(spec, sig.outputs);
  auto plan = std::make_shared<Plan>();
  plan->source = codegen::generate(spec, sig, target);
  if (!gpu) {
    try {
      try {
        plan->cpu_module = cpu::build(spec, plan->source.text);
      } catch (const CompileError&) {
        if (plan->source.cpu_mode != codegen::CpuMode::Regions) throw;
        // Region mode's rewriting of a body with barriers may not suit every body: cooperative
        // mode runs it, and reports its errors against the user's lines.
        plan->source = codegen::generate(
            spec, sig, codegen::coroutine_mode(spec, "region mode's rewriting did not compile"));
        plan->cpu_module = cpu::build(spec, plan->source.text);
      }
    } catch (const Interrupted&) {  // a compile SIGINT ended
      rethrow_named(spec);
    }
  }
  plan->signature = std::move(sig);
  plan->device = device;
  return plan;
}

Device resolve_device(const KernelSpec& spec, const std::vector<Array>& inputs,
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
  return found ? *found : default_device();
}

}  // namespace

void Kernel::build(const std::vector<std::pair<Dtype, int>>& input_dtypes_ndims,
                   const std::vector<Dtype>& output_dtypes, const TemplateArgs& template_args,
                   const std::string& target) const {
  const KernelSpec& spec = *spec_;
  if (input_dtypes_ndims.size() != spec.input_names.size()) {
    throw ValueError(prefix_named(spec) + "inputs: expected " +
                     std::to_string(spec.input_names.size()) + " (" + join(spec.input_names) +
                     "), got " + std::to_string(input_dtypes_ndims.size()));
  }
  if (output_dtypes.size() != spec.output_names.size()) {
    throw ValueError(prefix_named(spec) + "output_dtypes: expected " +
                     std::to_string(spec.output_names.size()) + ", got " +
                     std::to_string(output_dtypes.size()));
  }
  for (const auto& [dtype, ndim] : input_dtypes_ndims) {
    if (ndim < 0 || ndim > kMaxNdim) {
      throw ValueError(prefix_named(spec) + "inputs: ndim must be in [0, 10], got " +
                       std::to_string(ndim));
    }
  }
  check_template_args(spec, template_args);
  codegen::CallSignature sig{input_dtypes_ndims, output_dtypes, template_args};
  const std::string bad_target = prefix_named(spec) +
                                 "target: expected 'cpu', 'cuda', 'cuda:N' or 'sm_XY', got '" +
                                 target + "'";
  // An explicit architecture ("sm_90") compiles into the disk cache, no GPU needed.
  if (target.rfind("sm_", 0) == 0) {
    int cc = 0;
    try {
      size_t used = 0;
      cc = std::stoi(target.substr(3), &used);
      if (used != target.size() - 3) cc = 0;
    } catch (const std::exception&) {
    }
    if (cc < 30 || cc > 200) {
      // sm_90a and the like: code for one chip alone, which kjit's launches never ask for.
      const bool one_chip = target.size() > 4 &&
                            std::isdigit(static_cast<unsigned char>(target[target.size() - 2])) &&
                            std::isalpha(static_cast<unsigned char>(target.back()));
      throw ValueError(bad_target +
                       (one_chip ? " (kjit compiles for sm_XY, not sm_XYa or sm_XYf)" : ""));
    }
    check_atomic_outputs(spec, sig.outputs);
    const codegen::GeneratedSource source = codegen::generate(spec, sig, codegen::Target::Cuda);
    try {
      cuda::build_offline(spec, source, cc);
    } catch (const ValueError& e) {
      // An architecture this NVRTC cannot compile for.
      throw ValueError(prefix_named(spec) + "target: " + e.what());
    }
    return;
  }
  Device device;
  try {
    device = Device::parse(target);
  } catch (const ValueError&) {
    throw ValueError(bad_target);
  }
  const Plan* plan = state_->find(sig, device);
  if (!plan) plan = state_->add(build_plan(spec, std::move(sig), device));
  // Every way it may be launched.
  if (device.type == DeviceType::CUDA) {
    plan->cuda_entry_points.build_all(spec, plan->source, device.index);
  }
}

namespace {

// The checks of a call's settings, which do not depend on its arrays.
void check_settings(const KernelSpec& spec, const std::vector<Shape>& output_shapes,
                    const std::vector<Dtype>& output_dtypes, Dim3 grid, Dim3 threadgroup) {
  const size_t n_out = spec.output_names.size();
  if (output_shapes.size() != n_out) {
    throw ValueError(prefix_named(spec) + "output_shapes: expected " + std::to_string(n_out) +
                     " (" + join(spec.output_names) + "), got " +
                     std::to_string(output_shapes.size()));
  }
  if (output_dtypes.size() != n_out) {
    throw ValueError(prefix_named(spec) + "output_dtypes: expected " + std::to_string(n_out) +
                     " (" + join(spec.output_names) + "), got " +
                     std::to_string(output_dtypes.size()));
  }
  const int64_t g[3] = {grid.x, grid.y, grid.z};
  const int64_t t[3] = {threadgroup.x, threadgroup.y, threadgroup.z};
  for (int d = 0; d < 3; ++d) {
    if (g[d] < 0 || g[d] > kMaxGridDim) {
      throw ValueError(
          prefix_named(spec) + "grid: each size must be in [0, 2^32-1] threads, got (" +
          std::to_string(g[0]) + ", " + std::to_string(g[1]) + ", " + std::to_string(g[2]) + ")");
    }
    if (t[d] < 1 || t[d] > kMaxThreadsPerGroup) {
      throw ValueError(prefix_named(spec) + "threadgroup: each size must be in [1, 1024], got (" +
                       std::to_string(t[0]) + ", " + std::to_string(t[1]) + ", " +
                       std::to_string(t[2]) + ")");
    }
  }
  // Every group gets a number (and on the CPU an iteration): their count must fit in 64 bits,
  // as it does whenever the count of threads does.
  uint64_t threads = 1, groups = 1;
  bool many_threads = false;
  for (int d = 0; d < 3; ++d) {
    many_threads |= __builtin_mul_overflow(threads, static_cast<uint64_t>(g[d]), &threads);
  }
  for (int d = 0; d < 3 && many_threads; ++d) {
    const uint64_t per_dim = static_cast<uint64_t>((g[d] + t[d] - 1) / t[d]);
    if (__builtin_mul_overflow(groups, per_dim, &groups)) {
      throw ValueError(prefix_named(spec) + "grid: (" + std::to_string(g[0]) + ", " +
                       std::to_string(g[1]) + ", " + std::to_string(g[2]) +
                       ") threads in threadgroups of (" + std::to_string(t[0]) + ", " +
                       std::to_string(t[1]) + ", " + std::to_string(t[2]) +
                       ") are more than 2^64 threadgroups");
    }
  }
  for (size_t o = 0; o < n_out; ++o) {
    if (output_shapes[o].size() > static_cast<size_t>(kMaxNdim)) {
      throw ValueError(prefix_named(spec) + "output_shapes[" + std::to_string(o) + "] has " +
                       std::to_string(output_shapes[o].size()) +
                       " dimensions; at most 10 are supported");
    }
    check_dimensions(output_shapes[o], [&] {
      return prefix_named(spec) + "output_shapes[" + std::to_string(o) + "]";
    });
  }
}

}  // namespace

std::vector<Array> Kernel::operator()(const std::vector<Array>& inputs,
                                      const std::vector<Shape>& output_shapes,
                                      const std::vector<Dtype>& output_dtypes, Dim3 grid,
                                      Dim3 threadgroup, const TemplateArgs& template_args,
                                      std::optional<double> init_value, bool verbose,
                                      const LaunchOptions& options) const {
  check_settings(*spec_, output_shapes, output_dtypes, grid, threadgroup);
  return launch(inputs, output_shapes, output_dtypes, grid, threadgroup, template_args, init_value,
                verbose, options);
}

BoundKernel Kernel::bind(std::vector<Shape> output_shapes, std::vector<Dtype> output_dtypes,
                         Dim3 grid, Dim3 threadgroup, TemplateArgs template_args,
                         std::optional<double> init_value, bool verbose) const {
  check_settings(*spec_, output_shapes, output_dtypes, grid, threadgroup);
  check_template_args(*spec_, template_args);
  check_atomic_outputs(*spec_, output_dtypes);
  return BoundKernel(*this, std::move(output_shapes), std::move(output_dtypes), grid, threadgroup,
                     std::move(template_args), init_value, verbose);
}

BoundKernel::BoundKernel(Kernel kernel, std::vector<Shape> output_shapes,
                         std::vector<Dtype> output_dtypes, Dim3 grid, Dim3 threadgroup,
                         TemplateArgs template_args, std::optional<double> init_value, bool verbose)
    : kernel_(std::move(kernel)),
      output_shapes_(std::move(output_shapes)),
      output_dtypes_(std::move(output_dtypes)),
      grid_(grid),
      threadgroup_(threadgroup),
      template_args_(std::move(template_args)),
      init_value_(init_value),
      verbose_(verbose),
      recorded_(std::make_shared<RecordedLaunches>()) {}

std::vector<Array> BoundKernel::operator()(const std::vector<Array>& inputs,
                                           const LaunchOptions& options) const {
  const auto in = refs_of(inputs);
  std::optional<SmallVector<ArrayRef, 16>> out;
  if (options.outputs) out = refs_of(*options.outputs);
  if (std::optional<std::vector<Array>> made = RecordedLaunches::run(
          *this, in, out ? std::optional<std::span<const ArrayRef>>(*out) : std::nullopt,
          options.device, options.stream)) {
    return options.outputs ? *options.outputs : *std::move(made);
  }
  std::shared_ptr<const RecordedLaunch> record;
  std::vector<Array> outputs =
      kernel_.launch(inputs, output_shapes_, output_dtypes_, grid_, threadgroup_, template_args_,
                     init_value_, verbose_, options, &record);
  if (record) RecordedLaunches::keep(*this, std::move(record));
  return outputs;
}

std::vector<Array> Kernel::launch(const std::vector<Array>& inputs,
                                  const std::vector<Shape>& output_shapes,
                                  const std::vector<Dtype>& output_dtypes, Dim3 grid,
                                  Dim3 threadgroup, const TemplateArgs& template_args,
                                  std::optional<double> init_value, bool verbose,
                                  const LaunchOptions& options,
                                  std::shared_ptr<const RecordedLaunch>* record) const {
  const KernelSpec& spec = *spec_;
  const size_t n_in = spec.input_names.size(), n_out = spec.output_names.size();
  if (inputs.size() != n_in) {
    throw ValueError(prefix_named(spec) + "inputs: expected " + std::to_string(n_in) + " (" +
                     join(spec.input_names) + "), got " + std::to_string(inputs.size()));
  }
  const int64_t g[3] = {grid.x, grid.y, grid.z};
  const int64_t t[3] = {threadgroup.x, threadgroup.y, threadgroup.z};
  const Device device = resolve_device(spec, inputs, options.device);
  const int64_t max_threads = device.type == DeviceType::CUDA && cuda::device_count() > device.index
                                  ? cuda::device_info(device.index).max_threads_per_block
                                  : kMaxThreadsPerGroup;
  if (t[0] * t[1] * t[2] > max_threads) {
    throw ValueError(prefix_named(spec) + "threadgroup: (" + std::to_string(t[0]) + ", " +
                     std::to_string(t[1]) + ", " + std::to_string(t[2]) + ") has " +
                     std::to_string(t[0] * t[1] * t[2]) + " threads; at most " +
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
  const Plan* plan = state_->find(
      device, inputs.size(),
      [&](size_t i) {
        return std::pair{inputs[i].dtype(), inputs[i].ndim()};
      },
      output_dtypes, template_args);
  if (!plan) {
    check_template_args(spec, template_args);  // a plan's arguments were checked when it was made
    codegen::CallSignature sig;
    for (const Array& a : inputs) sig.inputs.emplace_back(a.dtype(), a.ndim());
    sig.outputs = output_dtypes;
    sig.template_args = template_args;
    plan = state_->add(build_plan(spec, std::move(sig), device));
  }
  if (verbose) {
    std::string text = "Generated source code for `" + spec.name + "`:\n```\n" +
                       plan->source.text.substr(plan->source.user_part) + "```\n";
    if (options.print) {
      options.print(text);
    } else {
      std::cout << text << std::flush;
    }
  }

  // Outputs: the caller's, checked, or fresh row-contiguous arrays.
  std::vector<Array> outputs;
  bool outputs_moved = false;
  if (options.outputs) {
    if (options.outputs->size() != n_out) {
      throw ValueError(prefix_named(spec) + "outputs: expected " + std::to_string(n_out) + " (" +
                       join(spec.output_names) + "), got " +
                       std::to_string(options.outputs->size()));
    }
    for (size_t o = 0; o < n_out; ++o) {
      const Array& a = (*options.outputs)[o];
      auto what = [&] {
        return "outputs[" + std::to_string(o) + "] ('" + spec.output_names[o] + "')";
      };
      if (a.dtype() != output_dtypes[o]) {
        throw ValueError(prefix_named(spec) + what() + " has dtype " +
                         std::string(dtype_name(a.dtype())) + " but output_dtypes says " +
                         std::string(dtype_name(output_dtypes[o])));
      }
      if (!std::equal(a.shape().begin(), a.shape().end(), output_shapes[o].begin(),
                      output_shapes[o].end())) {
        throw ValueError(prefix_named(spec) + what() + " does not have the shape output_shapes[" +
                         std::to_string(o) + "] gives");
      }
      if (a.read_only()) throw ValueError(prefix_named(spec) + what() + " is read-only");
      if (!a.is_row_contiguous()) {
        throw ValueError(prefix_named(spec) + what() + " must be row-contiguous");
      }
    }
    // Outputs elsewhere (NumPy arrays for a GPU kernel) are copied over and back; the kernel
    // writes the others in place.
    outputs_moved = std::any_of(options.outputs->begin(), options.outputs->end(),
                                [&](const Array& a) { return !(a.device() == device); });
    if (outputs_moved) {
      for (const Array& a : *options.outputs) {
        outputs.push_back(a.device() == device ? a : to_contiguous(a, device, options.stream));
      }
    }
  } else {
    outputs = make_outputs(spec, output_shapes, output_dtypes, device, options.stream);
  }
  const std::vector<Array>& kernel_outputs =
      options.outputs && !outputs_moved ? *options.outputs : outputs;
  if (init_value) {
    for (size_t o = 0; o < kernel_outputs.size(); ++o) {
      const Dtype dtype = kernel_outputs[o].dtype();
      if (in_range(dtype, *init_value)) continue;
      throw ValueError(prefix_named(spec) + "init_value (for outputs[" + std::to_string(o) +
                       "] ('" + spec.output_names[o] + "')): " + out_of_range(dtype, *init_value));
    }
    for (const Array& o : kernel_outputs) fill(o, *init_value, options.stream);
  }

  // Inputs as the kernel sees them: on its device, and row-contiguous when asked for. Most
  // calls need no copy, and use the inputs as they are. A 0-d input is passed by value, which a
  // GPU kernel reads from either side, and a CPU kernel from host memory only.
  auto needs_copy = [&](const Array& a) {
    if (a.ndim() == 0) return device.type == DeviceType::CPU && !(a.device() == device);
    return !(a.device() == device) || (spec.ensure_row_contiguous && !a.is_row_contiguous());
  };
  std::vector<Array> staged;
  if (std::any_of(inputs.begin(), inputs.end(), needs_copy)) {
    staged.reserve(n_in);
    for (const Array& a : inputs) {
      staged.push_back(needs_copy(a) ? to_contiguous(a, device, options.stream) : a);
    }
  }
  const std::vector<Array>& kernel_inputs = staged.empty() ? inputs : staged;

  LaunchDims dims;
  for (int d = 0; d < 3; ++d) {
    dims.grid[d] = static_cast<unsigned>(g[d]);
    dims.group[d] = static_cast<unsigned>(std::max<int64_t>(1, std::min(t[d], g[d])));
    dims.groups[d] = static_cast<unsigned>((g[d] + dims.group[d] - 1) / dims.group[d]);
  }
  if (device.type == DeviceType::CPU) {
    try {
      cpu::launch(*plan->cpu_module, kernel_inputs, kernel_outputs, dims);
    } catch (const LaunchError&) {
      rethrow_named(spec);
    }
  } else {
    const auto in = refs_of(kernel_inputs), out = refs_of(kernel_outputs);
    cuda::PreparedLaunch launch(plan->cuda_entry_points, spec,
                                {plan->source, in, out, dims, spec.shared_memory, device.index});
    launch.run(in, out, options.stream);
    // A launch that used the arrays as given, and did nothing but launch, can be made again
    // on other arrays of the same layouts.
    if (record && staged.empty() && !outputs_moved && !init_value && !verbose) {
      std::vector<ArrayLayout> layouts(in.begin(), in.end());
      for (size_t o = 0; options.outputs && o < n_out; ++o) layouts.emplace_back(out[o]);
      *record = std::make_shared<const RecordedLaunch>(
          RecordedLaunch{options.device, device, n_in, options.outputs.has_value(),
                         std::move(layouts), std::move(launch)});
    }
  }
  if (options.outputs) {
    for (size_t o = 0; o < n_out && outputs_moved; ++o) {
      const Array& given = (*options.outputs)[o];
      if (!(given.device() == device)) copy_into(given, outputs[o], options.stream);
    }
    return *options.outputs;
  }
  return outputs;
}

Kernel metal_kernel(const std::string& name, const std::vector<std::string>& input_names,
                    const std::vector<std::string>& output_names, const std::string& source,
                    const std::string& header, bool ensure_row_contiguous, bool atomic_outputs,
                    CompileOptions compile_options) {
  return Kernel(make_spec(Dialect::Metal, name, input_names, output_names, source, header,
                          ensure_row_contiguous, atomic_outputs, 0, compile_options));
}

Kernel cuda_kernel(const std::string& name, const std::vector<std::string>& input_names,
                   const std::vector<std::string>& output_names, const std::string& source,
                   const std::string& header, bool ensure_row_contiguous, int shared_memory,
                   CompileOptions compile_options, bool atomic_outputs) {
  return Kernel(make_spec(Dialect::Cuda, name, input_names, output_names, source, header,
                          ensure_row_contiguous, atomic_outputs, shared_memory, compile_options));
}

}  // namespace kjit
