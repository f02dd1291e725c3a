// The call pipeline's outputs: made fresh, or the caller's checked, and filled with the init value
// (prepare_outputs, make_outputs and finish_outputs in core/call.h).
#include <gtest/gtest.h>
#include <kjit/kjit.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "call_test_support.h"
#include "core/backend.h"
#include "core/call.h"

namespace kjit {
namespace {

using testing::elements_of;
using testing::expect_value_error;
using testing::poisoned_floats;
using testing::scale_spec;
using testing::Settings;

std::vector<int64_t> vec(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

// Two outputs of other shapes and dtypes, so that a mix-up between them shows.
Settings two_outputs() {
  Settings s;
  s.output_shapes = {{3, 4}, {5}};
  s.output_dtypes = {Dtype::Float32, Dtype::Int16};
  s.grid = {12, 1, 1};
  s.threadgroup = {4, 1, 1};
  return s;
}

// prepare_outputs reads the call's device alone: no plan is needed to test it.
ResolvedCall on_the_cpu(const Settings& s) {
  return {Device::cpu(), nullptr, launch_dims(s.grid, s.threadgroup)};
}

KernelOutputs prepare(const Settings& s, const LaunchOptions& options = {}) {
  return prepare_outputs(*scale_spec(), s.view(), on_the_cpu(s), options);
}

TEST(PrepareOutputs, MakesFreshOutputsOfTheSettingsShapesAndDtypes) {
  const Settings s = two_outputs();
  const LaunchOptions options;
  const KernelOutputs outputs = prepare(s, options);
  EXPECT_FALSE(outputs.moved);
  ASSERT_EQ(outputs.arrays.size(), 2u);
  EXPECT_EQ(&outputs.written(options), &outputs.arrays);
  for (size_t o = 0; o < 2; ++o) {
    const Array& a = outputs.arrays[o];
    EXPECT_EQ(vec(a.shape()), s.output_shapes[o]) << o;
    EXPECT_EQ(a.dtype(), s.output_dtypes[o]) << o;
    EXPECT_EQ(a.device(), Device::cpu()) << o;
    EXPECT_TRUE(a.is_row_contiguous()) << o;
    EXPECT_FALSE(a.read_only()) << o;
    EXPECT_NE(a.data(), nullptr) << o;
  }
  EXPECT_NE(outputs.arrays[0].data(), outputs.arrays[1].data());
}

TEST(PrepareOutputs, WritesTheOutputsGivenInPlace) {
  const Settings s = two_outputs();
  LaunchOptions options;
  options.outputs = {Array::empty({3, 4}, Dtype::Float32), Array::empty({5}, Dtype::Int16)};
  const KernelOutputs outputs = prepare(s, options);
  EXPECT_FALSE(outputs.moved);
  EXPECT_TRUE(outputs.arrays.empty());
  const std::vector<Array>& written = outputs.written(options);
  ASSERT_EQ(written.size(), 2u);
  for (size_t o = 0; o < 2; ++o) EXPECT_EQ(written[o].data(), (*options.outputs)[o].data()) << o;
}

TEST(PrepareOutputs, RefusesOutputsGivenThatDoNotFitTheSettings) {
  const Settings s = two_outputs();
  const Array out = Array::empty({3, 4}, Dtype::Float32);
  const Array neg = Array::empty({5}, Dtype::Int16);
  auto refused = [&](std::vector<Array> given, const std::string& message) {
    LaunchOptions options;
    options.outputs = std::move(given);
    expect_value_error([&] { prepare(s, options); },
                       {"[kjit.metal_kernel] kernel 'scale': " + message});
  };
  refused({out}, "outputs: expected 2 (out, neg), got 1");
  refused({out, Array::empty({5}, Dtype::Float64)},
          "outputs[1] ('neg') has dtype float64 but output_dtypes says int16");
  refused({Array::empty({4, 3}, Dtype::Float32), neg},
          "outputs[0] ('out') does not have the shape output_shapes[0] gives");
  refused({Array::empty({3, 4, 1}, Dtype::Float32), neg},
          "outputs[0] ('out') does not have the shape output_shapes[0] gives");
  refused({out, neg.as_read_only()}, "outputs[1] ('neg') is read-only");
  // Every other column of a 3 x 8 array.
  const Array wide = Array::empty({3, 8}, Dtype::Float32);
  const Array columns =
      Array::borrow(wide.data(), {3, 4}, {8, 2}, Dtype::Float32, Device::cpu(), wide.owner());
  refused({columns, neg}, "outputs[0] ('out') must be row-contiguous");
}

TEST(PrepareOutputs, FillsFreshOutputsWithTheInitValue) {
  Settings s = two_outputs();
  s.init_value = -7.75;
  const KernelOutputs outputs = prepare(s);
  ASSERT_EQ(outputs.arrays.size(), 2u);
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(elements_of<float>(outputs.arrays[0])[i], -7.75f) << i;
  // Converted as NumPy's astype does: toward zero.
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(elements_of<int16_t>(outputs.arrays[1])[i], -7) << i;
}

TEST(PrepareOutputs, FillsTheOutputsGivenWithTheInitValue) {
  Settings s = two_outputs();
  s.init_value = 1234.5;
  LaunchOptions options;
  Array neg = Array::empty({5}, Dtype::Int16);
  neg.fill(-1);
  options.outputs = {poisoned_floats({3, 4}), neg};
  prepare(s, options);
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_EQ(elements_of<float>((*options.outputs)[0])[i], 1234.5f) << i;
  }
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(elements_of<int16_t>(neg)[i], 1234) << i;
}

TEST(PrepareOutputs, RefusesAnInitValueOutOfAnOutputsRange) {
  Settings s = two_outputs();
  s.output_dtypes[1] = Dtype::Int8;
  s.init_value = 300;
  expect_value_error(
      [&] { prepare(s); },
      {"kernel 'scale': init_value (for outputs[1] ('neg')): 300 is out of the range of int8"});
  // Checked for every output before any is filled.
  LaunchOptions options;
  options.outputs = {poisoned_floats({3, 4}), Array::zeros({5}, Dtype::Int8)};
  expect_value_error([&] { prepare(s, options); }, {"init_value (for outputs[1] ('neg'))"});
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_TRUE(std::isnan(elements_of<float>((*options.outputs)[0])[i])) << i;
  }
  s.init_value = std::nan("");
  expect_value_error([&] { prepare(s); }, {"init_value (for outputs[1] ('neg')): nan is out of"});
  // NaN is a float32's to hold.
  s.output_dtypes[1] = Dtype::Float32;
  const KernelOutputs outputs = prepare(s);
  for (const Array& a : outputs.arrays) {
    for (int64_t i = 0; i < a.size(); ++i) EXPECT_TRUE(std::isnan(elements_of<float>(a)[i])) << i;
  }
}

TEST(MakeOutputs, AnOutputThatDoesNotFitIsNamed) {
  try {
    make_outputs(*scale_spec(), {{4}, {int64_t{1} << 52}}, {Dtype::Float32, Dtype::Float32},
                 Device::cpu(), 0);
    ADD_FAILURE() << "2^54 bytes were allocated";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'scale': output_shapes[1] ('neg'): "
                                         "18014398509481984 bytes could not be allocated"),
              std::string::npos)
        << e.what();
  }
}

