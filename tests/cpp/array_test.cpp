#include <gtest/gtest.h>
#include <kjit/kjit.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace kjit {
namespace {

template <class T>
std::vector<T> elements(const Array& a) {
  EXPECT_TRUE(a.is_row_contiguous());
  EXPECT_EQ(itemsize(a.dtype()), sizeof(T));
  std::vector<T> v(static_cast<size_t>(a.size()));
  if (!v.empty()) std::memcpy(v.data(), a.data(), a.nbytes());
  return v;
}

std::vector<int64_t> vec(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

// A buffer 0, 1, 2, ... of |n| int32 elements.
std::shared_ptr<int32_t[]> iota_buffer(int n) {
  std::shared_ptr<int32_t[]> p(new int32_t[n]);
  std::iota(p.get(), p.get() + n, 0);
  return p;
}

TEST(Array, EmptyIsRowContiguous) {
  Array a = Array::empty({2, 3, 4}, Dtype::Float32);
  EXPECT_TRUE(a.valid());
  EXPECT_NE(a.data(), nullptr);
  EXPECT_EQ(a.ndim(), 3);
  EXPECT_EQ(vec(a.shape()), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(vec(a.strides()), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(a.size(), 24);
  EXPECT_EQ(a.nbytes(), 96u);
  EXPECT_EQ(a.dtype(), Dtype::Float32);
  EXPECT_EQ(a.device(), Device::cpu());
  EXPECT_TRUE(a.is_row_contiguous());
  EXPECT_EQ(a.contiguous().data(), a.data());  // already contiguous: the same memory
}

TEST(Array, ZeroSizedAndDefault) {
  Array z = Array::empty({3, 0, 2}, Dtype::Float64);
  EXPECT_EQ(z.size(), 0);
  EXPECT_EQ(z.nbytes(), 0u);
  EXPECT_TRUE(z.valid());
  EXPECT_TRUE(z.is_row_contiguous());
  Array d;
  EXPECT_FALSE(d.valid());
  EXPECT_EQ(d.ndim(), 0);
}

TEST(Array, Zeros) {
  for (int i = 0; i < kNumDtypes; ++i) {
    Dtype dt = static_cast<Dtype>(i);
    Array a = Array::zeros({5, 7}, dt);
    std::vector<unsigned char> bytes(a.nbytes());
    std::memcpy(bytes.data(), a.data(), a.nbytes());
    for (unsigned char b : bytes) ASSERT_EQ(b, 0) << dtype_name(dt);
  }
}

TEST(Array, Scalar) {
  Array s = Array::scalar(2.5, Dtype::Float32);
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s.nbytes(), 4u);
  EXPECT_TRUE(s.valid());
  EXPECT_TRUE(s.is_row_contiguous());
  EXPECT_EQ(*static_cast<const float*>(s.data()), 2.5f);
  Array i = Array::scalar(-7, Dtype::Int64);
  EXPECT_EQ(*static_cast<const int64_t*>(i.data()), -7);
  Array h = Array::scalar(1.5, Dtype::Float16);
  EXPECT_EQ(*static_cast<const uint16_t*>(h.data()), 0x3e00);
  Array b = Array::scalar(1.0, Dtype::Bool);
  EXPECT_EQ(*static_cast<const bool*>(b.data()), true);
}

TEST(Array, BorrowKeepsOwnerAlive) {
  auto buffer = iota_buffer(6);
  std::weak_ptr<int32_t[]> watch = buffer;
  Array a = Array::borrow(buffer.get(), {2, 3}, {}, Dtype::Int32, Device::cpu(), buffer);
  buffer.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(vec(a.strides()), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(elements<int32_t>(a), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  {
    Array copy = a;
    a = Array();
    EXPECT_FALSE(watch.expired());
  }
  EXPECT_TRUE(watch.expired());
}

TEST(Array, BorrowWithoutOwner) {
  int32_t data[4] = {1, 2, 3, 4};
  Array a = Array::borrow(data, {4}, {1}, Dtype::Int32);
  EXPECT_EQ(a.data(), data);
  EXPECT_EQ(a.owner(), nullptr);
  EXPECT_TRUE(a.valid());
  EXPECT_THROW(Array::borrow(data, {2, 2}, {1}, Dtype::Int32), ValueError);
}

TEST(Array, ReadOnlyViewsAreNeitherFilledNorWrittenByKernels) {
  std::vector<float> memory = {1, 2, 3, 4};
  const Array frozen = Array::borrow(memory.data(), {4}, {}, Dtype::Float32).as_read_only();
  EXPECT_TRUE(frozen.read_only());
  EXPECT_FALSE(Array::borrow(memory.data(), {4}, {}, Dtype::Float32).read_only());
  EXPECT_THROW(frozen.fill(0.0), ValueError);
  Kernel k = metal_kernel("twice", {"inp"}, {"out"},
                          "uint i = thread_position_in_grid.x; out[i] = inp[i] * 2;");
  LaunchOptions options;
  options.outputs = std::vector<Array>{frozen};
  try {
    k({Array::zeros({4}, Dtype::Float32)}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1}, {},
      std::nullopt, false, options);
    ADD_FAILURE() << "a read-only output was written";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("outputs[0] ('out') is read-only"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(memory, (std::vector<float>{1, 2, 3, 4}));
  // Read as an input.
  auto out = k({frozen}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1});
  EXPECT_EQ(elements<float>(out[0]), (std::vector<float>{2, 4, 6, 8}));
}

TEST(Array, RowContiguity) {
  auto buffer = iota_buffer(64);
  auto view = [&](Shape shape, Strides strides, int64_t offset = 0) {
    return Array::borrow(buffer.get() + offset, shape, strides, Dtype::Int32, Device::cpu(),
                         buffer);
  };
  EXPECT_TRUE(view({4, 3}, {3, 1}).is_row_contiguous());
  EXPECT_FALSE(view({3, 4}, {1, 3}).is_row_contiguous());  // transposed
  EXPECT_FALSE(view({4, 3}, {0, 1}).is_row_contiguous());  // broadcast rows
  EXPECT_FALSE(view({4, 3}, {3, 0}).is_row_contiguous());  // broadcast columns
  EXPECT_FALSE(view({5}, {-1}, 4).is_row_contiguous());    // reversed
  EXPECT_FALSE(view({2, 3}, {-3, 1}, 3).is_row_contiguous());
  EXPECT_FALSE(view({4, 2}, {3, 1}).is_row_contiguous());  // a column slice
  EXPECT_FALSE(view({6}, {2}).is_row_contiguous());        // every other element
  // Size-1 dimensions may have any stride.
  EXPECT_TRUE(view({1, 3}, {0, 1}).is_row_contiguous());
  EXPECT_TRUE(view({3, 1}, {1, 99}).is_row_contiguous());
  EXPECT_TRUE(view({1}, {-5}, 10).is_row_contiguous());
  EXPECT_TRUE(view({2, 1, 3}, {3, 7, 1}).is_row_contiguous());
}

TEST(Array, EmptyViewsAreRowContiguous) {
  // No elements, nothing to lay out: whatever the strides, and wherever the zero is.
  int32_t none[1] = {0};
  for (auto [shape, strides] :
       {std::pair<Shape, Strides>{{3, 0}, {7, 1}}, std::pair<Shape, Strides>{{0, 3}, {1, 7}},
        std::pair<Shape, Strides>{{2, 0, 5}, {-1, 3, 9}}}) {
    Array v = Array::borrow(none, shape, strides, Dtype::Int32);
    EXPECT_TRUE(v.is_row_contiguous()) << shape[0] << "x" << shape[1];
    EXPECT_NO_THROW(v.fill(1.0));
    EXPECT_EQ(v.contiguous().size(), 0);
  }
}

TEST(Array, ContiguousCopiesInLogicalOrder) {
  auto buffer = iota_buffer(24);  // base[i][j] = 4 * i + j for a 6 x 4 base
  auto view = [&](Shape shape, Strides strides, int64_t offset = 0) {
    return Array::borrow(buffer.get() + offset, shape, strides, Dtype::Int32, Device::cpu(),
                         buffer);
  };
  // Transpose of the 6 x 4 base: 4 x 6.
  Array t = view({4, 6}, {1, 4}).contiguous();
  EXPECT_NE(t.data(), buffer.get());
  EXPECT_EQ(vec(t.strides()), (std::vector<int64_t>{6, 1}));
  EXPECT_EQ(elements<int32_t>(t),
            (std::vector<int32_t>{0, 4, 8,  12, 16, 20, 1, 5, 9,  13, 17, 21,
                                  2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23}));
  // Broadcast of row 1 three times.
  EXPECT_EQ(elements<int32_t>(view({3, 4}, {0, 1}, 4).contiguous()),
            (std::vector<int32_t>{4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7}));
  // Reversed rows and every other column: base[::-1, ::2].
  EXPECT_EQ(elements<int32_t>(view({6, 2}, {-4, 2}, 20).contiguous()),
            (std::vector<int32_t>{20, 22, 16, 18, 12, 14, 8, 10, 4, 6, 0, 2}));
  // Fully reversed 1-D.
  EXPECT_EQ(elements<int32_t>(view({5}, {-1}, 4).contiguous()),
            (std::vector<int32_t>{4, 3, 2, 1, 0}));
  // 3-D permutation: the base as 2 x 3 x 4, axes (2, 0, 1).
  std::vector<int32_t> expected;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) expected.push_back(12 * i + 4 * j + k);
  EXPECT_EQ(elements<int32_t>(view({4, 2, 3}, {1, 12, 4}).contiguous()), expected);
  // Empty.
  EXPECT_EQ(view({0, 4}, {1, 0}).contiguous().size(), 0);
}

TEST(Array, ContiguousForEveryItemSize) {
  for (int d = 0; d < kNumDtypes; ++d) {
    Dtype dt = static_cast<Dtype>(d);
    const size_t item = itemsize(dt);
    Array base = Array::empty({3, 2}, dt);
    auto* bytes = static_cast<unsigned char*>(base.data());
    for (size_t b = 0; b < base.nbytes(); ++b) bytes[b] = static_cast<unsigned char>(b);
    Array t =
        Array::borrow(base.data(), {2, 3}, {1, 2}, dt, Device::cpu(), base.owner()).contiguous();
    const auto* out = static_cast<const unsigned char*>(t.data());
    // t[i][j] = base[j][i], at base element 2 * j + i.
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        EXPECT_EQ(std::memcmp(out + (3 * i + j) * item, bytes + (2 * j + i) * item, item), 0)
            << dtype_name(dt) << " " << i << "," << j;
      }
    }
  }
}

template <class T>
void expect_filled(Dtype dt, double value, T expected) {
  Array a = Array::empty({3, 5}, dt);
  a.fill(value);
  for (T v : elements<T>(a)) {
    ASSERT_EQ(std::memcmp(&v, &expected, sizeof(T)), 0) << dtype_name(dt) << " " << value;
  }
}

TEST(Array, FillEveryDtype) {
  expect_filled<uint8_t>(Dtype::Bool, 1.0, 1);
  expect_filled<uint8_t>(Dtype::Bool, -0.5, 1);
  expect_filled<uint8_t>(Dtype::Bool, 0.0, 0);
  expect_filled<int8_t>(Dtype::Int8, -3, -3);
  expect_filled<int16_t>(Dtype::Int16, -300, -300);
  expect_filled<int32_t>(Dtype::Int32, -70000, -70000);
  expect_filled<int64_t>(Dtype::Int64, -5e12, -5000000000000);
  expect_filled<uint8_t>(Dtype::UInt8, 200, 200);
  expect_filled<uint16_t>(Dtype::UInt16, 60000, 60000);
  expect_filled<uint32_t>(Dtype::UInt32, 4e9, 4000000000u);
  expect_filled<uint64_t>(Dtype::UInt64, 1e19, 10000000000000000000ull);
  expect_filled<uint16_t>(Dtype::Float16, 1.5, 0x3e00);
  expect_filled<uint16_t>(Dtype::Float16, -2.0, 0xc000);
  expect_filled<uint16_t>(Dtype::Float16, 65504.0, 0x7bff);
  expect_filled<uint16_t>(Dtype::Float16, 1e6, 0x7c00);  // overflows to infinity
  expect_filled<uint16_t>(Dtype::BFloat16, 1.5, 0x3fc0);
  expect_filled<uint16_t>(Dtype::BFloat16, -2.0, 0xc000);
  expect_filled<float>(Dtype::Float32, 0.1, 0.1f);
  expect_filled<float>(Dtype::Float32, -0.0, -0.0f);  // the sign bit is kept
  expect_filled<double>(Dtype::Float64, 0.1, 0.1);
  expect_filled<std::complex<float>>(Dtype::Complex64, 2.5, {2.5f, 0.0f});
  for (int d = 0; d < kNumDtypes; ++d) {
    Array a = Array::empty({4}, static_cast<Dtype>(d));
    std::memset(a.data(), 0xab, a.nbytes());
    a.fill(0.0);
    std::vector<unsigned char> bytes(a.nbytes());
    std::memcpy(bytes.data(), a.data(), a.nbytes());
    for (unsigned char b : bytes) ASSERT_EQ(b, 0) << dtype_name(static_cast<Dtype>(d));
  }
}

TEST(Array, MovingLeavesTheSourceEmpty) {
  Array a = Array::zeros({4}, Dtype::Float32);
  const void* data = a.data();
  Array b = std::move(a);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(vec(b.shape()), (std::vector<int64_t>{4}));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): what a moved-from Array is
  EXPECT_THROW(a.fill(1.0), ValueError);
  Array c;
  c = std::move(b);
  EXPECT_EQ(c.data(), data);
  EXPECT_FALSE(b.valid());  // NOLINT(bugprone-use-after-move)
  c.fill(2.0);
  EXPECT_EQ(elements<float>(c), (std::vector<float>{2, 2, 2, 2}));
  Array copy = c;  // copies share the memory and stay valid
  EXPECT_TRUE(c.valid() && copy.valid());
  EXPECT_EQ(copy.data(), data);
}

TEST(Array, EmptyArraysAreNotFilled) { EXPECT_THROW(Array().fill(1.0), ValueError); }

TEST(Array, FillRejectsNonContiguousViews) {
  auto buffer = iota_buffer(8);
  Array v = Array::borrow(buffer.get(), {4}, {2}, Dtype::Int32, Device::cpu(), buffer);
  EXPECT_THROW(v.fill(1.0), ValueError);
}

TEST(Array, BadShapes) {
  EXPECT_THROW(Array::empty({2, -1}, Dtype::Float32), ValueError);
  EXPECT_THROW(Array::zeros({-3}, Dtype::Int8), ValueError);
  EXPECT_THROW(Array::empty(Shape(11, 1), Dtype::Float32), ValueError);
  EXPECT_THROW(Array::borrow(nullptr, Shape(11, 1), {}, Dtype::Float32), ValueError);
  EXPECT_THROW(Array::borrow(nullptr, {-1}, {}, Dtype::Float32), ValueError);
  EXPECT_THROW(Array::borrow(nullptr, {4}, {}, Dtype::Float32), ValueError);  // no memory
  EXPECT_THROW(Array::borrow(nullptr, Shape{}, Strides{}, Dtype::Float32), ValueError);  // 0-d
  EXPECT_EQ(Array::borrow(nullptr, {3, 0}, {}, Dtype::Float32).size(), 0);  // nothing to hold
  Array ten = Array::empty(Shape(10, 1), Dtype::Float32);
  EXPECT_EQ(ten.ndim(), 10);
  EXPECT_EQ(ten.size(), 1);
  try {
    Array::empty(Shape(11, 1), Dtype::Float32);
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("10"), std::string::npos) << e.what();
  }
}

