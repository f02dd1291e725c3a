#include "core/strided_copy.h"

#include <kjit/errors.h>

#include <cstring>

namespace kjit {
namespace {

template <class T>
void copy_elements(const Array& src, const Array& dst) {
  const int nd = src.ndim();
  const int64_t n = src.size();
  const T* s = static_cast<const T*>(src.data());
  T* d = static_cast<T*>(dst.data());
  int64_t index[kMaxNdim] = {};
  int64_t s_off = 0, d_off = 0;
  for (int64_t i = 0; i < n; ++i) {
    d[d_off] = s[s_off];
    // Advance the multi-index, innermost axis first.
    for (int a = nd - 1; a >= 0; --a) {
      if (++index[a] < src.shape(a)) {
        s_off += src.stride(a);
        d_off += dst.stride(a);
        break;
      }
      s_off -= src.stride(a) * (src.shape(a) - 1);
      d_off -= dst.stride(a) * (dst.shape(a) - 1);
      index[a] = 0;
    }
  }
}

struct Bytes16 {
  unsigned char b[16];
};

}  // namespace

void strided_copy(const Array& src, const Array& dst) {
  if (src.dtype() != dst.dtype() || src.ndim() != dst.ndim()) {
    throw InternalError("strided_copy: arrays differ in dtype or ndim");
  }
  switch (itemsize(src.dtype())) {
    case 1: return copy_elements<uint8_t>(src, dst);
    case 2: return copy_elements<uint16_t>(src, dst);
    case 4: return copy_elements<uint32_t>(src, dst);
    case 8: return copy_elements<uint64_t>(src, dst);
    default: return copy_elements<Bytes16>(src, dst);
  }
}

}  // namespace kjit
