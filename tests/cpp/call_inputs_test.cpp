// The call pipeline's inputs as the kernel reads them: the arrays given, or row-contiguous copies
// where the kernel asks for them (stage_inputs in core/call.h).
#include <gtest/gtest.h>
#include <kjit/kjit.h>

#include <cstdint>
#include <vector>

#include "call_test_support.h"
#include "core/call.h"

namespace kjit {
namespace {

using testing::elements_of;
using testing::random_floats;
using testing::scale_spec;
using testing::SeededRng;
using testing::twice_spec;

std::vector<int64_t> vec(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

// stage_inputs reads the call's device alone: no plan is needed to test it.
const ResolvedCall kOnTheCpu{Device::cpu(), nullptr, launch_dims({1, 1, 1}, {1, 1, 1})};

// |view|'s float32 elements in row-major order of its indices, read through its strides.
std::vector<float> gathered(const Array& view) {
  std::vector<float> out;
  std::vector<int64_t> index(view.ndim(), 0);
  for (int64_t n = 0; n < view.size(); ++n) {
    int64_t offset = 0;
    for (int d = 0; d < view.ndim(); ++d) offset += index[d] * view.stride(d);
    out.push_back(static_cast<const float*>(view.data())[offset]);
    for (int d = view.ndim() - 1; d >= 0 && ++index[d] == view.shape(d); --d) index[d] = 0;
  }
  return out;
}

std::vector<float> values(const Array& a) {
  return {elements_of<float>(a), elements_of<float>(a) + a.size()};
}

TEST(StageInputs, ServesRowContiguousInputsAsTheyAre) {
  SeededRng r;
  const std::vector<Array> inputs = {random_floats({6, 5}, r.rng),
                                     Array::scalar(2, Dtype::Float32)};
  EXPECT_TRUE(stage_inputs(*scale_spec(), kOnTheCpu, inputs, 0).empty());
  // Extents of 1 take any stride, and an empty view any strides.
  const Array base = random_floats({8}, r.rng);
  const std::vector<Array> odd = {
      Array::borrow(base.data(), {1, 8, 1}, {100, 1, -3}, Dtype::Float32, Device::cpu(),
                    base.owner()),
      Array::borrow(base.data(), {0, 4}, {5, 7}, Dtype::Float32, Device::cpu(), base.owner())};
  for (const Array& a : odd) {
    EXPECT_TRUE(stage_inputs(*twice_spec(), kOnTheCpu, std::vector<Array>{a}, 0).empty());
  }
}

TEST(StageInputs, CopiesViewsThatAreNotRowContiguous) {
  SeededRng r;
  const Array base = random_floats({5, 7}, r.rng);
  void* const first = base.data();
  void* const last = static_cast<float*>(base.data()) + 34;
  const std::vector<Array> views = {
      // The transpose.
      Array::borrow(first, {7, 5}, {1, 7}, Dtype::Float32, Device::cpu(), base.owner()),
      // Every other element, backwards.
      Array::borrow(last, {18}, {-2}, Dtype::Float32, Device::cpu(), base.owner()),
      // Rows backwards, columns 1, 3, 5.
      Array::borrow(static_cast<float*>(base.data()) + 29, {5, 3}, {-7, 2}, Dtype::Float32,
                    Device::cpu(), base.owner())};
  for (size_t v = 0; v < views.size(); ++v) {
    const Array& view = views[v];
    const Array a = Array::scalar(0.5, Dtype::Float32);
    const std::vector<Array> staged =
        stage_inputs(*scale_spec(), kOnTheCpu, std::vector<Array>{view, a}, 0);
    ASSERT_EQ(staged.size(), 2u) << v;
    const Array& copy = staged[0];
    EXPECT_NE(copy.data(), view.data()) << v;
    EXPECT_TRUE(copy.is_row_contiguous()) << v;
    EXPECT_EQ(copy.device(), Device::cpu()) << v;
    EXPECT_EQ(copy.dtype(), Dtype::Float32) << v;
    EXPECT_EQ(vec(copy.shape()), vec(view.shape())) << v;
    EXPECT_EQ(values(copy), gathered(view)) << v;
    // The scalar, already where the kernel reads it, is passed on as it is.
    EXPECT_EQ(staged[1].data(), a.data()) << v;
  }
}

TEST(StageInputs, LeavesViewsAsTheyAreForKernelsThatReadStrides) {
  SeededRng r;
  const Array base = random_floats({5, 7}, r.rng);
  const std::vector<Array> transposed = {
      Array::borrow(base.data(), {7, 5}, {1, 7}, Dtype::Float32, Device::cpu(), base.owner())};
  EXPECT_TRUE(
      stage_inputs(*twice_spec(/*ensure_row_contiguous=*/false), kOnTheCpu, transposed, 0).empty());
  EXPECT_EQ(
      stage_inputs(*twice_spec(/*ensure_row_contiguous=*/true), kOnTheCpu, transposed, 0).size(),
      1u);
}

}  // namespace
}  // namespace kjit
