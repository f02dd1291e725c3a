// Launches kept to be made again on arrays laid out alike (core/launch_record.h), directly and
// through bound and keyword calls on the CPU.
#include "core/launch_record.h"

#include <gtest/gtest.h>
#include <kjit/kjit.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "call_test_support.h"
#include "core/call.h"
#include "core/plan.h"

namespace kjit {
namespace {

using testing::elements_of;
using testing::elementwise;
using testing::kUntouched;
using testing::poisoned_floats;
using testing::random_doubles;
using testing::random_floats;
using testing::scale_spec;
using testing::SeededRng;
using testing::Settings;
using testing::twice_spec;

uint64_t launches_again() { return cache_info().launches_again; }

Array strided(const Array& base, const Shape& shape, const Strides& strides) {
  return Array::borrow(base.data(), shape, strides, base.dtype(), base.device(), base.owner());
}

TEST(ArrayLayout, MatchesArraysLaidOutAlike) {
  SeededRng r;
  const Array a = random_floats({4, 6}, r.rng);
  const ArrayLayout layout(ArrayRef::of(a));
  EXPECT_TRUE(layout.matches(ArrayRef::of(a)));
  EXPECT_TRUE(layout.matches(ArrayRef::of(random_floats({4, 6}, r.rng))));  // other memory
  const Array base = random_floats({8, 6}, r.rng);
  const ArrayLayout rows(ArrayRef::of(strided(base, {4, 6}, {12, 1})));
  EXPECT_TRUE(rows.matches(ArrayRef::of(strided(random_floats({8, 6}, r.rng), {4, 6}, {12, 1}))));
}

TEST(ArrayLayout, RefusesArraysLaidOutOtherwise) {
  SeededRng r;
  const Array a = random_floats({4, 6}, r.rng);
  const ArrayLayout layout(ArrayRef::of(a));
  const Array base = random_floats({8, 6}, r.rng);
  const Array others[] = {
      random_doubles({4, 6}, r.rng),                                           // dtype
      random_floats({6, 4}, r.rng),                                            // shape
      random_floats({4, 6, 1}, r.rng),                                         // ndim
      random_floats({24}, r.rng),                                              // ndim
      strided(base, {4, 6}, {12, 1}),                                          // strides
      a.as_read_only(),                                                        // writability
      Array::borrow(kUntouched, {4, 6}, {}, Dtype::Float32, Device::cuda(0)),  // device
  };
  for (size_t i = 0; i < std::size(others); ++i) {
    EXPECT_FALSE(layout.matches(ArrayRef::of(others[i]))) << i;
  }
  // And the other way round.
  EXPECT_FALSE(ArrayLayout(ArrayRef::of(a.as_read_only())).matches(ArrayRef::of(a)));
}

TEST(ArrayLayout, ZeroDimensionalArraysNeedMemory) {
  const ArrayLayout scalar(ArrayRef::of(Array::scalar(1, Dtype::Float32)));
  EXPECT_TRUE(scalar.matches(ArrayRef::of(Array::scalar(-3, Dtype::Float32))));
  EXPECT_FALSE(scalar.matches(ArrayRef::of(Array::scalar(1, Dtype::Int32))));
  // A default Array is 0-d float32 on the CPU, with no value to read.
  EXPECT_FALSE(scalar.matches(ArrayRef::of(Array())));
}

// One call of |spec| through the stages, with its launch recorded as a call that launched
// straight from the arrays given would keep it. The outputs it wrote come with it.
struct Recording {
  std::shared_ptr<const RecordedLaunch> launch;
  std::vector<Array> outputs;
};

Recording record(const std::shared_ptr<const KernelSpec>& spec, PlanCache& plans, const Settings& s,
                 const std::vector<Array>& inputs, const LaunchOptions& options = {}) {
  const ResolvedCall call = resolve(spec, plans, s.view(), inputs, options);
  KernelOutputs outputs = prepare_outputs(*spec, s.view(), call, options);
  EXPECT_TRUE(stage_inputs(*spec, call, inputs, 0).empty());
  EXPECT_FALSE(outputs.moved);
  const std::vector<Array> written = outputs.written(options);
  const auto in = refs_of(inputs), out = refs_of(written);
  return {RecordedLaunch::of(call, options, in, out,
                             dispatch(*spec, call, in, out, 0, !options.outputs)),
          written};
}

// The record of calls of |spec|'s kernel with settings |s|, holding nothing yet.
std::unique_ptr<CallRecord> call_record(const std::shared_ptr<const KernelSpec>& spec,
                                        const Settings& s) {
  return std::make_unique<CallRecord>(spec, OwnedSettings(s.view()));
}

// What scale_spec's kernel writes for |x| and |a|.
void expect_scaled(const Array& x, float a, const float* out, const float* neg) {
  for (int64_t i = 0; i < x.size(); ++i) {
    const float v = elements_of<float>(x)[i];
    ASSERT_EQ(out[i], a * v) << i;
    ASSERT_EQ(neg[i], -v) << i;
  }
}

void expect_scaled(const Array& x, float a, const std::vector<Array>& outputs) {
  ASSERT_EQ(outputs.size(), 2u);
  expect_scaled(x, a, elements_of<float>(outputs[0]), elements_of<float>(outputs[1]));
}

TEST(RecordedLaunch, MatchesTheCallsThatWouldMakeIt) {
  SeededRng r;
  const auto spec = scale_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 40);
  const Array a = Array::scalar(2, Dtype::Float32);
  const Recording made = record(spec, plans, s, {random_floats({40}, r.rng), a});
  const std::vector<Array> alike = {random_floats({40}, r.rng), Array::scalar(-1, Dtype::Float32)};
  const auto in = refs_of(alike);
  EXPECT_TRUE(made.launch->matches(in, std::nullopt, std::nullopt));
  // Asked for the device it ran on: another call, which might have run elsewhere.
  EXPECT_FALSE(made.launch->matches(in, std::nullopt, Device::cpu()));
  // With outputs given.
  const std::vector<Array> given = {poisoned_floats({40}), poisoned_floats({40})};
  const auto out = refs_of(given);
  EXPECT_FALSE(made.launch->matches(in, std::span<const ArrayRef>(out), std::nullopt));
  // Too few inputs, or a scalar of another dtype.
  EXPECT_FALSE(made.launch->matches(std::span(in).first(1), std::nullopt, std::nullopt));
  const auto other = refs_of(std::vector<Array>{alike[0], Array::scalar(2, Dtype::Float64)});
  EXPECT_FALSE(made.launch->matches(other, std::nullopt, std::nullopt));

