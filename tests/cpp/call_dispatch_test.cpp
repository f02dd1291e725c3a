// The call pipeline's last stage: a launch prepared for its arrays' layouts and run, then run
// again on other arrays laid out alike (dispatch and run_launch in core/call.h).
#include <gtest/gtest.h>
#include <kjit/kjit.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "call_test_support.h"
#include "core/call.h"
#include "core/plan.h"

namespace kjit {
namespace {

using testing::elements_of;
using testing::elementwise;
using testing::poisoned_floats;
using testing::random_floats;
using testing::scale_spec;
using testing::SeededRng;
using testing::Settings;
using testing::twice_spec;

// The stages before dispatch, for |inputs| and outputs poisoned.
struct Staged {
  ResolvedCall call;
  std::vector<Array> outputs;
};

Staged stage(const std::shared_ptr<const KernelSpec>& spec, PlanCache& plans, const Settings& s,
             const std::vector<Array>& inputs) {
  const LaunchOptions options;
  const ResolvedCall call = resolve(spec, plans, s.view(), inputs, options);
  KernelOutputs outputs = prepare_outputs(*spec, s.view(), call, options);
  for (const Array& a : outputs.arrays) a.fill(std::nan(""));
  EXPECT_TRUE(stage_inputs(*spec, call, inputs, 0).empty());
  return {call, std::move(outputs.arrays)};
}

void expect_twice(const Array& in, const Array& out) {
  ASSERT_EQ(in.size(), out.size());
  for (int64_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(elements_of<float>(out)[i], 2 * elements_of<float>(in)[i]) << i;
  }
}

TEST(Dispatch, RunsTheLaunchItPrepares) {
  SeededRng r;
  const auto spec = twice_spec();
  PlanCache plans;
  Settings s = elementwise(*spec, 1000);  // the last group of 64 is partial
  s.threadgroup = {64, 1, 1};
  const std::vector<Array> inputs = {random_floats({1000}, r.rng)};
  const Staged staged = stage(spec, plans, s, inputs);
  const auto in = refs_of(inputs), out = refs_of(staged.outputs);
  const std::unique_ptr<const PreparedLaunch> launch =
      dispatch(*spec, staged.call, in, out, 0, true);
  ASSERT_NE(launch, nullptr);
  expect_twice(inputs[0], staged.outputs[0]);
}

TEST(Dispatch, ItsLaunchRunsAgainOnArraysLaidOutAlike) {
  SeededRng r;
  const auto spec = twice_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 300);
  const std::vector<Array> inputs = {random_floats({300}, r.rng)};
  const Staged staged = stage(spec, plans, s, inputs);
  const std::unique_ptr<const PreparedLaunch> launch =
      dispatch(*spec, staged.call, refs_of(inputs), refs_of(staged.outputs), 0, true);
  const std::vector<float> first(elements_of<float>(staged.outputs[0]),
                                 elements_of<float>(staged.outputs[0]) + 300);
  for (int round = 0; round < 3; ++round) {
    const std::vector<Array> other_in = {random_floats({300}, r.rng)};
    const std::vector<Array> other_out = {poisoned_floats({300})};
    run_launch(*spec, *launch, refs_of(other_in), refs_of(other_out), 0, true);
    expect_twice(other_in[0], other_out[0]);
  }
  // The arrays it was prepared for are left as the first run wrote them.
  for (int64_t i = 0; i < 300; ++i) EXPECT_EQ(elements_of<float>(staged.outputs[0])[i], first[i]);
}

TEST(Dispatch, EachRunReadsItsOwnScalars) {
  SeededRng r;
  const auto spec = scale_spec();
  PlanCache plans;
  const Settings s = elementwise(*spec, 77);
  const std::vector<Array> inputs = {random_floats({77}, r.rng),
                                     Array::scalar(1.5, Dtype::Float32)};
  const Staged staged = stage(spec, plans, s, inputs);
  const std::unique_ptr<const PreparedLaunch> launch =
      dispatch(*spec, staged.call, refs_of(inputs), refs_of(staged.outputs), 0, true);
  for (double a : {1.5, -0.25, 3.0}) {
    const std::vector<Array> in = {random_floats({77}, r.rng), Array::scalar(a, Dtype::Float32)};
    const std::vector<Array> out = {poisoned_floats({77}), poisoned_floats({77})};
    launch->run(refs_of(in), refs_of(out), 0);
    for (int64_t i = 0; i < 77; ++i) {
      const float x = elements_of<float>(in[0])[i];
      ASSERT_EQ(elements_of<float>(out[0])[i], static_cast<float>(a) * x) << a << " " << i;
      ASSERT_EQ(elements_of<float>(out[1])[i], -x) << a << " " << i;
    }
  }
}

TEST(Dispatch, AZeroGridRunsNoThread) {
  SeededRng r;
  const auto spec = twice_spec();
  PlanCache plans;
  Settings s = elementwise(*spec, 16);
  s.grid = {0, 1, 1};
  const std::vector<Array> inputs = {random_floats({16}, r.rng)};
  const Staged staged = stage(spec, plans, s, inputs);
  dispatch(*spec, staged.call, refs_of(inputs), refs_of(staged.outputs), 0, true);
  for (int64_t i = 0; i < 16; ++i)
    EXPECT_TRUE(std::isnan(elements_of<float>(staged.outputs[0])[i]));
}

TEST(RunLaunch, ItsErrorsNameTheKernel) {
  SeededRng r;
  const auto spec = make_spec(Dialect::Cuda, "checked", {"inp"}, {"out"}, R"(
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(inp[i] == inp[i]);
    out[i] = inp[i];
)",
                              "", true, false, 0, {});
  PlanCache plans;
  const Settings s = elementwise(*spec, 32);
  const std::vector<Array> inputs = {random_floats({32}, r.rng)};
  const Staged staged = stage(spec, plans, s, inputs);
  const std::unique_ptr<const PreparedLaunch> launch =
      dispatch(*spec, staged.call, refs_of(inputs), refs_of(staged.outputs), 0, true);
  static_cast<float*>(inputs[0].data())[17] = std::nanf("");
  try {
    run_launch(*spec, *launch, refs_of(inputs), refs_of(staged.outputs), 0, true);
    ADD_FAILURE() << "a failed assert was not reported";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[kjit.cuda_kernel] kernel 'checked': ", 0), 0u)
        << e.what();
  }
}

