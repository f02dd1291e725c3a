#include "core/launch_record.h"

#include <kjit/errors.h>

#include "cache/stats.h"
#include "core/call.h"

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

std::shared_ptr<const RecordedLaunch> RecordedLaunch::of(
    const ResolvedCall& call, const LaunchOptions& options, std::span<const ArrayRef> inputs,
    std::span<const ArrayRef> outputs, std::unique_ptr<const PreparedLaunch> launch) {
  auto record = std::make_shared<RecordedLaunch>();
  record->device_asked = options.device;
  record->device = call.device;
  record->outputs_given = options.outputs.has_value();
  for (const ArrayRef& i : inputs) record->inputs.emplace_back(i);
  for (const ArrayRef& o : outputs) {
    if (record->outputs_given) {
      record->outputs.emplace_back(o);
    } else {
      record->made_strides.emplace_back(o.strides, o.strides + o.ndim);
    }
  }
  record->launch = std::move(launch);
  return record;
}

bool RecordedLaunch::matches(std::span<const ArrayRef> in,
                             std::optional<std::span<const ArrayRef>> out,
                             const std::optional<Device>& asked) const {
  if (asked != device_asked || out.has_value() != outputs_given || in.size() != inputs.size() ||
      (out && out->size() != outputs.size())) {
    return false;
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (!inputs[i].matches(in[i])) return false;
  }
  for (size_t o = 0; out && o < out->size(); ++o) {
    if (!outputs[o].matches((*out)[o])) return false;
  }
  return true;
}

std::shared_ptr<const RecordedLaunch> RecordedLaunches::find(
    std::span<const ArrayRef> inputs, std::optional<std::span<const ArrayRef>> outputs,
    const std::optional<Device>& device) const {
  std::shared_ptr<const RecordedLaunch> launch;
  {
    std::lock_guard lock(mutex_);
    launch = last_[outputs.has_value()];
  }
  if (!launch || !launch->matches(inputs, outputs, device)) return nullptr;
  return launch;
}

void RecordedLaunches::keep(std::shared_ptr<const RecordedLaunch> launch) const {
  const bool given = launch->outputs_given;
  std::lock_guard lock(mutex_);
  last_[given] = std::move(launch);
}

namespace {

void run_again(const KernelSpec& spec, const RecordedLaunch& launch,
               std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs,
               uintptr_t stream) {
  // Launches with an init value are never recorded: outputs not given are fresh.
  run_launch(spec, *launch.launch, inputs, outputs, stream, !launch.outputs_given);
  cache::stats().launches_again.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

std::optional<std::vector<Array>> CallRecord::run_again(
    std::span<const ArrayRef> inputs, std::optional<std::span<const ArrayRef>> outputs,
    const std::optional<Device>& device, uintptr_t stream) const {
  const std::shared_ptr<const RecordedLaunch> launch = launches.find(inputs, outputs, device);
  if (!launch) return std::nullopt;
  if (outputs) {
    kjit::run_again(*spec, *launch, inputs, *outputs, stream);
    return std::vector<Array>();
  }
  std::vector<Array> made =
      make_outputs(*spec, settings.output_shapes, settings.output_dtypes, launch->device, stream);
  kjit::run_again(*spec, *launch, inputs, refs_of(made), stream);
  return made;
}

bool CallRecord::run_again_into(std::span<const ArrayRef> inputs,
                                const std::optional<Device>& device, uintptr_t stream,
                                OutputMemory& memory) const {
  const std::shared_ptr<const RecordedLaunch> launch = launches.find(inputs, std::nullopt, device);
  if (!launch) return false;
  SmallVector<ArrayRef, 16> made(settings.output_shapes.size());
  for (size_t o = 0; o < made.size(); ++o) {
    const Shape& shape = settings.output_shapes[o];
    made[o] = {.data = nullptr,
               .dtype = settings.output_dtypes[o],
               .device = launch->device,
               .ndim = static_cast<int>(shape.size()),
               .shape = shape.data(),
               .strides = launch->made_strides[o].data(),
               .read_only = false};
    try {
      made[o].data = memory.provide(o, made[o]);
    } catch (...) {
      rethrow_for_output(*spec, o);
    }
    if (!made[o].data) return false;
  }
  kjit::run_again(*spec, *launch, inputs, made, stream);
  return true;
}

}  // namespace kjit