  LaunchOptions options;
  options.outputs = {poisoned_floats({40}), poisoned_floats({40})};
  options.device = Device::cpu();
  const Recording into = record(spec, plans, s, {random_floats({40}, r.rng), a}, options);
  EXPECT_TRUE(into.launch->matches(in, std::span<const ArrayRef>(out), Device::cpu()));
  EXPECT_FALSE(into.launch->matches(in, std::span<const ArrayRef>(out), std::nullopt));
  EXPECT_FALSE(into.launch->matches(in, std::nullopt, Device::cpu()));
  const Array base = random_floats({80}, r.rng);
  for (const Array& odd :
       {random_floats({41}, r.rng), strided(base, {40}, {2}), given[1].as_read_only()}) {
    const auto odd_out = refs_of(std::vector<Array>{given[0], odd});
    EXPECT_FALSE(into.launch->matches(in, std::span<const ArrayRef>(odd_out), Device::cpu()));
  }
  const auto one_out = refs_of(std::vector<Array>{given[0]});
  EXPECT_FALSE(into.launch->matches(in, std::span<const ArrayRef>(one_out), Device::cpu()));
}

TEST(RecordedLaunches, RunMakesOutputsOnAMatch) {
  SeededRng r;
  const auto spec = scale_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 333);
  const Recording first =
      record(spec, plans, s, {random_floats({333}, r.rng), Array::scalar(0.5, Dtype::Float32)});
  const auto recorded = call_record(spec, s);
  recorded->launches.keep(first.launch);
  for (float a : {3.0f, -1.25f}) {
    const std::vector<Array> inputs = {random_floats({333}, r.rng),
                                       Array::scalar(a, Dtype::Float32)};
    const uint64_t before = launches_again();
    std::optional<std::vector<Array>> made =
        recorded->run_again(refs_of(inputs), std::nullopt, std::nullopt, 0);
    EXPECT_EQ(launches_again() - before, 1u);
    ASSERT_TRUE(made.has_value());
    for (const Array& o : *made) {
      EXPECT_EQ(o.ndim(), 1);
      EXPECT_EQ(o.shape(0), 333);
      EXPECT_EQ(o.dtype(), Dtype::Float32);
      EXPECT_NE(o.data(), first.outputs[0].data());
    }
    expect_scaled(inputs[0], a, *made);
  }
}

