#include "core/launch_record.h"

#include <kjit/errors.h>

#include <algorithm>
#include <string>

#include "cache/stats.h"
#include "core/device_ops.h"

namespace kjit {

ArrayLayout::ArrayLayout(const ArrayRef& a)
    : device_(a.device), dtype_(a.dtype), read_only_(a.read_only), ndim_(a.ndim) {
  for (int d = 0; d < ndim_; ++d) {
    dims_[2 * d] = a.shape[d];
    dims_[2 * d + 1] = a.strides[d];
  }
}

bool ArrayLayout::matches(const ArrayRef& a) const {
  // A 0-d array's value is read through its pointer: an empty Array has none.
  if (a.dtype != dtype_ || a.ndim != ndim_ || !(a.device == device_) || a.read_only != read_only_ ||
      (ndim_ == 0 && !a.data)) {
    return false;
  }
  for (int d = 0; d < ndim_; ++d) {
    if (dims_[2 * d] != a.shape[d] || dims_[2 * d + 1] != a.strides[d]) return false;
  }
  return true;
}

bool RecordedLaunch::matches(std::span<const ArrayRef> in,
                             std::optional<std::span<const ArrayRef>> out,
                             const std::optional<Device>& asked) const {
  const size_t n_out = out ? out->size() : 0;
  if (asked != device_asked || out.has_value() != outputs_given || in.size() != n_inputs ||
      n_inputs + n_out != arrays.size()) {
    return false;
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (!arrays[i].matches(in[i])) return false;
  }
  for (size_t o = 0; o < n_out; ++o) {
    if (!arrays[in.size() + o].matches((*out)[o])) return false;
  }
  return true;
}

void RecordedLaunch::run_again(std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs,
                               uintptr_t stream) const {
  launch.run(inputs, outputs, stream);
  cache::stats().launches_again.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<const RecordedLaunch> RecordedLaunches::find(
    const BoundKernel& bound, std::span<const ArrayRef> inputs,
    std::optional<std::span<const ArrayRef>> outputs, const std::optional<Device>& device) {
  RecordedLaunches& kept = *bound.recorded_;
  std::shared_ptr<const RecordedLaunch> launch;
  {
    std::lock_guard lock(kept.mutex_);
    launch = kept.last_[outputs.has_value()];
  }
  if (!launch || !launch->matches(inputs, outputs, device)) return nullptr;
  return launch;
}

std::optional<std::vector<Array>> RecordedLaunches::run(
    const BoundKernel& bound, std::span<const ArrayRef> inputs,
    std::optional<std::span<const ArrayRef>> outputs, const std::optional<Device>& device,
    uintptr_t stream) {
  const std::shared_ptr<const RecordedLaunch> launch = find(bound, inputs, outputs, device);
  if (!launch) return std::nullopt;
  if (outputs) {
    launch->run_again(inputs, *outputs, stream);
    return std::vector<Array>();
  }
  std::vector<Array> made = make_outputs(*bound.kernel_.spec_, bound.output_shapes_,
                                         bound.output_dtypes_, launch->device, stream);
  launch->run_again(inputs, refs_of(made), stream);
  return made;
}

void RecordedLaunches::keep(const BoundKernel& bound,
                            std::shared_ptr<const RecordedLaunch> launch) {
  RecordedLaunches& kept = *bound.recorded_;
  const bool given = launch->outputs_given;
  std::lock_guard lock(kept.mutex_);
  kept.last_[given] = std::move(launch);
}

std::vector<Array> make_outputs(const KernelSpec& spec, const std::vector<Shape>& shapes,
                                const std::vector<Dtype>& dtypes, const Device& device,
                                uintptr_t stream) {
  std::vector<Array> outputs;
  outputs.reserve(shapes.size());
  for (size_t o = 0; o < shapes.size(); ++o) {
    try {
      outputs.push_back(make_array(shapes[o], dtypes[o], device, stream));
    } catch (const OutOfMemory& e) {
      throw OutOfMemory(prefix_named(spec) + "output_shapes[" + std::to_string(o) + "] ('" +
                        spec.output_names[o] + "'): " + e.what());
    }
  }
  return outputs;
}

}  // namespace kjit
