// Kernel and BoundKernel: each call goes through the call pipeline (core/call.h), with the
// launches its settings made last kept to be made again.
#include <kjit/errors.h>
#include <kjit/kernel.h>

#include <cctype>
#include <iostream>
#include <mutex>

#include "codegen/kernel_spec.h"
#include "codegen/source.h"
#include "core/call.h"
#include "core/call_settings.h"
#include "core/launch_record.h"
#include "core/plan.h"

namespace kjit {
namespace {

// A keyword call's settings, owned, with the launches calls of those settings recorded.
struct KeywordCall {
  std::vector<Shape> output_shapes;
  std::vector<Dtype> output_dtypes;
  Dim3 grid, threadgroup;
  TemplateArgs template_args;
  std::optional<double> init_value;
  bool verbose = false;
  mutable RecordedLaunches recorded;

  CallSettings settings() const {
    return {output_shapes, output_dtypes, grid, threadgroup, template_args, init_value, verbose};
  }
  bool matches(const CallSettings& s) const {
    auto same = [](Dim3 a, Dim3 b) { return a.x == b.x && a.y == b.y && a.z == b.z; };
    return same(grid, s.grid) && same(threadgroup, s.threadgroup) && verbose == s.verbose &&
           init_value == s.init_value && output_dtypes == s.output_dtypes &&
           output_shapes == s.output_shapes && template_args == s.template_args;
  }
};

void print_source(const KernelSpec& spec, const Plan& plan, const LaunchOptions& options) {
  std::string text = "Generated source code for `" + spec.name + "`:\n```\n" +
                     plan.source->text.substr(plan.source->user_part) + "```\n";
  if (options.print) {
    options.print(text);
  } else {
    std::cout << text << std::flush;
  }
}

// One call through every stage. With |recorded|, a launch that used the arrays as given and did
// nothing but launch is kept there, to be made again on arrays laid out alike.
std::vector<Array> run_pipeline(const std::shared_ptr<const KernelSpec>& spec, PlanCache& plans,
                                const CallSettings& settings, const std::vector<Array>& inputs,
                                const LaunchOptions& options, RecordedLaunches* recorded) {
  const ResolvedCall call = resolve(spec, plans, settings, inputs, options);
  if (settings.verbose) print_source(*spec, *call.plan, options);
  KernelOutputs outputs = prepare_outputs(*spec, settings, call, options);
  const std::vector<Array> staged = stage_inputs(*spec, call, inputs, options.stream);
  const std::vector<Array>& kernel_inputs = staged.empty() ? inputs : staged;
  const std::vector<Array>& kernel_outputs = outputs.written(options);
  const auto in = refs_of(kernel_inputs), out = refs_of(kernel_outputs);
  std::unique_ptr<const PreparedLaunch> launch = dispatch(*spec, call, in, out, options.stream);
  if (recorded && staged.empty() && !outputs.moved && !settings.init_value && !settings.verbose) {
    auto record = std::make_shared<RecordedLaunch>();
    record->device_asked = options.device;
    record->device = call.device;
    record->outputs_given = options.outputs.has_value();
    for (const ArrayRef& i : in) record->inputs.emplace_back(i);
    if (options.outputs) {
      for (const ArrayRef& o : out) record->outputs.emplace_back(o);
    } else {
      for (const ArrayRef& o : out)
        record->made_strides.emplace_back(o.strides, o.strides + o.ndim);
    }
    record->launch = std::move(launch);
    recorded->keep(std::move(record));
  }
  finish_outputs(outputs, call, options);
  return options.outputs ? *options.outputs : std::move(outputs.arrays);
}

// A call that makes again what the last call of its kind with these settings launched, when
// its arrays are laid out as that call's were; else the whole pipeline, recorded.
std::vector<Array> run_recorded(const std::shared_ptr<const KernelSpec>& spec, PlanCache& plans,
                                const CallSettings& settings, RecordedLaunches& recorded,
                                const std::vector<Array>& inputs, const LaunchOptions& options) {
  const auto in = refs_of(inputs);
  std::optional<SmallVector<ArrayRef, 16>> out;
  if (options.outputs) out = refs_of(*options.outputs);
  if (std::optional<std::vector<Array>> made = recorded.run(
          *spec, settings, in, out ? std::optional<std::span<const ArrayRef>>(*out) : std::nullopt,
          options.device, options.stream)) {
    return options.outputs ? *options.outputs : *std::move(made);
  }
  return run_pipeline(spec, plans, settings, inputs, options, &recorded);
}

}  // namespace

struct Kernel::State {
  PlanCache plans;
  // The last keyword call's settings: a loop's keyword calls launch again as bound calls do.
  std::mutex mutex;
  std::shared_ptr<const KeywordCall> last_keyword_call;
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
  std::shared_ptr<const KeywordCall> last;
  {
    std::lock_guard lock(state_->mutex);
    last = state_->last_keyword_call;
  }
  // Settings equal to the last call's were checked then.
  if (!last || !last->matches(settings)) {
    check_settings(*spec_, settings);
    auto made = std::make_shared<KeywordCall>();
    made->output_shapes = output_shapes;
    made->output_dtypes = output_dtypes;
    made->grid = grid;
    made->threadgroup = threadgroup;
    made->template_args = template_args;
    made->init_value = init_value;
    made->verbose = verbose;
    last = std::move(made);
    std::lock_guard lock(state_->mutex);
    state_->last_keyword_call = last;
  }
  return run_recorded(spec_, state_->plans, last->settings(), last->recorded, inputs, options);
}

BoundKernel Kernel::bind(std::vector<Shape> output_shapes, std::vector<Dtype> output_dtypes,
                         Dim3 grid, Dim3 threadgroup, TemplateArgs template_args,
                         std::optional<double> init_value, bool verbose) const {
  check_settings(*spec_, {output_shapes, output_dtypes, grid, threadgroup, template_args,
                          init_value, verbose});
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
  return run_recorded(kernel_.spec_, kernel_.state_->plans, RecordedLaunches::settings_of(*this),
                      *recorded_, inputs, options);
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
