// The call pipeline's first stage: the device a call runs on, its launch sizes, and resolve's
// checks of the arrays and its plans (core/call.h).
#include <gtest/gtest.h>
#include <kjit/kjit.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "call_test_support.h"
#include "core/backend.h"
#include "core/call.h"
#include "core/plan.h"

namespace kjit {
namespace {

using testing::elementwise;
using testing::expect_value_error;
using testing::kUntouched;
using testing::random_doubles;
using testing::random_floats;
using testing::scale_spec;
using testing::SeededRng;
using testing::Settings;
using testing::twice_spec;

// resolve_device and resolve look at an array's device, dtype and shape only, so arrays "on a
// GPU" can be described without one.
Array untouched(const Shape& shape, Device device) {
  return Array::borrow(kUntouched, shape, {}, Dtype::Float32, device);
}

bool has_cuda_device() { return backend_for(DeviceType::CUDA).device_count() > 0; }

TEST(ResolveDevice, TheDeviceAskedForWins) {
  const auto spec = scale_spec();
  const std::vector<Array> on_cpu = {Array::zeros({4}, Dtype::Float32),
                                     Array::scalar(1, Dtype::Float32)};
  EXPECT_EQ(resolve_device(*spec, on_cpu, Device::cuda(0)), Device::cuda(0));
  const std::vector<Array> on_gpu = {untouched({4}, Device::cuda(1)),
                                     Array::scalar(1, Dtype::Float32)};
  EXPECT_EQ(resolve_device(*spec, on_gpu, Device::cpu()), Device::cpu());
}

TEST(ResolveDevice, ElseWhereTheArraysLive) {
  const auto spec = scale_spec();
  const std::vector<Array> on_gpu = {untouched({4}, Device::cuda(1)),
                                     untouched({2, 3}, Device::cuda(1))};
  EXPECT_EQ(resolve_device(*spec, on_gpu, std::nullopt), Device::cuda(1));
  const std::vector<Array> on_cpu = {Array::zeros({4}, Dtype::Float32),
                                     Array::zeros({1}, Dtype::Float32)};
  EXPECT_EQ(resolve_device(*spec, on_cpu, std::nullopt), Device::cpu());
}

TEST(ResolveDevice, ZeroDimensionalInputsAreIgnored) {
  const auto spec = scale_spec();
  // A scalar on the CPU goes with an array on a GPU.
  const std::vector<Array> mixed = {untouched({4}, Device::cuda(1)),
                                    Array::scalar(2, Dtype::Float32)};
  EXPECT_EQ(resolve_device(*spec, mixed, std::nullopt), Device::cuda(1));
  // Scalars alone leave the choice to the default device, wherever they live.
  const std::vector<Array> scalars = {untouched({}, Device::cuda(1)),
                                      untouched({}, Device::cuda(1))};
  EXPECT_EQ(resolve_device(*spec, scalars, std::nullopt), default_device());
  EXPECT_EQ(resolve_device(*spec, {}, std::nullopt), default_device());
}

TEST(ResolveDevice, ArraysOnTwoDevicesAreRefused) {
  const auto spec = scale_spec();
  const std::vector<Array> two = {Array::zeros({4}, Dtype::Float32),
                                  untouched({4}, Device::cuda(0))};
  const std::string expected =
      "[kjit.metal_kernel] kernel 'scale': inputs: arrays on different devices (cpu and cuda:0 "
      "for 'a')";
  expect_value_error([&] { resolve_device(*spec, two, std::nullopt); }, {expected});
  // Even where the device asked for would settle the question.
  expect_value_error([&] { resolve_device(*spec, two, Device::cpu()); }, {expected});
  const std::vector<Array> two_gpus = {untouched({4}, Device::cuda(0)),
                                       untouched({4}, Device::cuda(1))};
  expect_value_error([&] { resolve_device(*spec, two_gpus, std::nullopt); },
                     {"arrays on different devices (cuda:0 and cuda:1 for 'a')"});
}

void expect_dims(const LaunchDims& dims, std::vector<unsigned> grid, std::vector<unsigned> group,
                 std::vector<unsigned> groups) {
  EXPECT_EQ(std::vector<unsigned>(dims.grid, dims.grid + 3), grid);
  EXPECT_EQ(std::vector<unsigned>(dims.group, dims.group + 3), group);
  EXPECT_EQ(std::vector<unsigned>(dims.groups, dims.groups + 3), groups);
}

TEST(LaunchDims, EdgeGroupsArePartial) {
  expect_dims(launch_dims({100, 3, 1}, {32, 2, 4}), {100, 3, 1}, {32, 2, 1}, {4, 2, 1});
  expect_dims(launch_dims({kMaxGridDim, 1, 1}, {1024, 1, 1}), {4294967295u, 1, 1}, {1024, 1, 1},
              {4194304, 1, 1});
}

TEST(LaunchDims, AThreadgroupLargerThanTheGridShrinksToIt) {
  expect_dims(launch_dims({5, 7, 1}, {256, 8, 4}), {5, 7, 1}, {5, 7, 1}, {1, 1, 1});
}

TEST(LaunchDims, AZeroGridHasNoGroup) {
  expect_dims(launch_dims({0, 4, 1}, {32, 1, 1}), {0, 4, 1}, {1, 1, 1}, {0, 4, 1});
  expect_dims(launch_dims({0, 0, 0}, {8, 8, 8}), {0, 0, 0}, {1, 1, 1}, {0, 0, 0});
}

TEST(LaunchDims, GroupsCoverTheGridWithOnePartialGroupAtMost) {
  SeededRng r;
  std::uniform_int_distribution<int64_t> grid(1, 100000), group(1, 1024);
  for (int round = 0; round < 1000; ++round) {
    const Dim3 g{grid(r.rng), grid(r.rng), grid(r.rng)}, t{group(r.rng), 1, group(r.rng)};
    const LaunchDims dims = launch_dims(g, t);
    const int64_t gs[3] = {g.x, g.y, g.z}, ts[3] = {t.x, t.y, t.z};
    for (int d = 0; d < 3; ++d) {
      const int64_t size = dims.group[d], count = dims.groups[d];
      ASSERT_EQ(size, std::min(gs[d], ts[d])) << d;
      ASSERT_GE(size * count, gs[d]) << d;
      ASSERT_LT(size * (count - 1), gs[d]) << d;
    }
  }
}

// A resolve of |spec| on |inputs| with |options|, with plans kept in |plans|.
ResolvedCall resolve_with(const std::shared_ptr<const KernelSpec>& spec, PlanCache& plans,
                          const Settings& settings, const std::vector<Array>& inputs,
                          const LaunchOptions& options = {}) {
  return resolve(spec, plans, settings.view(), inputs, options);
}

TEST(Resolve, RefusesTheWrongNumberOfInputs) {
  const auto spec = scale_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 8);
  expect_value_error([&] { resolve_with(spec, plans, s, {Array::zeros({8}, Dtype::Float32)}); },
                     {"kernel 'scale': inputs: expected 2 (x, a), got 1"});
}

TEST(Resolve, RefusesEmptyArrays) {
  const auto spec = scale_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 8);
  const Array x = Array::zeros({8}, Dtype::Float32);
  expect_value_error(
      [&] {
        resolve_with(spec, plans, s, {x, Array()});
      },
      {"kernel 'scale': inputs[1] ('a') is an empty Array"});
  LaunchOptions options;
  options.outputs = {Array::zeros({8}, Dtype::Float32), Array()};
  expect_value_error(
      [&] {
        resolve_with(spec, plans, s, {x, Array::scalar(1, Dtype::Float32)}, options);
      },
      {"kernel 'scale': outputs[1] ('neg') is an empty Array"});
}