TEST(RecordedLaunches, RunDoesNothingForArraysLaidOutOtherwise) {
  SeededRng r;
  const auto spec = scale_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 64);
  const Array a = Array::scalar(0.5, Dtype::Float32);
  const auto recorded = call_record(spec, s);
  const std::vector<Array> inputs = {random_floats({64}, r.rng), a};
  EXPECT_FALSE(recorded->run_again(refs_of(inputs), std::nullopt, std::nullopt, 0));
  recorded->launches.keep(record(spec, plans, s, inputs).launch);
  const Array base = random_floats({128}, r.rng);
  const std::vector<std::vector<Array>> others = {
      {random_doubles({64}, r.rng), a},
      {random_floats({65}, r.rng), a},
      {strided(base, {64}, {2}), a},
      {inputs[0].as_read_only(), a},
      {inputs[0], Array::scalar(0.5, Dtype::Float64)},
      {inputs[0]},
  };
  const uint64_t before = launches_again();
  for (size_t i = 0; i < others.size(); ++i) {
    EXPECT_FALSE(recorded->run_again(refs_of(others[i]), std::nullopt, std::nullopt, 0)) << i;
  }
  EXPECT_FALSE(recorded->run_again(refs_of(inputs), std::nullopt, Device::cpu(), 0));
  const std::vector<Array> given = {poisoned_floats({64}), poisoned_floats({64})};
  const auto out = refs_of(given);
  EXPECT_FALSE(
      recorded->run_again(refs_of(inputs), std::span<const ArrayRef>(out), std::nullopt, 0));
  EXPECT_EQ(launches_again(), before);
  for (const Array& g : given) {
    for (int64_t i = 0; i < 64; ++i) ASSERT_TRUE(std::isnan(elements_of<float>(g)[i])) << i;
  }
}

TEST(RecordedLaunches, RunWritesTheOutputsGiven) {
  SeededRng r;
  const auto spec = scale_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 100);
  LaunchOptions options;
  options.outputs = {poisoned_floats({100}), poisoned_floats({100})};
  const Recording first = record(
      spec, plans, s, {random_floats({100}, r.rng), Array::scalar(2, Dtype::Float32)}, options);
  const auto recorded = call_record(spec, s);
  recorded->launches.keep(first.launch);
  const std::vector<Array> inputs = {random_floats({100}, r.rng),
                                     Array::scalar(-3, Dtype::Float32)};
  // Not for a call that makes its outputs.
  EXPECT_FALSE(recorded->run_again(refs_of(inputs), std::nullopt, std::nullopt, 0));
  const std::vector<Array> given = {poisoned_floats({100}), poisoned_floats({100})};
  const auto out = refs_of(given);
  const uint64_t before = launches_again();
  std::optional<std::vector<Array>> made =
      recorded->run_again(refs_of(inputs), std::span<const ArrayRef>(out), std::nullopt, 0);
  EXPECT_EQ(launches_again() - before, 1u);
  ASSERT_TRUE(made.has_value());
  EXPECT_TRUE(made->empty());
  expect_scaled(inputs[0], -3, given);
  // Outputs that a call would refuse are not written.
  const std::vector<Array> read_only = {poisoned_floats({100}),
                                        poisoned_floats({100}).as_read_only()};
  const auto ro = refs_of(read_only);
  EXPECT_FALSE(
      recorded->run_again(refs_of(inputs), std::span<const ArrayRef>(ro), std::nullopt, 0));
  EXPECT_TRUE(std::isnan(elements_of<float>(read_only[0])[0]));
  EXPECT_EQ(launches_again() - before, 1u);
}

