#include <kjit/array.h>
#include <kjit/errors.h>

#include <cstring>
#include <string>

#include "core/host_allocator.h"
#include "core/strided_copy.h"

// The prelude's conversions, shared so that host and kernels round identically.
#include "../../prelude/float_bits.h"

namespace kjit {
namespace {

void check_shape(const Shape& shape, const char* what) {
  if (shape.size() > static_cast<size_t>(kMaxNdim)) {
    throw ValueError(std::string(what) + ": " + std::to_string(shape.size()) +
                     " dimensions; at most " + std::to_string(kMaxNdim) + " are supported");
  }
  for (int64_t d : shape) {
    if (d < 0) {
      throw ValueError(std::string(what) + ": dimensions must be >= 0, got " + std::to_string(d));
    }
  }
}

// One element of |dtype| holding |value|, as raw bytes.
void encode(double value, Dtype dtype, void* out) {
  switch (dtype) {
#define KJIT_ENCODE(D, T)                       \
  case Dtype::D: {                              \
    T v = static_cast<T>(value);                \
    std::memcpy(out, &v, sizeof v);             \
    break;                                      \
  }
    KJIT_ENCODE(Bool, bool)
    KJIT_ENCODE(Int8, int8_t)
    KJIT_ENCODE(Int16, int16_t)
    KJIT_ENCODE(Int32, int32_t)
    KJIT_ENCODE(Int64, int64_t)
    KJIT_ENCODE(UInt8, uint8_t)
    KJIT_ENCODE(UInt16, uint16_t)
    KJIT_ENCODE(UInt32, uint32_t)
    KJIT_ENCODE(UInt64, uint64_t)
    KJIT_ENCODE(Float32, float)
    KJIT_ENCODE(Float64, double)
#undef KJIT_ENCODE
    case Dtype::Float16: {
      uint16_t b = float_to_half_bits(static_cast<float>(value));
      std::memcpy(out, &b, 2);
      break;
    }
    case Dtype::BFloat16: {
      uint16_t b = float_to_bfloat_bits(static_cast<float>(value));
      std::memcpy(out, &b, 2);
      break;
    }
    case Dtype::Complex64: {
      float v[2] = {static_cast<float>(value), 0.0f};
      std::memcpy(out, v, sizeof v);
      break;
    }
  }
}

}  // namespace

int64_t Array::size() const {
  int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= shape_[i];
  return n;
}

bool Array::is_row_contiguous() const {
  int64_t expected = 1;
  for (int i = ndim_ - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (shape_[i] == 0) return true;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

Array Array::empty(const Shape& shape, Dtype dtype, Device device) {
  check_shape(shape, "shape");
  if (device.type != DeviceType::CPU) {
    throw ValueError("device: " + device.str() + " is not available (kjit runs on the CPU here)");
  }
  Array a;
  a.dtype_ = dtype;
  a.device_ = device;
  a.ndim_ = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int i = a.ndim_ - 1; i >= 0; --i) {
    a.shape_[i] = shape[i];
    a.strides_[i] = stride;
    stride *= shape[i];
  }
  a.owner_ = host_allocate(static_cast<size_t>(a.size()) * itemsize(dtype));
  a.data_ = a.owner_.get();
  return a;
}

Array Array::zeros(const Shape& shape, Dtype dtype, Device device) {
  Array a = empty(shape, dtype, device);
  std::memset(a.data_, 0, a.nbytes());
  return a;
}

Array Array::scalar(double value, Dtype dtype) {
  Array a = empty({}, dtype);
  encode(value, dtype, a.data_);
  return a;
}

Array Array::borrow(void* data, const Shape& shape, const Strides& strides, Dtype dtype,
                    Device device, std::shared_ptr<void> owner) {
  check_shape(shape, "shape");
  if (!strides.empty() && strides.size() != shape.size()) {
    throw ValueError("strides: expected " + std::to_string(shape.size()) + " entries, got " +
                     std::to_string(strides.size()));
  }
  Array a;
  a.owner_ = std::move(owner);
  a.data_ = data;
  a.dtype_ = dtype;
  a.device_ = device;
  a.ndim_ = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int i = a.ndim_ - 1; i >= 0; --i) {
    a.shape_[i] = shape[i];
    a.strides_[i] = strides.empty() ? stride : strides[i];
    stride *= shape[i];
  }
  return a;
}

Array Array::contiguous() const {
  if (is_row_contiguous()) return *this;
  Shape shape(shape_, shape_ + ndim_);
  Array out = empty(shape, dtype_, device_);
  strided_copy(*this, out);
  return out;
}

Array Array::to(Device device) const {
  if (device == device_) return *this;
  throw ValueError("device: " + device.str() + " is not available (kjit runs on the CPU here)");
}

void Array::fill(double value) const {
  const size_t item = itemsize(dtype_);
  unsigned char one[16];
  encode(value, dtype_, one);
  if (!is_row_contiguous()) throw ValueError("fill: the array must be row-contiguous");
  auto* p = static_cast<unsigned char*>(data_);
  const int64_t n = size();
  bool all_zero = true;
  for (size_t b = 0; b < item; ++b) all_zero = all_zero && one[b] == 0;
  if (all_zero) {
    std::memset(p, 0, nbytes());
    return;
  }
  for (int64_t i = 0; i < n; ++i) std::memcpy(p + i * item, one, item);
}

}  // namespace kjit