TEST(Resolve, RefusesArraysOnAnotherGpu) {
  const auto spec = scale_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 4);
  LaunchOptions options;
  options.device = Device::cuda(1);
  expect_value_error(
      [&] {
        resolve_with(spec, plans, s,
                     {untouched({4}, Device::cuda(0)), Array::scalar(1, Dtype::Float32)}, options);
      },
      {"kernel 'scale': inputs[0] ('x') is on cuda:0 but the kernel runs on cuda:1; move it "
       "there first"});
  options.outputs = {untouched({4}, Device::cuda(1)), untouched({4}, Device::cuda(0))};
  expect_value_error(
      [&] {
        resolve_with(spec, plans, s,
                     {untouched({4}, Device::cuda(1)), Array::scalar(1, Dtype::Float32)}, options);
      },
      {"kernel 'scale': outputs[1] ('neg') is on cuda:0 but the kernel runs on cuda:1"});
}

TEST(Resolve, RefusesMoreThreadsPerGroupThanTheDeviceRuns) {
  const auto spec = scale_spec();
  PlanCache plans;
  Settings s = elementwise(*spec, 8);
  s.threadgroup = {32, 32, 2};
  expect_value_error(
      [&] {
        resolve_with(spec, plans, s,
                     {Array::zeros({8}, Dtype::Float32), Array::scalar(1, Dtype::Float32)});
      },
      {"kernel 'scale': threadgroup: (32, 32, 2) has 2048 threads; at most 1024 are allowed per "
       "threadgroup"});
}

