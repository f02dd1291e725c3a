#include <kjit/array.h>
#include <kjit/errors.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "core/device_ops.h"
#include "core/dtype_cast.h"
#include "core/shape_check.h"

namespace kjit {
int64_t Array::size() const {
  int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= shape_[i];
  return n;
}

bool Array::is_row_contiguous() const {
  if (size() == 0) return true;
  int64_t expected = 1;
  for (int i = ndim_ - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

Array Array::empty(const Shape& shape, Dtype dtype, Device device) {
  return make_array(shape, dtype, device);
}

Array Array::zeros(const Shape& shape, Dtype dtype, Device device) {
  Array a = empty(shape, dtype, device);
  kjit::fill(a, 0.0);
  return a;
}

Array Array::scalar(double value, Dtype dtype) {
  Array a = empty({}, dtype);
  kjit::fill(a, value);
  return a;
}

Array Array::borrow(void* data, std::span<const int64_t> shape, std::span<const int64_t> strides,
                    Dtype dtype, Device device, std::shared_ptr<void> owner) {
  check_shape(shape, "shape");
  if (!strides.empty() && strides.size() != shape.size()) {
    throw ValueError("strides: expected " + std::to_string(shape.size()) + " entries, got " +
                     std::to_string(strides.size()));
  }
  if (!data) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (n != 0) {
      throw ValueError("data: a null pointer for an array of " + std::to_string(n) + " element(s)");
    }
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

Array::Array(Array&& other) noexcept { *this = std::move(other); }

Array& Array::operator=(Array&& other) noexcept {
  if (this == &other) return *this;
  owner_ = std::move(other.owner_);
  data_ = other.data_;
  dtype_ = other.dtype_;
  device_ = other.device_;
  ndim_ = other.ndim_;
  std::copy_n(other.shape_, ndim_, shape_);
  std::copy_n(other.strides_, ndim_, strides_);
  read_only_ = other.read_only_;
  other.data_ = nullptr;  // empty, as a default Array: not valid() for a call
  other.ndim_ = 0;
  return *this;
}

Array Array::as_read_only() const {
  Array view = *this;
  view.read_only_ = true;
  return view;
}

Array Array::contiguous() const { return to_contiguous(*this, device_); }

Array Array::to(Device device) const { return to_contiguous(*this, device); }

Array Array::astype(Dtype dtype) const { return cast(*this, dtype, "astype"); }

void Array::fill(double value) const { kjit::fill(*this, value); }

}  // namespace kjit
