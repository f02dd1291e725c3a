#include "core/plan.h"

#include <kjit/errors.h>

#include "core/call_settings.h"

namespace kjit {

void rethrow_named(const KernelSpec& spec) {
  try {
    throw;
  } catch (const Interrupted& e) {
    throw Interrupted(prefix_named(spec) + e.what());
  } catch (const LaunchError& e) {
    throw LaunchError(prefix_named(spec) + e.what());
  }
}

namespace {

codegen::Target target_of(const Device& device) {
  return device.type == DeviceType::CUDA ? codegen::Target::Cuda : codegen::Target::Cpu;
}

void check_available(const KernelSpec& spec, const Backend& backend, const Device& device) {
  if (std::string reason = backend.unavailable_reason(); !reason.empty()) {
    throw ValueError(prefix_named(spec) + "device: " + device.str() +
                     " is not available: " + reason);
  }
  if (const int count = backend.device_count(); device.index >= count) {
    throw ValueError(prefix_named(spec) + "device: " + device.str() +
                     " is not available: there are " + std::to_string(count) +
                     " CUDA device(s) here");
  }
}

// A precompiled kernel's plan: its image, loaded by a GPU's backend; the CPU cannot run it.
std::shared_ptr<const Plan> load_plan(const std::shared_ptr<const KernelSpec>& spec,
                                      codegen::CallSignature sig, const Device& device) {
  if (device.type != DeviceType::CUDA) {
    const std::string no_gpu = backend_for(DeviceType::CUDA).unavailable_reason();
    throw ValueError(prefix_named(*spec) + "device: " + device.str() +
                     " cannot run a precompiled kernel: its PTX or cubin is GPU code, run on a "
                     "CUDA device only" +
                     (no_gpu.empty() ? "; pass device='cuda' or arrays on a GPU (stream= orders "
                                       "the work on a GPU, it does not choose one)"
                                     : "; none works here (" + no_gpu + ")"));
  }
  const Backend& backend = backend_for(device.type);
  check_available(*spec, backend, device);
  auto plan = std::make_shared<Plan>();
  plan->program = backend.load(spec, device.index);
  plan->signature = std::move(sig);
  plan->device = device;
  return plan;
}

}  // namespace

std::shared_ptr<const Plan> build_plan(const std::shared_ptr<const KernelSpec>& spec_ptr,
                                       codegen::CallSignature sig, const Device& device) {
  const KernelSpec& spec = *spec_ptr;
  if (spec.dialect == Dialect::Precompiled) return load_plan(spec_ptr, std::move(sig), device);
  const Backend& backend = backend_for(device.type);
  check_available(spec, backend, device);
  check_atomic_outputs(spec, sig.outputs);
  auto plan = std::make_shared<Plan>();
  const codegen::Target target = target_of(device);
  auto source =
      std::make_shared<const codegen::GeneratedSource>(codegen::generate(spec, sig, target));
  try {
    try {
      plan->program = backend.build(spec_ptr, source, device.index);
    } catch (const CompileError&) {
      if (source->cpu_mode != codegen::CpuMode::Regions) throw;
      // Region mode's rewriting of a body with barriers may not suit every body: cooperative
      // mode runs it, and reports its errors against the user's lines.
      source = std::make_shared<const codegen::GeneratedSource>(codegen::generate(
          spec, sig, codegen::coroutine_mode(spec, "region mode's rewriting did not compile")));
      plan->program = backend.build(spec_ptr, source, device.index);
    }
  } catch (const Interrupted&) {  // a compile SIGINT ended
    rethrow_named(spec);
  }
  plan->source = std::move(source);
  plan->signature = std::move(sig);
  plan->device = device;
  return plan;
}

const Plan* PlanCache::add(std::shared_ptr<const Plan> plan) {
  std::lock_guard lock(mutex_);
  plans_.push_back(std::move(plan));
  last_.store(plans_.back().get(), std::memory_order_release);
  return plans_.back().get();
}

}  // namespace kjit
