// The checks of a call's settings made before any array is read (core/call_settings.h).
#include "core/call_settings.h"

#include <gtest/gtest.h>
#include <kjit/kjit.h>

#include <string>
#include <vector>

#include "call_test_support.h"
#include "codegen/kernel_spec.h"

namespace kjit {
namespace {

using testing::elementwise;
using testing::expect_value_error;
using testing::scale_spec;
using testing::Settings;
using testing::value_error_of;

TEST(CheckCount, NamesTheParameterTheCountsAndTheNames) {
  const auto spec = scale_spec();
  EXPECT_NO_THROW(check_count(*spec, "inputs", spec->input_names, 2));
  EXPECT_EQ(value_error_of([&] { check_count(*spec, "inputs", spec->input_names, 1); }),
            "[kjit.metal_kernel] kernel 'scale': inputs: expected 2 (x, a), got 1");
  EXPECT_EQ(value_error_of([&] { check_count(*spec, "outputs", spec->output_names, 3); }),
            "[kjit.metal_kernel] kernel 'scale': outputs: expected 2 (out, neg), got 3");
}

TEST(CheckCount, WithoutNamesGivesTheCountAlone) {
  const auto spec = scale_spec();
  EXPECT_NO_THROW(check_count(*spec, "output_dtypes", spec->output_names, 2, false));
  EXPECT_EQ(
      value_error_of([&] { check_count(*spec, "output_dtypes", spec->output_names, 0, false); }),
      "[kjit.metal_kernel] kernel 'scale': output_dtypes: expected 2, got 0");
}

TEST(CheckSettings, AcceptsSettingsAtTheEdgesOfTheirRanges) {
  const auto spec = scale_spec();
  Settings s = elementwise(*spec, 16);
  EXPECT_NO_THROW(check_settings(*spec, s.view()));
  s.grid = {0, 0, 0};  // a launch of no thread
  EXPECT_NO_THROW(check_settings(*spec, s.view()));
  s.grid = {kMaxGridDim, 1, 1};
  s.threadgroup = {1024, 1024, 1024};  // each size in range: resolve checks the product
  EXPECT_NO_THROW(check_settings(*spec, s.view()));
  // More than 2^64 threads, in fewer than 2^64 groups.
  s.grid = {kMaxGridDim, kMaxGridDim, 2};
  s.threadgroup = {1024, 1024, 1};
  EXPECT_NO_THROW(check_settings(*spec, s.view()));
  s = elementwise(*spec, 16);
  s.output_shapes[1] = Shape(kMaxNdim, 1);
  EXPECT_NO_THROW(check_settings(*spec, s.view()));
}

TEST(CheckSettings, RefusesCountsOfOutputShapesAndDtypes) {
  const auto spec = scale_spec();
  Settings s = elementwise(*spec, 16);
  s.output_shapes.pop_back();
  expect_value_error([&] { check_settings(*spec, s.view()); },
                     {"kernel 'scale': output_shapes: expected 2 (out, neg), got 1"});
  s = elementwise(*spec, 16);
  s.output_dtypes.push_back(Dtype::Int32);
  expect_value_error([&] { check_settings(*spec, s.view()); },
                     {"kernel 'scale': output_dtypes: expected 2 (out, neg), got 3"});
}

TEST(CheckSettings, RefusesGridsOutOfRange) {
  const auto spec = scale_spec();
  Settings s = elementwise(*spec, 16);
  s.grid = {8, -1, 1};
  expect_value_error([&] { check_settings(*spec, s.view()); },
                     {"kernel 'scale': grid: each size must be in [0, 2^32-1] threads, got "
                      "(8, -1, 1)"});
  s.grid = {1, 1, kMaxGridDim + 1};
  expect_value_error([&] { check_settings(*spec, s.view()); },
                     {"grid: each size must be in [0, 2^32-1] threads, got (1, 1, 4294967296)"});
}

TEST(CheckSettings, RefusesThreadgroupsOutOfRange) {
  const auto spec = scale_spec();
  Settings s = elementwise(*spec, 16);
  s.threadgroup = {0, 1, 1};
  expect_value_error(
      [&] { check_settings(*spec, s.view()); },
      {"kernel 'scale': threadgroup: each size must be in [1, 1024], got (0, 1, 1)"});
  s.threadgroup = {32, 1, 1025};
  expect_value_error([&] { check_settings(*spec, s.view()); },
                     {"threadgroup: each size must be in [1, 1024], got (32, 1, 1025)"});
}

TEST(CheckSettings, RefusesMoreThanTwoToTheSixtyFourThreadgroups) {
  const auto spec = scale_spec();
  Settings s = elementwise(*spec, 16);
  s.grid = {kMaxGridDim, kMaxGridDim, kMaxGridDim};
  s.threadgroup = {1, 1, 1};
  expect_value_error([&] { check_settings(*spec, s.view()); },
                     {"kernel 'scale': grid: (4294967295, 4294967295, 4294967295) threads in "
                      "threadgroups of (1, 1, 1) are more than 2^64 threadgroups"});
}

TEST(CheckSettings, RefusesOutputsOfMoreThanTenDimensions) {
  const auto spec = scale_spec();
  Settings s = elementwise(*spec, 16);
  s.output_shapes[1] = Shape(kMaxNdim + 1, 1);
  expect_value_error(
      [&] { check_settings(*spec, s.view()); },
      {"kernel 'scale': output_shapes[1] has 11 dimensions; at most 10 are supported"});
}

TEST(CheckSettings, RefusesNegativeOutputDimensions) {
  const auto spec = scale_spec();
  Settings s = elementwise(*spec, 16);
  s.output_shapes[0] = {4, -3};
  expect_value_error([&] { check_settings(*spec, s.view()); },
                     {"kernel 'scale': output_shapes[0]: dimensions must be >= 0, got -3"});
}

TEST(CheckTemplateArgs, RefusesNamesGivenTwiceOrTakenByParameters) {
  const auto spec = scale_spec();
  EXPECT_NO_THROW(check_template_args(*spec, {{"T", Dtype::Float32}, {"N", 3}}));
  expect_value_error(
      [&] {
        check_template_args(*spec, {{"N", 3}, {"N", 4}});
      },
      {"kernel 'scale': template: the name 'N' is given more than once"});
  expect_value_error(
      [&] {
        check_template_args(*spec, {{"neg", true}});
      },
      {"kernel 'scale': template: 'neg' is also the name of an input or output"});
  expect_value_error(
      [&] {
        check_template_args(*spec, {{"x_shape", 1}});
      },
      {"kernel 'scale': template: 'x_shape' is the name of"});
}

TEST(CheckAtomicOutputs, MetalAtomicsAreThirtyTwoBitsOnly) {
  auto spec_of = [](Dialect dialect, bool atomic) {
    return make_spec(dialect, "acc", {"inp"}, {"out", "count"}, "", "", true, atomic, 0, {});
  };
  const std::vector<Dtype> wide = {Dtype::Float32, Dtype::Float64};
  EXPECT_NO_THROW(
      check_atomic_outputs(*spec_of(Dialect::Metal, true), {Dtype::Int32, Dtype::UInt32}));
  expect_value_error([&] { check_atomic_outputs(*spec_of(Dialect::Metal, true), wide); },
                     {"kernel 'acc': output_dtypes[1]: float64 outputs cannot be atomic"});
  EXPECT_NO_THROW(check_atomic_outputs(*spec_of(Dialect::Metal, false), wide));
  EXPECT_NO_THROW(check_atomic_outputs(*spec_of(Dialect::Cuda, true), wide));
}

}  // namespace
}  // namespace kjit