TEST(RecordedLaunches, KeepsTheLastLaunchOfEachKind) {
  SeededRng r;
  const auto spec = scale_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 20);
  const Array a = Array::scalar(1, Dtype::Float32);
  LaunchOptions options;
  options.outputs = {poisoned_floats({20}), poisoned_floats({20})};
  const auto recorded = call_record(spec, s);
  recorded->launches.keep(record(spec, plans, s, {random_floats({20}, r.rng), a}, options).launch);
  recorded->launches.keep(record(spec, plans, s, {random_floats({20}, r.rng), a}).launch);
  // A launch that makes outputs leaves the one that wrote outputs given.
  const std::vector<Array> inputs = {random_floats({20}, r.rng), a};
  const std::vector<Array> given = {poisoned_floats({20}), poisoned_floats({20})};
  const auto out = refs_of(given);
  EXPECT_TRUE(
      recorded->run_again(refs_of(inputs), std::span<const ArrayRef>(out), std::nullopt, 0));
  EXPECT_TRUE(recorded->run_again(refs_of(inputs), std::nullopt, std::nullopt, 0));
  // One of doubles takes the place of the one of floats.
  recorded->launches.keep(record(spec, plans, s, {random_doubles({20}, r.rng), a}).launch);
  EXPECT_FALSE(recorded->run_again(refs_of(inputs), std::nullopt, std::nullopt, 0));
  const std::vector<Array> doubles = {random_doubles({20}, r.rng), a};
  std::optional<std::vector<Array>> made =
      recorded->run_again(refs_of(doubles), std::nullopt, std::nullopt, 0);
  ASSERT_TRUE(made.has_value());
  ASSERT_EQ(made->size(), 2u);
  for (int64_t i = 0; i < 20; ++i) {
    const double x = elements_of<double>(doubles[0])[i];
    EXPECT_EQ(elements_of<float>((*made)[0])[i], static_cast<float>(x)) << i;
    EXPECT_EQ(elements_of<float>((*made)[1])[i], static_cast<float>(-x)) << i;
  }
}

// Output memory handed out from buffers the test owns, with each request's layout checked.
struct HandOut final : OutputMemory {
  void* provide(size_t o, const ArrayRef& layout) override {
    asked.push_back(o);
    EXPECT_EQ(layout.data, nullptr);
    EXPECT_EQ(layout.dtype, Dtype::Float32);
    EXPECT_EQ(layout.device, Device::cpu());
    EXPECT_FALSE(layout.read_only);
    EXPECT_EQ(Shape(layout.shape, layout.shape + layout.ndim), shapes[o]);
    const Strides row_major = o == 0 ? Strides{6, 1} : Strides{12, 4, 1};
    EXPECT_EQ(Strides(layout.strides, layout.strides + layout.ndim), row_major);
    return o < buffers.size() ? buffers[o] : nullptr;
  }
  std::vector<Shape> shapes;
  std::vector<void*> buffers;
  std::vector<size_t> asked;
};

