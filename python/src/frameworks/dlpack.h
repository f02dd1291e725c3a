// DLPack, the protocol every array library speaks, and the buffer protocol: how kjit reads any
// array as nanobind imports it, and exports an Array for another library to import. The other
// adapters read through these when their library's faster way does not apply.
#pragma once

#include <kjit/kjit.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <memory>
#include <optional>

#include "adapter.h"

namespace kjit::python {

namespace dl = nb::dlpack;

std::optional<Dtype> from_dlpack_dtype(dl::dtype t);
dl::dtype to_dlpack_dtype(Dtype d);

/// The array nanobind imported, as an Array of |dtype_override| or else of its own dtype. The
/// Array keeps the import, whose capsule may be all that owns the memory.
template <class Nd>
Array from_ndarray(const Nd& nd, std::optional<Dtype> dtype_override, const Param& param);

/// Whether nanobind may read |obj|'s buffer, should it read one: it takes the strides the
/// exporter gives without checking that there are any.
bool buffer_is_importable(nb::handle obj);

/// Imports |obj| through DLPack or the buffer protocol; false when it offers neither for this
/// access (a producer may refuse both, as NumPy's bfloat16 does).
template <class Nd>
bool import_ndarray(nb::handle obj, Nd& nd) {
  if (!buffer_is_importable(obj)) return false;
  bool imported = false;
  try {
    imported = nb::try_cast(obj, nd, false);
  } catch (const std::exception&) {
  }
  PyErr_Clear();
  return imported;
}

/// |source| (an array, or a capsule one exported) imported as writable memory, else as
/// read-only memory (refused for a writable request), as an Array of |dtype_override| or else
/// of its own dtype. Nothing when it offers neither.
std::optional<Array> import_array(nb::handle source, const ReadRequest& request,
                                  std::optional<Dtype> dtype_override = std::nullopt);

/// The TypeError for |obj|, which no adapter could read: its dtype, or why its DLPack export
/// failed, or what kjit takes.
[[noreturn]] void throw_unreadable(nb::handle obj, const Param& param);

/// A zero-copy view of |a| for framework Fw (nanobind's tag: nb::numpy, nb::jax...); the view
/// owns a copy of the Array, and with it the memory.
template <class Fw>
nb::object export_as(const Array& a, dl::dtype dtype) {
  auto* keep = new Array(a);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Array*>(p); });
  size_t shape[kMaxNdim];
  int64_t strides[kMaxNdim];
  for (int i = 0; i < a.ndim(); ++i) {
    shape[i] = static_cast<size_t>(a.shape(i));
    strides[i] = a.stride(i);
  }
  int device_type =
      a.device().type == DeviceType::CPU ? nb::device::cpu::value : nb::device::cuda::value;
  // Read-only memory (a read-only NumPy array's, bytes') stays read-only in the other library.
  if (a.read_only()) {
    return nb::cast(nb::ndarray<Fw, nb::ro>(a.data(), static_cast<size_t>(a.ndim()), shape, owner,
                                            strides, dtype, device_type, a.device().index));
  }
  return nb::cast(nb::ndarray<Fw>(a.data(), static_cast<size_t>(a.ndim()), shape, owner, strides,
                                  dtype, device_type, a.device().index));
}

/// An object exporting |array| through __dlpack__ / __dlpack_device__ (zero-copy).
nb::object dlpack_view(const Array& array);

}  // namespace kjit::python
