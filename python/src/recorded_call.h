// A call run as the last GPU launch of the same kind that its settings recorded (CallRecord: a
// bound kernel's, or its kernel's last keyword call's) when its arrays are laid out as that
// launch's were: no Array is made, and no check, lookup or
// packing is done again. Outputs it makes are blocks leased from the block cache, each held by
// the array its library makes over it. An array library with such a path instantiates
// run_as_recorded with its side of it (see frameworks/torch.cpp).
#pragma once

#include <kjit/kjit.h>
#include <nanobind/nanobind.h>

#include <array>
#include <optional>
#include <span>

#include "call_place.h"
#include "convert.h"
#include "core/array_ref.h"
#include "core/backend.h"
#include "core/launch_record.h"
#include "errors_binding.h"
#include "frameworks/adapter.h"

namespace kjit::python {

/// Ends the lease of an output's memory, which the array made over it held.
inline void end_output_lease(void* token) { backend_for(DeviceType::CUDA).end_lease(token); }

/// The most arrays a recorded call takes: the views of more would take much of the stack.
inline constexpr size_t kMaxRecordedArrays = 8;

/// Whether |call| may be of the kind a bound kernel records: GPU launches on a few arrays, with
/// nothing printed. Checked before its library is looked for.
inline bool may_run_as_recorded(const BoundCall& call) {
  const size_t n_in = call.n_inputs, n_out = call.n_outputs, n = call.n;
  const CallPlace& place = call.place;
  return n_in != 0 && (n == n_in || n == n_in + n_out) && n_in + n_out <= kMaxRecordedArrays &&
         !place.verbose && (!place.device || place.device->type == DeviceType::CUDA);
}

/// |call| (may_run_as_recorded) run as recorded, on the arrays of the library whose side is
/// |library|; nothing, having done nothing, when it is not of that kind. Library has:
///   View: one array as the library describes it, its address in a member `data`;
///   bool read(PyObject* obj, bool output, View& view): |obj| as a plain array of the library
///     (for an output, one it lets be written now), else false;
///   static ArrayRef ref_of(const View& view): the memory as a launch reads it, valid while
///     |view| is;
///   uintptr_t current_stream(int device): the library's stream on |device| now;
///   static void describe_output(View& view, const ArrayRef& layout): an output laid out as
///     |layout| says, its memory still unset;
///   PyObject* wrap(const View& view, void* block, void (*release)(void*)): a new array over
///     |view|'s memory that calls release(block) when freed (at once when making it fails);
///     nullptr with a Python error set on failure.
template <class Library>
std::optional<nb::object> run_as_recorded(const BoundCall& call, const Library& library) {
  const size_t n_in = call.n_inputs, n_out = call.n_outputs, n = call.n;
  const CallPlace& place = call.place;
  const CallRecord& record = call.record;
  // The arrays as the library describes them, and as a launch reads them (refs point into
  // views).
  std::array<typename Library::View, kMaxRecordedArrays> views;
  std::array<ArrayRef, kMaxRecordedArrays> refs;
  // The stream's device, as the general path finds it: the one asked for, else the inputs'.
  std::optional<int> gpu;
  if (place.device && place.device->type == DeviceType::CUDA) gpu = place.device->index;
  for (size_t i = 0; i < n; ++i) {
    const bool output = i >= n_in;
    if (!library.read(call.args[i], output, views[i])) return std::nullopt;
    refs[i] = Library::ref_of(views[i]);
    if (!gpu && !output && refs[i].device.type == DeviceType::CUDA) gpu = refs[i].device.index;
  }
  if (!gpu) return std::nullopt;  // this path serves GPU launches
  const uintptr_t stream = place.stream ? *place.stream : library.current_stream(*gpu);
  const std::span<const ArrayRef> inputs(refs.data(), n_in), outputs(refs.data() + n_in, n_out);
  if (n > n_in) {
    const bool ran = run_without_gil(
        [&] { return record.run_again(inputs, outputs, place.device, stream).has_value(); });
    if (!ran) return std::nullopt;
    return list_of(call.args + n_in, n_out);
  }
  // Each output's memory: a block leased for the array made over it, described in the views
  // after the inputs'. None when there is none left (the general path then says which output
  // did not fit) or the launch is not on a GPU. The leases are ended here until an array holds
  // each.
  struct Leases final : OutputMemory {
    Leases(typename Library::View* views, uintptr_t stream) : views(views), stream(stream) {}
    void* provide(size_t o, const ArrayRef& layout) override {
      if (layout.device.type != DeviceType::CUDA) return nullptr;
      Library::describe_output(views[o], layout);
      size_t size = 1;
      for (int d = 0; d < layout.ndim; ++d) size *= static_cast<size_t>(layout.shape[d]);
      try {
        const MemoryLease lease =
            backend.lease(layout.device.index, size * itemsize(layout.dtype), stream);
        tokens[o] = lease.token;  // outputs are asked for in order, up to the first refused
        count = o + 1;
        views[o].data = lease.ptr;
        return lease.ptr;
      } catch (const OutOfMemory&) {
        return nullptr;
      }
    }
    void end(size_t from) noexcept {
      for (size_t o = from; o < count; ++o) backend.end_lease(tokens[o]);
      count = from;
    }
    const Backend& backend = backend_for(DeviceType::CUDA);
    typename Library::View* views;
    uintptr_t stream;
    std::array<void*, kMaxRecordedArrays> tokens;
    size_t count = 0;
  } leases(views.data() + n_in, stream);
  bool ran = false;
  try {
    ran = run_without_gil(
        [&] { return record.run_again_into(inputs, place.device, stream, leases); });
  } catch (...) {
    leases.end(0);  // also after the launch, when a warning issued then is an error
    throw;
  }
  if (!ran) {
    leases.end(0);
    return std::nullopt;
  }
  nb::list made = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(n_out)));
  if (!made.is_valid()) {
    leases.end(0);
    throw nb::python_error();
  }
  for (size_t o = 0; o < n_out; ++o) {
    // wrap ends the lease itself when it fails.
    PyObject* array = library.wrap(views[n_in + o], leases.tokens[o], end_output_lease);
    if (!array) {
      leases.end(o + 1);
      throw nb::python_error();
    }
    PyList_SET_ITEM(made.ptr(), static_cast<Py_ssize_t>(o), array);
  }
  return made;
}

}  // namespace kjit::python