TEST(Array, ToTheSameDeviceIsIdentity) {
  Array a = Array::zeros({3}, Dtype::Float32);
  EXPECT_EQ(a.to(Device::cpu()).data(), a.data());
}

// A row-contiguous array of |dtype| holding |values|.
template <class T>
Array array_of(const std::vector<T>& values, Dtype dtype) {
  Array a = Array::empty({static_cast<int64_t>(values.size())}, dtype);
  std::memcpy(a.data(), values.data(), a.nbytes());
  return a;
}

TEST(Astype, FloatToIntegerTruncatesTowardZero) {
  Array a = array_of<double>({2.5, -2.5, 2.999, -2.999, -0.5, 127.9, -128.9}, Dtype::Float64);
  Array b = a.astype(Dtype::Int8);
  EXPECT_EQ(b.dtype(), Dtype::Int8);
  EXPECT_EQ(elements<int8_t>(b), (std::vector<int8_t>{2, -2, 2, -2, 0, 127, -128}));
  EXPECT_EQ(
      elements<uint64_t>(array_of<float>({-0.99f, 0x1p63f}, Dtype::Float32).astype(Dtype::UInt64)),
      (std::vector<uint64_t>{0, uint64_t{1} << 63}));
}

TEST(Astype, IntegersWrapAndBoolIsNonzero) {
  Array a = array_of<int32_t>({300, -1, 128, 0, -129}, Dtype::Int32);
  EXPECT_EQ(elements<int8_t>(a.astype(Dtype::Int8)), (std::vector<int8_t>{44, -1, -128, 0, 127}));
  EXPECT_EQ(elements<uint16_t>(a.astype(Dtype::UInt16)),
            (std::vector<uint16_t>{300, 65535, 128, 0, 65407}));
  EXPECT_EQ(elements<uint8_t>(a.astype(Dtype::Bool)), (std::vector<uint8_t>{1, 1, 1, 0, 1}));
  Array f = array_of<float>({0.0f, -0.0f, NAN, 1e-40f}, Dtype::Float32);
  EXPECT_EQ(elements<uint8_t>(f.astype(Dtype::Bool)), (std::vector<uint8_t>{0, 0, 1, 1}));
  Array z = array_of<std::complex<float>>({{0, 0}, {0, 1}, {2, 0}}, Dtype::Complex64);
  EXPECT_EQ(elements<uint8_t>(z.astype(Dtype::Bool)), (std::vector<uint8_t>{0, 1, 1}));
}

