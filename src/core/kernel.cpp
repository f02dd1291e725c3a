// Kernel and BoundKernel: each call goes through the call pipeline (core/call.h), with the
// launches its settings made last kept to be made again.
#include <kjit/errors.h>
#include <kjit/kernel.h>

#include <cctype>
#include <mutex>

#include "codegen/kernel_spec.h"
#include "codegen/source.h"
#include "core/call.h"
#include "core/call_settings.h"
#include "core/launch_record.h"
#include "core/plan.h"

namespace kjit {

struct Kernel::State {
  PlanCache plans;
  // The last keyword call's settings: a loop's keyword calls launch again as bound calls do.
  std::mutex mutex;
  std::shared_ptr<const CallRecord> last_keyword_call;
};

Kernel::Kernel(std::shared_ptr<const KernelSpec> spec)
    : spec_(std::move(spec)), state_(std::make_shared<State>()) {}
Kernel::~Kernel() = default;

const std::string& Kernel::name() const { return spec_->name; }
const std::vector<std::string>& Kernel::input_names() const { return spec_->input_names; }
const std::vector<std::string>& Kernel::output_names() const { return spec_->output_names; }
const char* Kernel::api() const { return spec_->api(); }

void Kernel::build(const std::vector<std::pair<Dtype, int>>& input_dtypes_ndims,
                   const std::vector<Dtype>& output_dtypes, const TemplateArgs& template_args,
                   const std::string& target) const {
  const KernelSpec& spec = *spec_;
  check_count(spec, "inputs", spec.input_names, input_dtypes_ndims.size());
  check_count(spec, "output_dtypes", spec.output_names, output_dtypes.size(),
              /*show_names=*/false);
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
      backend_for(DeviceType::CUDA).build_for_architecture(spec, source, cc);
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
  const Plan* plan = state_->plans.find(sig, device);
  if (!plan) plan = state_->plans.add(build_plan(spec_, std::move(sig), device));
  plan->program->build_all();  // every way it may be launched
}

std::vector<Array> Kernel::operator()(const std::vector<Array>& inputs,
                                      const std::vector<Shape>& output_shapes,
                                      const std::vector<Dtype>& output_dtypes, Dim3 grid,
                                      Dim3 threadgroup, const TemplateArgs& template_args,
                                      std::optional<double> init_value, bool verbose,
                                      const LaunchOptions& options) const {
  const CallSettings settings{output_shapes, output_dtypes, grid,   threadgroup,
                              template_args, init_value,    verbose};
  std::shared_ptr<const CallRecord> last = CallRecord::of_keyword_call(*this, settings);
  if (last) {
    return run_call(state_->plans, *last, inputs, options);  // checked when they were new
  }
  check_settings(*spec_, settings);
  last = std::make_shared<const CallRecord>(spec_, OwnedSettings(settings));
  {
    std::lock_guard lock(state_->mutex);
    state_->last_keyword_call = last;
  }
  // Settings seen once are often not seen again (a shape that changes each call): their first
  // launch is not kept.
  return run_call(state_->plans, *last, inputs, options, /*keep=*/false);
}

std::shared_ptr<const CallRecord> CallRecord::of_keyword_call(const Kernel& kernel,
                                                              const CallSettings& settings) {
  std::shared_ptr<const CallRecord> last;
  {
    std::lock_guard lock(kernel.state_->mutex);
    last = kernel.state_->last_keyword_call;
  }
  return last && last->settings.matches(settings) ? last : nullptr;
}

BoundKernel Kernel::bind(std::vector<Shape> output_shapes, std::vector<Dtype> output_dtypes,
                         Dim3 grid, Dim3 threadgroup, TemplateArgs template_args,
                         std::optional<double> init_value, bool verbose) const {
  const CallSettings settings{output_shapes, output_dtypes, grid,   threadgroup,
                              template_args, init_value,    verbose};
  check_settings(*spec_, settings);
  check_template_args(*spec_, template_args);
  check_atomic_outputs(*spec_, output_dtypes);
  return BoundKernel(*this, std::make_shared<const CallRecord>(spec_, OwnedSettings(settings)));
}

BoundKernel::BoundKernel(Kernel kernel, std::shared_ptr<const CallRecord> record)
    : kernel_(std::move(kernel)), record_(std::move(record)) {}

const std::vector<Shape>& BoundKernel::output_shapes() const {
  return record_->settings.output_shapes;
}
const std::vector<Dtype>& BoundKernel::output_dtypes() const {
  return record_->settings.output_dtypes;
}

std::vector<Array> BoundKernel::operator()(const std::vector<Array>& inputs,
                                           const LaunchOptions& options) const {
  return run_call(kernel_.state_->plans, *record_, inputs, options);
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