// A program whose launches record the stream they are prepared for and run on, and do nothing.
class StreamRecorder final : public Program {
 public:
  struct Launch final : PreparedLaunch {
    explicit Launch(const StreamRecorder& program) : program(program) {}
    void run(std::span<const ArrayRef>, std::span<const ArrayRef>,
             uintptr_t stream) const override {
      program.ran_on = stream;
    }
    const StreamRecorder& program;
  };
  std::unique_ptr<const PreparedLaunch> prepare(const LaunchLayout& layout) const override {
    prepared_for = layout.stream;
    return std::make_unique<const Launch>(*this);
  }
  mutable uintptr_t prepared_for = 0, ran_on = 0;
};

// A GPU refuses to build a launch's entry point while its stream captures a CUDA graph: the
// launch is prepared knowing the stream it will run on.
TEST(Dispatch, PreparesTheLaunchForTheStreamItRunsOn) {
  const auto spec = twice_spec();
  const auto program = std::make_shared<const StreamRecorder>();
  Plan plan;
  plan.program = program;
  const Settings s = elementwise(*spec, 8);
  const ResolvedCall call{Device::cpu(), &plan, launch_dims(s.grid, s.threadgroup)};
  const std::vector<Array> inputs = {Array::zeros({8}, Dtype::Float32)};
  const std::vector<Array> outputs = {Array::zeros({8}, Dtype::Float32)};
  const uintptr_t stream = 0x5a5a0;
  dispatch(*spec, call, refs_of(inputs), refs_of(outputs), stream, true);
  EXPECT_EQ(program->prepared_for, stream);
  EXPECT_EQ(program->ran_on, stream);
}

}  // namespace
}  // namespace kjit