TEST(Astype, RoundsOnceToNearestEvenFromTheSourceValue) {
  // Each value is a tie of the narrow type once rounded to float, and above the tie before.
  const double to_half = 1 + 0x1p-11 + 0x1p-40, to_bfloat = 1 + 0x1p-8 + 0x1p-40;
  EXPECT_EQ(elements<uint16_t>(array_of<double>({to_half}, Dtype::Float64).astype(Dtype::Float16)),
            std::vector<uint16_t>{0x3c01});  // 1 + 2^-10
  EXPECT_EQ(
      elements<uint16_t>(array_of<double>({to_bfloat}, Dtype::Float64).astype(Dtype::BFloat16)),
      std::vector<uint16_t>{0x3f81});  // 1 + 2^-7
  const int64_t big = (int64_t{1} << 40) + (int64_t{1} << 32) + 1;
  EXPECT_EQ(
      elements<uint16_t>(array_of<int64_t>({big, -big}, Dtype::Int64).astype(Dtype::BFloat16)),
      (std::vector<uint16_t>{0x5381, 0xd381}));  // +-(2^40 + 2^33)
  // Ties themselves go to even; float16 overflows to infinity from 65520 on.
  EXPECT_EQ(
      elements<uint16_t>(
          array_of<double>({1 + 0x1p-11, 65519.0, 65520.0}, Dtype::Float64).astype(Dtype::Float16)),
      (std::vector<uint16_t>{0x3c00, 0x7bff, 0x7c00}));
  EXPECT_EQ(elements<float>(
                array_of<int64_t>({(int64_t{1} << 40) + 1}, Dtype::Int64).astype(Dtype::Float32)),
            std::vector<float>{0x1p40f});
}