TEST(Resolve, RefusesDimensionsTooLargeForTheShapeTheBodyReads) {
  const auto spec = make_spec(Dialect::Metal, "first_extent", {"inp"}, {"out"},
                              "out[0] = inp_shape[0];", "", true, false, 0, {});
  PlanCache plans;
  Settings s = elementwise(*spec, 1);
  s.output_dtypes = {Dtype::Int64};
  const int64_t too_long = int64_t{1} << 31;
  expect_value_error(
      [&] {
        resolve_with(spec, plans, s, {untouched({2, too_long}, Device::cpu())});
      },
      {"kernel 'first_extent': inputs[0]: a dimension over 2^31-1 cannot be passed "
       "as inp_shape"});
}

TEST(Resolve, FindsTheDeviceSizesAndPlan) {
  SeededRng r;
  const auto spec = scale_spec();
  PlanCache plans;
  Settings s = elementwise(*spec, 50);
  s.threadgroup = {16, 1, 1};
  const ResolvedCall call =
      resolve_with(spec, plans, s, {random_floats({50}, r.rng), Array::scalar(2, Dtype::Float32)});
  EXPECT_EQ(call.device, Device::cpu());
  expect_dims(call.dims, {50, 1, 1}, {16, 1, 1}, {4, 1, 1});
  ASSERT_NE(call.plan, nullptr);
  EXPECT_EQ(call.plan->device, Device::cpu());
  const std::vector<std::pair<Dtype, int>> inputs = {{Dtype::Float32, 1}, {Dtype::Float32, 0}};
  EXPECT_EQ(call.plan->signature.inputs, inputs);
  EXPECT_EQ(call.plan->signature.outputs, s.output_dtypes);
  EXPECT_NE(call.plan->source, nullptr);
  EXPECT_NE(call.plan->program, nullptr);
}

TEST(Resolve, KeepsOnePlanPerSignature) {
  SeededRng r;
  const auto spec = scale_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 50);
  const Array a = Array::scalar(0.5, Dtype::Float32);
  const Plan* first = resolve_with(spec, plans, s, {random_floats({50}, r.rng), a}).plan;
  const uint64_t compiles = cache_info().compiles;
  // Other arrays of the same dtypes and ndims, and an array of the same dtype and ndim but
  // another shape: the same plan, built once.
  EXPECT_EQ(resolve_with(spec, plans, s, {random_floats({50}, r.rng), a}).plan, first);
  EXPECT_EQ(resolve_with(spec, plans, s, {random_floats({7}, r.rng), a}).plan, first);
  EXPECT_EQ(cache_info().compiles, compiles);
  // Another dtype, another ndim: other plans.
  const Plan* doubles = resolve_with(spec, plans, s, {random_doubles({50}, r.rng), a}).plan;
  EXPECT_NE(doubles, first);
  EXPECT_EQ(doubles->signature.inputs[0], (std::pair{Dtype::Float64, 1}));
  const Plan* matrix = resolve_with(spec, plans, s, {random_floats({5, 10}, r.rng), a}).plan;
  EXPECT_NE(matrix, first);
  EXPECT_NE(matrix, doubles);
  // And each is found again.
  EXPECT_EQ(resolve_with(spec, plans, s, {random_floats({50}, r.rng), a}).plan, first);
  EXPECT_EQ(resolve_with(spec, plans, s, {random_doubles({3}, r.rng), a}).plan, doubles);
  // Another kernel's cache has plans of its own.
  PlanCache other;
  EXPECT_NE(resolve_with(spec, other, s, {random_floats({50}, r.rng), a}).plan, first);
}

TEST(Resolve, RefusesAGpuThatIsNotThere) {
  if (has_cuda_device()) GTEST_SKIP() << "a CUDA device is present";
  const auto spec = twice_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 4);
  expect_value_error([&] { resolve_with(spec, plans, s, {untouched({4}, Device::cuda(0))}); },
                     {"kernel 'twice': device: cuda:0 is not available"});
}

}  // namespace
}  // namespace kjit
