// An n-dimensional array that owns or borrows memory on a device.
#pragma once

#include <kjit/device.h>
#include <kjit/dtype.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace kjit {

inline constexpr int kMaxNdim = 10;

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;  // in elements, signed

class Array {
 public:
  Array() = default;
  Array(const Array&) = default;
  Array& operator=(const Array&) = default;
  /// Moving leaves the source empty (not valid()), as a default Array.
  Array(Array&& other) noexcept;
  Array& operator=(Array&& other) noexcept;

  /// Fresh row-contiguous memory (uninitialised).
  static Array empty(const Shape& shape, Dtype dtype, Device device = Device::cpu());
  static Array zeros(const Shape& shape, Dtype dtype, Device device = Device::cpu());
  /// A 0-d array holding |value| converted to |dtype|.
  static Array scalar(double value, Dtype dtype);
  /// A view of memory owned elsewhere. |owner| (may be empty) is kept alive with the view.
  /// Empty |strides| means row-contiguous.
  static Array borrow(void* data, std::span<const int64_t> shape, std::span<const int64_t> strides,
                      Dtype dtype, Device device = Device::cpu(), std::shared_ptr<void> owner = {});
  /// The same, for shapes and strides written as lists ({2, 3}).
  static Array borrow(void* data, const Shape& shape, const Strides& strides, Dtype dtype,
                      Device device = Device::cpu(), std::shared_ptr<void> owner = {}) {
    return borrow(data, std::span<const int64_t>(shape), std::span<const int64_t>(strides), dtype,
                  device, std::move(owner));
  }

  void* data() const { return data_; }
  Dtype dtype() const { return dtype_; }
  const Device& device() const { return device_; }
  int ndim() const { return ndim_; }
  std::span<const int64_t> shape() const { return {shape_, static_cast<size_t>(ndim_)}; }
  std::span<const int64_t> strides() const { return {strides_, static_cast<size_t>(ndim_)}; }
  int64_t shape(int axis) const { return shape_[axis]; }
  int64_t stride(int axis) const { return strides_[axis]; }
  int64_t size() const;
  size_t nbytes() const { return static_cast<size_t>(size()) * itemsize(dtype_); }
  bool valid() const { return data_ != nullptr || owner_ != nullptr || ndim_ > 0; }
  bool is_row_contiguous() const;
  const std::shared_ptr<void>& owner() const { return owner_; }
  /// Whether the memory must not be written (a read-only NumPy array, bytes): kernels refuse it
  /// as an output, and fill() refuses it.
  bool read_only() const { return read_only_; }
  /// The same view of the same memory, read-only.
  Array as_read_only() const;

  /// A row-contiguous copy on the same device (this array itself when already contiguous).
  Array contiguous() const;
  /// The array on |device| (this array itself when already there).
  Array to(Device device) const;
  /// A row-contiguous copy converted to |dtype|, on the same device (this array itself when it
  /// already has |dtype|), as NumPy's astype converts: floating values round to nearest even,
  /// floating to integer truncates toward zero, integer to integer wraps, anything to bool is
  /// "nonzero". Throws ValueError for complex64 to a type other than complex64 or bool, and for
  /// a floating value (NaN, infinity) whose whole part the integer type cannot hold. GPU arrays
  /// are converted on the host, through a copy each way.
  Array astype(Dtype dtype) const;
  /// Sets every element to |value| converted to the array's dtype.
  void fill(double value) const;

 private:
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  Dtype dtype_ = Dtype::Float32;
  Device device_;
  int ndim_ = 0;
  int64_t shape_[kMaxNdim] = {};
  int64_t strides_[kMaxNdim] = {};
  bool read_only_ = false;
};

}  // namespace kjit