// Outputs on the CPU for a kernel on a GPU are written there, then copied back.
TEST(FinishOutputs, CopiesBackOutputsGivenOnAnotherDevice) {
  if (backend_for(DeviceType::CUDA).device_count() == 0) {
    GTEST_SKIP() << "no CUDA device: " << backend_for(DeviceType::CUDA).unavailable_reason();
  }
  Settings s = two_outputs();
  s.init_value = 3.0;
  LaunchOptions options;
  Array neg = Array::zeros({5}, Dtype::Int16);
  options.outputs = {poisoned_floats({3, 4}), neg};
  const ResolvedCall call{Device::cuda(0), nullptr, launch_dims(s.grid, s.threadgroup)};
  const KernelOutputs outputs = prepare_outputs(*scale_spec(), s.view(), call, options);
  ASSERT_TRUE(outputs.moved);
  ASSERT_EQ(outputs.arrays.size(), 2u);
  for (const Array& a : outputs.arrays) EXPECT_EQ(a.device(), Device::cuda(0));
  EXPECT_TRUE(std::isnan(elements_of<float>((*options.outputs)[0])[0]));
  finish_outputs(outputs, call, options);
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_EQ(elements_of<float>((*options.outputs)[0])[i], 3.0f) << i;
  }
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(elements_of<int16_t>(neg)[i], 3) << i;
}

}  // namespace
}  // namespace kjit