TEST(RecordedLaunches, RunIntoWritesTheMemoryTheCallerHandsOut) {
  SeededRng r;
  const auto spec = scale_spec();
  PlanCache plans;
  Settings s = elementwise(*spec, 24);
  s.output_shapes = {{4, 6}, {2, 3, 4}};  // a kernel's outputs need not take its inputs' shape
  const Array a = Array::scalar(1, Dtype::Float32);
  const auto recorded = call_record(spec, s);
  recorded->launches.keep(record(spec, plans, s, {random_floats({24}, r.rng), a}).launch);
  std::vector<float> memory[2] = {std::vector<float>(24, std::nanf("")),
                                  std::vector<float>(24, std::nanf(""))};
  HandOut hand_out;
  hand_out.shapes = s.output_shapes;
  hand_out.buffers = {memory[0].data(), memory[1].data()};
  const std::vector<Array> inputs = {random_floats({24}, r.rng),
                                     Array::scalar(-0.5, Dtype::Float32)};
  const uint64_t before = launches_again();
  ASSERT_TRUE(recorded->run_again_into(refs_of(inputs), std::nullopt, 0, hand_out));
  EXPECT_EQ(launches_again() - before, 1u);
  EXPECT_EQ(hand_out.asked, (std::vector<size_t>{0, 1}));
  expect_scaled(inputs[0], -0.5f, memory[0].data(), memory[1].data());
  // Nothing asked for, nothing run, for a call that would not make this launch.
  hand_out.asked.clear();
  const std::vector<Array> other = {random_floats({25}, r.rng), a};
  EXPECT_FALSE(recorded->run_again_into(refs_of(other), std::nullopt, 0, hand_out));
  EXPECT_FALSE(recorded->run_again_into(refs_of(inputs), Device::cpu(), 0, hand_out));
  EXPECT_TRUE(hand_out.asked.empty());
  EXPECT_EQ(launches_again() - before, 1u);
}

TEST(RecordedLaunches, RunIntoLaunchesNothingWithoutMemory) {
  SeededRng r;
  const auto spec = scale_spec();
  PlanCache plans;
  Settings s = elementwise(*spec, 24);
  s.output_shapes = {{4, 6}, {2, 3, 4}};
  const Array a = Array::scalar(1, Dtype::Float32);
  const auto recorded = call_record(spec, s);
  recorded->launches.keep(record(spec, plans, s, {random_floats({24}, r.rng), a}).launch);
  std::vector<float> first(24, std::nanf(""));
  HandOut only_the_first;  // none for the second output
  only_the_first.shapes = s.output_shapes;
  only_the_first.buffers = {first.data()};
  const uint64_t before = launches_again();
  EXPECT_FALSE(recorded->run_again_into(refs_of(std::vector<Array>{random_floats({24}, r.rng), a}),
                                        std::nullopt, 0, only_the_first));
  EXPECT_EQ(only_the_first.asked, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(launches_again(), before);
  for (float v : first) ASSERT_TRUE(std::isnan(v));
}

// The kernel of twice_spec, bound for |n| elements.
BoundKernel bound_twice(int64_t n, std::optional<double> init_value = std::nullopt,
                        int64_t grid = -1) {
  return Kernel(twice_spec())
      .bind({{n}}, {Dtype::Float32}, {grid < 0 ? n : grid, 1, 1}, {32, 1, 1}, {}, init_value);
}

void expect_twice(const Array& in, const Array& out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(elements_of<float>(out)[i], 2 * elements_of<float>(in)[i]) << i;
  }
}

TEST(BoundKernel, CallsOnArraysLaidOutAlikeLaunchAgain) {
  SeededRng r;
  const BoundKernel bound = bound_twice(500);
  for (int call = 0; call < 3; ++call) {
    const Array a = random_floats({500}, r.rng);
    const uint64_t before = launches_again();
    const std::vector<Array> out = bound({a});
    EXPECT_EQ(launches_again() - before, call == 0 ? 0u : 1u) << call;
    ASSERT_EQ(out.size(), 1u);
    expect_twice(a, out[0], 500);
  }
  // With outputs given, a launch of the other kind.
  for (int call = 0; call < 3; ++call) {
    const Array a = random_floats({500}, r.rng);
    LaunchOptions options;
    options.outputs = {poisoned_floats({500})};
    const uint64_t before = launches_again();
    const std::vector<Array> out = bound({a}, options);
    EXPECT_EQ(launches_again() - before, call == 0 ? 0u : 1u) << call;
    EXPECT_EQ(out[0].data(), (*options.outputs)[0].data());
    expect_twice(a, (*options.outputs)[0], 500);
  }
}