TEST(Astype, WidensExactlyAndMakesComplexWithZeroImaginaryPart) {
  Array h = array_of<uint16_t>({0x3c00, 0xc200, 0x0001, 0x7c00}, Dtype::Float16);
  EXPECT_EQ(elements<double>(h.astype(Dtype::Float64)),
            (std::vector<double>{1.0, -3.0, 0x1p-24, INFINITY}));
  EXPECT_EQ(elements<int32_t>(h.astype(Dtype::Complex64).astype(Dtype::Bool).astype(Dtype::Int32)),
            (std::vector<int32_t>{1, 1, 1, 1}));
  EXPECT_EQ(elements<std::complex<float>>(
                array_of<int16_t>({-7, 3}, Dtype::Int16).astype(Dtype::Complex64)),
            (std::vector<std::complex<float>>{{-7, 0}, {3, 0}}));
}

TEST(Astype, StridedViewsGiveRowContiguousCopies) {
  auto buf = iota_buffer(12);
  Array view = Array::borrow(buf.get() + 8, {3, 2}, {-4, 2}, Dtype::Int32).astype(Dtype::Float64);
  EXPECT_TRUE(view.is_row_contiguous());
  EXPECT_EQ(vec(view.shape()), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(elements<double>(view), (std::vector<double>{8, 10, 4, 6, 0, 2}));
}

TEST(Astype, TheSameDtypeIsThisArray) {
  Array a = Array::zeros({4}, Dtype::Int16);
  EXPECT_EQ(a.astype(Dtype::Int16).data(), a.data());
  EXPECT_NE(a.astype(Dtype::UInt16).data(), a.data());
}

TEST(Astype, Refusals) {
  auto expect_message = [](const Array& a, Dtype dtype, const std::string& message) {
    try {
      a.astype(dtype);
      ADD_FAILURE() << "no exception; expected " << message;
    } catch (const ValueError& e) {
      EXPECT_EQ(e.what(), message);
    }
  };
  Array z = array_of<std::complex<float>>({{1, 2}}, Dtype::Complex64);
  expect_message(z, Dtype::Float32,
                 "astype: complex64 converts only to complex64 or bool; float32 would discard the "
                 "imaginary part");
  expect_message(z, Dtype::Int8,
                 "astype: complex64 converts only to complex64 or bool; int8 would discard the "
                 "imaginary part");
  const std::string fits =
      " (a floating value converts to an integer type only when its whole part fits)";
  expect_message(array_of<float>({1.0f, 128.0f}, Dtype::Float32), Dtype::Int8,
                 "astype: 128 is out of the range of int8" + fits);
  expect_message(array_of<double>({-1.0}, Dtype::Float64), Dtype::UInt32,
                 "astype: -1 is out of the range of uint32" + fits);
  expect_message(array_of<double>({NAN}, Dtype::Float64), Dtype::Int64,
                 "astype: nan is out of the range of int64" + fits);
  expect_message(array_of<uint16_t>({0x7c00}, Dtype::Float16), Dtype::Int32,
                 "astype: inf is out of the range of int32" + fits);
  EXPECT_THROW(Array().astype(Dtype::Int8), ValueError);
}

TEST(Dtype, NamesAndSizes) {
  EXPECT_EQ(itemsize(Dtype::Bool), 1u);
  EXPECT_EQ(itemsize(Dtype::Float16), 2u);
  EXPECT_EQ(itemsize(Dtype::BFloat16), 2u);
  EXPECT_EQ(itemsize(Dtype::Complex64), 8u);
  for (int d = 0; d < kNumDtypes; ++d) {
    Dtype dt = static_cast<Dtype>(d);
    EXPECT_EQ(dtype_from_name(dtype_name(dt)), dt) << dtype_name(dt);
  }
  EXPECT_EQ(dtype_from_name("half"), Dtype::Float16);
  EXPECT_EQ(dtype_from_name("float"), Dtype::Float32);
  EXPECT_THROW(dtype_from_name("float128"), TypeError);
}

}  // namespace
}  // namespace kjit
