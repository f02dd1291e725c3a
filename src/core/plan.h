// A kernel's plan for one call signature on one device: its generated source and the program
// its backend built from it, kept by the kernel for every later call of that signature.
#pragma once

#include <kjit/device.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/source.h"
#include "core/backend.h"

namespace kjit {

struct Plan {
  codegen::CallSignature signature;
  Device device;
  std::shared_ptr<const codegen::GeneratedSource> source;  // none for a precompiled kernel
  std::shared_ptr<const Program> program;
};

/// Generates |sig|'s source for |device| and has its backend build it, or for a precompiled
/// kernel has the backend load its image. |spec|'s kernel must be able to run there (else
/// ValueError naming the device).
std::shared_ptr<const Plan> build_plan(const std::shared_ptr<const KernelSpec>& spec,
                                       codegen::CallSignature sig, const Device& device);

/// A kernel's plans, only ever added to.
class PlanCache {
 public:
  /// The plan for |device|, |outputs|, |targs| and |n| inputs whose (dtype, ndim) |input(i)|
  /// gives, or null. The hot path passes its arrays, so that the lookup builds nothing.
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
    const Plan* recent = last_.load(std::memory_order_acquire);
    if (recent && fits(*recent)) return recent;
    std::lock_guard lock(mutex_);
    for (const auto& p : plans_) {
      if (fits(*p)) {
        last_.store(p.get(), std::memory_order_release);
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

  const Plan* add(std::shared_ptr<const Plan> plan);

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<const Plan>> plans_;
  // The plan found last: a loop's calls find theirs here, without the lock. It points into
  // |plans_|, which keeps it.
  std::atomic<const Plan*> last_{nullptr};
};

/// The launch error being handled, thrown again with the kernel's name before its message, and
/// of the same type.
[[noreturn]] void rethrow_named(const KernelSpec& spec);

}  // namespace kjit
