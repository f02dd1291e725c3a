#include "core/device_ops.h"

#include <kjit/errors.h>
#include <kjit/kernel.h>

#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "core/backend.h"
#include "core/shape_check.h"
#include "core/strided_copy.h"

// The prelude's conversions, shared so that host and kernels round identically.
#include "../../prelude/common/float_bits.h"

namespace kjit {
namespace {

// One element of |dtype| holding |value|, as raw bytes.
void encode(double value, Dtype dtype, void* out) {
  switch (dtype) {
#define KJIT_ENCODE(D, T)           \
  case Dtype::D: {                  \
    T v = static_cast<T>(value);    \
    std::memcpy(out, &v, sizeof v); \
    break;                          \
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

// Row-contiguous copies of strided views on the GPU, as a kernel of our own: elements are moved
// as unsigned integers of their size.
const Kernel& gpu_strided_copy() {
  static const Kernel k = cuda_kernel("strided_copy", {"inp"}, {"out"}, R"(
    const uint64_t i = uint64_t(thread_position_in_grid.y) * threads_per_grid.x +
                       thread_position_in_grid.x;
    uint64_t n = 1;
    for (int d = 0; d < inp_ndim; ++d) n *= uint64_t(inp_shape[d]);
    if (i >= n) return;
    out[i] = inp[elem_to_loc(i, inp_shape.data(), inp_strides.data(), inp_ndim)];
  )",
                                      "", /*ensure_row_contiguous=*/false);
  return k;
}

Dtype same_size_uint(Dtype d) {
  switch (itemsize(d)) {
    case 1:
      return Dtype::UInt8;
    case 2:
      return Dtype::UInt16;
    case 4:
      return Dtype::UInt32;
    default:
      return Dtype::UInt64;
  }
}

Array as_dtype(const Array& a, Dtype dtype) {
  Shape shape(a.shape().begin(), a.shape().end());
  Strides strides(a.strides().begin(), a.strides().end());
  return Array::borrow(a.data(), shape, strides, dtype, a.device(), a.owner());
}

// A row-contiguous copy of |a| on its own device.
Array contiguous_here(const Array& a, uintptr_t stream) {
  Shape shape(a.shape().begin(), a.shape().end());
  Array out = make_array(shape, a.dtype(), a.device(), stream);
  if (a.device().type == DeviceType::CPU) {
    strided_copy(a, out);
    return out;
  }
  const int64_t n = a.size();
  if (n == 0) return out;
  const int64_t x = n <= 0xffffffffll ? n : (int64_t{1} << 30);
  const Dtype u = same_size_uint(a.dtype());
  LaunchOptions options;
  options.outputs = std::vector<Array>{as_dtype(out, u)};
  options.stream = stream;
  gpu_strided_copy()({as_dtype(a, u)}, {shape}, {u}, {x, (n + x - 1) / x, 1}, {256, 1, 1}, {},
                     std::nullopt, false, options);
  return out;
}

}  // namespace

std::shared_ptr<void> allocate(const Device& device, size_t bytes, uintptr_t stream) {
  return backend_for(device.type).allocate(device.index, bytes, stream);
}

Array make_array(const Shape& shape, Dtype dtype, const Device& device, uintptr_t stream) {
  check_shape(shape, "shape");
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::shared_ptr<void> owner = allocate(device, static_cast<size_t>(n) * itemsize(dtype), stream);
  return Array::borrow(owner.get(), shape, {}, dtype, device, owner);
}

bool in_range(Dtype dtype, double value) {
  if (!is_integral(dtype)) return true;
  const int bits = static_cast<int>(8 * itemsize(dtype));
  const bool is_signed = dtype <= Dtype::Int64;
  const double whole = std::trunc(value);
  return std::isfinite(value) && whole >= (is_signed ? -std::ldexp(1.0, bits - 1) : 0.0) &&
         whole < std::ldexp(1.0, is_signed ? bits - 1 : bits);
}

std::string out_of_range(Dtype dtype, double value) {
  std::ostringstream shown;
  shown << std::setprecision(17) << value;
  return shown.str() + " is out of the range of " + std::string(dtype_name(dtype));
}

void fill(const Array& array, double value, uintptr_t stream) {
  if (!array.valid()) throw ValueError("fill: the array is empty (a default or moved-from Array)");
  if (array.read_only()) throw ValueError("fill: the array is read-only");
  if (!in_range(array.dtype(), value)) {
    throw ValueError("fill: " + out_of_range(array.dtype(), value));
  }
  if (!array.is_row_contiguous()) throw ValueError("fill: the array must be row-contiguous");
  if (array.size() == 0) return;
  const size_t item = itemsize(array.dtype());
  unsigned char one[16];
  encode(value, array.dtype(), one);
  backend_for(array.device().type)
      .fill(array.data(), one, item, static_cast<size_t>(array.size()), array.device().index,
            stream);
}

Array to_contiguous(const Array& array, const Device& device, uintptr_t stream) {
  Array src = array.is_row_contiguous() ? array : contiguous_here(array, stream);
  if (src.device() == device) return src;
  Shape shape(src.shape().begin(), src.shape().end());
  Array out = make_array(shape, src.dtype(), device, stream);
  copy_into(out, src, stream);
  return out;
}

void copy_into(const Array& dst, const Array& src, uintptr_t stream) {
  const bool to_host = dst.device().type == DeviceType::CPU;
  const bool from_host = src.device().type == DeviceType::CPU;
  // The copy is the device side's: the host's own when both are host memory.
  const Device& device = to_host ? src.device() : dst.device();
  backend_for(device.type)
      .copy(dst.data(), src.data(), src.nbytes(), device.index, stream, to_host, from_host);
}

}  // namespace kjit