TEST(BoundKernel, ACallLaidOutOtherwiseTakesTheRecordsPlace) {
  SeededRng r;
  const BoundKernel bound = bound_twice(64);
  const uint64_t before = launches_again();
  const Array floats = random_floats({64}, r.rng);
  bound({floats});
  const Array doubles = random_doubles({64}, r.rng);
  const std::vector<Array> out = bound({doubles});
  EXPECT_EQ(launches_again(), before);
  for (int64_t i = 0; i < 64; ++i) {
    ASSERT_EQ(elements_of<float>(out[0])[i],
              static_cast<float>(2 * elements_of<double>(doubles)[i]))
        << i;
  }
  bound({random_doubles({64}, r.rng)});
  EXPECT_EQ(launches_again() - before, 1u);
  bound({floats});  // its record was the one replaced
  EXPECT_EQ(launches_again() - before, 1u);
}

TEST(BoundKernel, CopiesShareTheirRecordedLaunches) {
  SeededRng r;
  const BoundKernel bound = bound_twice(128);
  bound({random_floats({128}, r.rng)});
  const BoundKernel copy = bound;
  const Array a = random_floats({128}, r.rng);
  const uint64_t before = launches_again();
  const std::vector<Array> out = copy({a});
  EXPECT_EQ(launches_again() - before, 1u);
  expect_twice(a, out[0], 128);
}

TEST(BoundKernel, CallsWithAnInitValueFillTheirOutputsEachTime) {
  SeededRng r;
  // Half the threads: the second half of the output keeps the init value.
  const BoundKernel bound = bound_twice(64, /*init_value=*/5.0, /*grid=*/32);
  const uint64_t before = launches_again();
  for (int call = 0; call < 3; ++call) {
    const Array a = random_floats({64}, r.rng);
    LaunchOptions options;
    options.outputs = {poisoned_floats({64})};
    bound({a}, options);
    const Array& out = (*options.outputs)[0];
    expect_twice(a, out, 32);
    for (int64_t i = 32; i < 64; ++i) ASSERT_EQ(elements_of<float>(out)[i], 5.0f) << call << i;
  }
  EXPECT_EQ(launches_again(), before);
}

TEST(BoundKernel, InputsCopiedForTheKernelAreCopiedEachTime) {
  SeededRng r;
  const BoundKernel bound = bound_twice(50);
  const uint64_t before = launches_again();
  for (int call = 0; call < 3; ++call) {
    const Array base = random_floats({100}, r.rng);
    const Array every_other = strided(base, {50}, {2});
    const std::vector<Array> out = bound({every_other});
    for (int64_t i = 0; i < 50; ++i) {
      ASSERT_EQ(elements_of<float>(out[0])[i], 2 * elements_of<float>(base)[2 * i]) << call << i;
    }
  }
  EXPECT_EQ(launches_again(), before);
}

TEST(KeywordCall, RepeatedWithEqualSettingsLaunchesAgain) {
  SeededRng r;
  const Kernel k(scale_spec());
  auto call = [&](const Array& x, float a, int64_t threadgroup) {
    return k({x, Array::scalar(a, Dtype::Float32)}, {{90}, {90}}, {Dtype::Float32, Dtype::Float32},
             {90, 1, 1}, {threadgroup, 1, 1});
  };
  for (int round = 0; round < 4; ++round) {
    const Array x = random_floats({90}, r.rng);
    const float a = static_cast<float>(round) - 0.5f;
    const uint64_t before = launches_again();
    expect_scaled(x, a, call(x, a, 32));
    // Settings seen for the first time record nothing; their second call records its launch.
    EXPECT_EQ(launches_again() - before, round < 2 ? 0u : 1u) << round;
  }
  // Other settings are another call's, of which none was recorded yet.
  const Array x = random_floats({90}, r.rng);
  const uint64_t before = launches_again();
  expect_scaled(x, 2, call(x, 2, 16));
  expect_scaled(x, 3, call(x, 3, 16));
  EXPECT_EQ(launches_again(), before);
  expect_scaled(x, 4, call(x, 4, 16));
  EXPECT_EQ(launches_again() - before, 1u);
}

}  // namespace
}  // namespace kjit
