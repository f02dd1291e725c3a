// Debug builds from C++: an index outside an array and output elements never written are
// LaunchErrors that say where; a clean kernel computes what a plain build does.
#include <gtest/gtest.h>
#include <kjit/kjit.h>

#include <string>
#include <vector>

#include "call_test_support.h"
#include "core/backend.h"

namespace kjit {
namespace {

using testing::random_floats;
using testing::SeededRng;

constexpr const char* kDouble = R"(
  uint i = thread_position_in_grid.x;
  out[i] = inp[i] * 2.0f;
)";

Kernel debug_double() {
  CompileOptions options;
  options.debug = true;
  return metal_kernel("debug_double", {"inp"}, {"out"}, kDouble, "", true, false, options);
}

std::string launch_error(const Kernel& k, const Array& x, int64_t threads, const Device& device) {
  LaunchOptions options;
  options.device = device;
  try {
    k({x}, std::vector<Shape>{{x.size()}}, {Dtype::Float32}, Dim3{threads, 1, 1}, {256, 1, 1},
      TemplateArgs{}, std::nullopt, false, options);
  } catch (const LaunchError& e) {
    return e.what();
  }
  return "";
}

std::vector<Device> devices_here() {
  std::vector<Device> out = {Device::cpu()};
  if (backend_for(DeviceType::CUDA).unavailable_reason().empty()) out.push_back(Device::cuda(0));
  return out;
}

TEST(DebugLaunch, ReportsTheFirstIndexOutsideAnArray) {
  SeededRng r;
  const Array x = random_floats({1000}, r.rng);
  for (const Device& device : devices_here()) {
    SCOPED_TRACE(device.str());
    const std::string message = launch_error(debug_double(), x, 1024, device);
    EXPECT_NE(message.find("inputs[0] ('inp') was indexed at 10"), std::string::npos) << message;
    EXPECT_NE(message.find("its indices are 0 to 999"), std::string::npos) << message;
    EXPECT_NE(message.find("at line 3 of the source"), std::string::npos) << message;
    EXPECT_NE(message.find("in threadgroup (3, 0, 0)"), std::string::npos) << message;
  }
}

TEST(DebugLaunch, ReportsOutputElementsNeverWritten) {
  SeededRng r;
  const Array x = random_floats({1000}, r.rng);
  for (const Device& device : devices_here()) {
    SCOPED_TRACE(device.str());
    const std::string message = launch_error(debug_double(), x, 990, device);
    EXPECT_NE(message.find("outputs[0] ('out'): 10 of 1000 elements still hold the poison "
                           "fresh outputs start with (indices 990 to 999): never written"),
              std::string::npos)
        << message;
  }
}

TEST(DebugLaunch, ReportsAShapeIndexPastTheInputsDimensions) {
  CompileOptions compile;
  compile.debug = true;
  const Kernel k = metal_kernel("debug_columns", {"inp"}, {"out"}, R"(
  uint i = thread_position_in_grid.x;
  out[i] = inp[i] / float(inp_shape[1]);
)",
                                "", true, false, compile);
  SeededRng r;
  const Array x = random_floats({1000}, r.rng);
  for (const Device& device : devices_here()) {
    SCOPED_TRACE(device.str());
    const std::string message = launch_error(k, x, 1000, device);
    EXPECT_NE(message.find("debug check: 'inp_shape' (the shape of inputs[0]) was indexed at 1, "
                           "outside the array (its indices are 0 to 0), at line 3 of the source"),
              std::string::npos)
        << message;
  }
}

TEST(DebugLaunch, ACleanKernelComputesWhatAPlainBuildDoes) {
  SeededRng r;
  const Array x = random_floats({1000}, r.rng);
  const Kernel plain = metal_kernel("debug_double", {"inp"}, {"out"}, kDouble);
  for (const Device& device : devices_here()) {
    SCOPED_TRACE(device.str());
    LaunchOptions options;
    options.device = device;
    const Array want = plain({x}, {{1000}}, {Dtype::Float32}, {1000, 1, 1}, {256, 1, 1}, {},
                             std::nullopt, false, options)[0]
                           .to(Device::cpu());
    const Array got = debug_double()({x}, {{1000}}, {Dtype::Float32}, {1000, 1, 1}, {256, 1, 1}, {},
                                     std::nullopt, false, options)[0]
                          .to(Device::cpu());
    const float* w = static_cast<const float*>(want.data());
    const float* g = static_cast<const float*>(got.data());
    const float* in = static_cast<const float*>(x.data());
    for (int i = 0; i < 1000; ++i) {
      ASSERT_EQ(g[i], w[i]) << i;
      ASSERT_EQ(g[i], in[i] * 2.0f) << i;
    }
  }
}

}  // namespace
}  // namespace kjit
