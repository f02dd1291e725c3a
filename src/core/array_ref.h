// What a launch reads of an array: its memory and layout, owning nothing. Cheap to make from a
// kjit::Array, or from another library's description of a tensor, for calls that need no Array.
#pragma once

#include <kjit/array.h>

#include <span>

#include "support/small_vector.h"

namespace kjit {

struct ArrayRef {
  void* data;
  Dtype dtype;
  Device device;
  int ndim;
  const int64_t* shape;    // ndim of them
  const int64_t* strides;  // in elements
  bool read_only;

  static ArrayRef of(const Array& a) {
    return {.data = a.data(),
            .dtype = a.dtype(),
            .device = a.device(),
            .ndim = a.ndim(),
            .shape = a.shape().data(),
            .strides = a.strides().data(),
            .read_only = a.read_only()};
  }
};

/// ArrayRefs to |arrays|, which must outlive them.
inline SmallVector<ArrayRef, 16> refs_of(std::span<const Array> arrays) {
  SmallVector<ArrayRef, 16> refs(arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) refs[i] = ArrayRef::of(arrays[i]);
  return refs;
}

}  // namespace kjit
