// What kjit knows of one array library (NumPy, torch, CuPy, JAX, kjit's own arrays, and any
// other DLPack producer): how its arrays are recognised, read and made, which stream its work
// is queued on, and what its arrays need after a launch. The call path reads and makes arrays
// through to_array and list_of, which pick an object's adapter with framework_of: it never names
// a library. Each library's adapter lives in its own file here, and a new library is one more
// file and one more entry in adapter.cpp's table.
#pragma once

#include <kjit/kjit.h>
#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "../convert.h"
#include "../param.h"

namespace kjit::python {

namespace nb = nanobind;

struct CallPlace;

/// Whether a kernel has warned that an input's gradient is lost: a library's autograd tracks
/// the array (a torch tensor that requires grad), but not the kernel's call, so no gradient
/// reaches the array through the outputs. Issued once per kjit.Kernel, which shares it with its
/// bound kernels. Read and written with the GIL held.
struct GradWarning {
  bool issued = false;
};

/// How one object is read as an Array.
struct ReadRequest {
  const Param& param;  // named in errors
  /// Keep the object with the Array where the library's own object is what holds the memory (a
  /// call's own arguments live through the call and need not be).
  bool keep_alive = false;
  /// The kernel writes the array: refuse what its library would not let be written in place
  /// (a read-only export, a torch tensor autograd tracks...). This is each library's check of
  /// writability: it is made while the array is read, from what reading it found.
  bool writable = false;
  /// The stream (DLPack's numbering: 1 is the legacy stream) the launch is known to run on
  /// before its arrays are read, for libraries that can export an array ready for work queued
  /// there instead of waiting until it is ready; 0 when not known yet.
  uintptr_t dlpack_stream = 0;
  /// An input's: the kernel's GradWarning, which a library with autograd issues when autograd
  /// tracks the array now. nullptr for outputs.
  GradWarning* grad_warning = nullptr;
};

/// What must happen after a launch for a library's arrays to be ready for its next operations.
enum class AfterLaunch : uint8_t {
  Nothing,      // the library orders its next work after the launch's stream itself
  Synchronize,  // it reads imported memory without waiting on the exporter's stream
};

/// A call's arguments, as the recorded path (call_recorded) takes them: a bound call's, or a
/// keyword call's whose settings are its kernel's last keyword call's.
struct BoundCall {
  const CallRecord& record;
  const CallPlace& place;
  size_t n_inputs, n_outputs;
  PyObject* const* args;  // the inputs, then optionally the outputs to write
  size_t n;
  /// The kernel's: a library with autograd leaves a call on an array autograd tracks to the
  /// general path, which warns, until it is issued.
  const GradWarning& grad_warning;
};

/// One array library. Plain data and function pointers: framework_of finds an object's adapter
/// by its type's address, and a call asks each of its hooks at most once per array. An adapter
/// states what it has; the rest keeps these defaults.
struct FrameworkAdapter {
  /// Whether objects of |type|, defined in |module|, are this library's arrays. Asked once for
  /// each new type (framework_of remembers the answer), in the table's order.
  bool (*claims)(nb::handle type, std::string_view module);
  /// Whether the types it claims live as long as the library's module, and so are remembered by
  /// address (kept alive); any other type may be made and dropped at run time.
  bool remember_types = true;
  /// Whether |obj| is the library's scalar (np.float32(2)) rather than an array: scalars decide
  /// the library of a call's outputs only when no input is an array. nullptr: none are.
  bool (*is_scalar)(nb::handle obj) = nullptr;
  /// |obj| (claimed by this library; not a Python scalar) as an Array.
  Array (*to_array)(nb::handle obj, const ReadRequest& request);
  /// An Array as this library's array, zero-copy where the library can hold its memory.
  nb::object (*from_array)(const Array& array);
  /// The stream (a CUstream; 0: the legacy stream) the library queues work on for CUDA device
  /// |device| now, which a call runs on unless told otherwise. nullptr: the legacy stream.
  uintptr_t (*current_stream)(int device) = nullptr;
  /// The device that |stream| (an object of the library's, given as a call's stream=) names,
  /// for a library whose streams stand for a place to run rather than for a CUDA stream (MLX's
  /// mx.cpu, mx.gpu); an object that is none is an error naming |param|. nullptr: the library's
  /// streams are CUDA streams (or it has none).
  std::optional<Device> (*device_of_stream)(nb::handle stream, const Param& param) = nullptr;
  /// Whether the library's work runs on the legacy stream whatever the device, so that a call's
  /// stream is known before its arrays are read (ReadRequest::dlpack_stream).
  bool queues_on_legacy_stream = false;
  AfterLaunch after_launch = AfterLaunch::Nothing;
  /// A call on this library's arrays alone, run as the last GPU launch of the same kind its
  /// settings recorded, without making Arrays; nothing, having done nothing, when the call is
  /// not of that kind (the general path takes it). nullptr: the library has no such path.
  std::optional<nb::object> (*call_recorded)(const BoundCall& call) = nullptr;
};

/// The adapter of |obj|'s library: a pointer comparison when its type is the last one seen or
/// one remembered. Called with the GIL held.
const FrameworkAdapter& framework_of(nb::handle obj);

/// The adapter whose arrays a call returns when no input is an array: kjit.Array.
const FrameworkAdapter& no_framework();

/// A kernel input (or, when request.writable, an output) from a Python scalar, a kjit.Array or
/// an array of any library, read by its library's adapter. The result borrows the object's
/// memory, keeping what DLPack or the buffer protocol exported.
Array to_array(nb::handle obj, const ReadRequest& request);

/// The device a call's stream= names when it is an object of a library whose streams stand for
/// a place to run (MLX's mx.cpu, mx.gpu, mx.Device, mx.Stream); nothing for a CUDA stream.
std::optional<Device> device_of_stream(nb::handle stream, const Param& param);

/// The library a call's outputs belong to: that of its first array input. Scalars, Python's or
/// a library's (np.float32(2)), decide only when no input is an array.
const FrameworkAdapter& outputs_framework(const HeldItems& inputs);

/// A kernel's outputs as a list of |library|'s arrays.
nb::list list_of(const std::vector<Array>& arrays, const FrameworkAdapter& library);

}  // namespace kjit::python
