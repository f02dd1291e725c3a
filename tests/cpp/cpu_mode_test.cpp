// The choice of how a body's threads run on the CPU: loop, regions between barriers, or
// coroutines, with the reason for it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "codegen/cpu_mode.h"
#include "codegen/kernel_spec.h"
#include "codegen/source.h"

namespace kjit::codegen {
namespace {

std::shared_ptr<const KernelSpec> spec(Dialect dialect, const std::string& source,
                                       const std::string& header = "") {
  return make_spec(dialect, "k", {"inp"}, {"out"}, source, header, true, false, 0, {});
}

CallSignature float_call() { return {{{Dtype::Float32, 1}}, {Dtype::Float32}, {}}; }

// Sets KJIT_CPU_REGIONS for one test, and restores what it was.
class RegionsVariable {
 public:
  explicit RegionsVariable(const char* value) {
    if (const char* old = std::getenv("KJIT_CPU_REGIONS")) old_ = old;
    setenv("KJIT_CPU_REGIONS", value, 1);
  }
  ~RegionsVariable() {
    if (old_) {
      setenv("KJIT_CPU_REGIONS", old_->c_str(), 1);
    } else {
      unsetenv("KJIT_CPU_REGIONS");
    }
  }

 private:
  std::optional<std::string> old_;
};

const std::string kMetalBarrier = R"(
    threadgroup float partial[64];
    uint i = thread_position_in_threadgroup.x;
    partial[i] = inp[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[thread_position_in_grid.x] = partial[63 - i];
)";

TEST(CpuMode, ABodyThatNeverWaitsRunsAsALoop) {
  auto s = spec(Dialect::Metal, "out[thread_position_in_grid.x] = inp[thread_position_in_grid.x];");
  const CpuModeChoice choice = choose_cpu_mode(*s, float_call());
  EXPECT_EQ(choice.mode, CpuMode::Loop);
  EXPECT_NE(choice.reason.find("waits for no other thread"), std::string::npos) << choice.reason;
  EXPECT_FALSE(choice.regions);
}

TEST(CpuMode, BarriersEveryThreadMeetsRunAsRegions) {
  const CpuModeChoice metal = choose_cpu_mode(*spec(Dialect::Metal, kMetalBarrier), float_call());
  EXPECT_EQ(metal.mode, CpuMode::Regions);
  ASSERT_TRUE(metal.regions);
  EXPECT_FALSE(metal.regions->pieces.empty());
  EXPECT_NE(metal.reason.find("waits are barriers that every thread"), std::string::npos)
      << metal.reason;
  const CpuModeChoice cuda =
      choose_cpu_mode(*spec(Dialect::Cuda,
                            "__shared__ float s[64]; s[threadIdx.x] = inp[threadIdx.x];\n"
                            "__syncthreads(); out[threadIdx.x] = s[63 - threadIdx.x];"),
                      float_call());
  EXPECT_EQ(cuda.mode, CpuMode::Regions);
}

TEST(CpuMode, SimdGroupAndWarpOperationsEveryLaneMeetsRunAsRegions) {
  const CpuModeChoice metal = choose_cpu_mode(
      *spec(Dialect::Metal,
            "out[thread_position_in_grid.x] = simd_sum(inp[thread_position_in_grid.x]);"),
      float_call());
  EXPECT_EQ(metal.mode, CpuMode::Regions);
  ASSERT_TRUE(metal.regions);
  EXPECT_TRUE(metal.regions->operations);
  EXPECT_NE(metal.reason.find("SIMD-group or warp operations that every lane"), std::string::npos)
      << metal.reason;
  EXPECT_EQ(metal.reason.find("barriers"), std::string::npos) << metal.reason;
  const CpuModeChoice cuda = choose_cpu_mode(
      *spec(Dialect::Cuda,
            "out[threadIdx.x] = __shfl_down_sync(0xffffffffu, inp[threadIdx.x], 1);"),
      float_call());
  EXPECT_EQ(cuda.mode, CpuMode::Regions);
}

TEST(CpuMode, OperationsLanesMayReachApartRunAsCoroutinesAndSayWhere) {
  const CpuModeChoice metal = choose_cpu_mode(*spec(Dialect::Metal,
                                                    "uint i = thread_position_in_grid.x;\n"
                                                    "if (inp[i] > 0) out[i] = simd_sum(inp[i]);"),
                                              float_call());
  EXPECT_EQ(metal.mode, CpuMode::Coroutine);
  EXPECT_FALSE(metal.regions);
  EXPECT_NE(metal.reason.find("line 2: the lanes of a simdgroup may not all reach 'simd_sum'"),
            std::string::npos)
      << metal.reason;
  const CpuModeChoice tile =
      choose_cpu_mode(*spec(Dialect::Cuda,
                            "auto tile = cg::tiled_partition<32>(cg::this_thread_block());\n"
                            "out[threadIdx.x] = tile.shfl_down(inp[threadIdx.x], 1);"),
                      float_call());
  EXPECT_EQ(tile.mode, CpuMode::Coroutine);
  EXPECT_NE(tile.reason.find("does not split at 'shfl_down'"), std::string::npos) << tile.reason;
}

TEST(CpuMode, SimdGroupMatricesRunAsCoroutines) {
  const CpuModeChoice choice = choose_cpu_mode(*spec(Dialect::Metal, R"(
    simdgroup_float8x8 a;
    simdgroup_load(a, inp, 8);
    simdgroup_store(a, out, 8);
  )"),
                                               float_call());
  EXPECT_EQ(choice.mode, CpuMode::Coroutine);
  EXPECT_NE(choice.reason.find("SIMD-group matrices"), std::string::npos) << choice.reason;
}

TEST(CpuMode, HeaderFunctionsThatWaitRunAsCoroutines) {
  const CpuModeChoice choice = choose_cpu_mode(
      *spec(Dialect::Metal, "sync_group(); out[thread_position_in_grid.x] = 1;",
            "void sync_group() { threadgroup_barrier(mem_flags::mem_threadgroup); }"),
      float_call());
  EXPECT_EQ(choice.mode, CpuMode::Coroutine);
  EXPECT_NE(choice.reason.find("functions of the header"), std::string::npos) << choice.reason;
  EXPECT_EQ(choice.helpers.names, std::vector<std::string>{"sync_group"});
}

TEST(CpuMode, TheEnvironmentTurnsRegionModeOff) {
  auto s = spec(Dialect::Metal, kMetalBarrier);
  {
    RegionsVariable off("0");
    const CpuModeChoice choice = choose_cpu_mode(*s, float_call());
    EXPECT_EQ(choice.mode, CpuMode::Coroutine);
    EXPECT_NE(choice.reason.find("KJIT_CPU_REGIONS=0"), std::string::npos) << choice.reason;
  }
  {
    RegionsVariable on("1");
    EXPECT_EQ(choose_cpu_mode(*s, float_call()).mode, CpuMode::Regions);
  }
  // A body that never waits runs as a loop whatever the variable says.
  RegionsVariable off("0");
  EXPECT_EQ(choose_cpu_mode(*spec(Dialect::Metal, "out[0] = inp[0];"), float_call()).mode,
            CpuMode::Loop);
}

TEST(CpuMode, GenerateWritesTheBodyInTheModeItIsGiven) {
  auto s = spec(Dialect::Metal, kMetalBarrier);
  const GeneratedSource chosen = generate(*s, float_call(), Target::Cpu);
  EXPECT_EQ(chosen.cpu_mode, CpuMode::Regions);
  EXPECT_NE(chosen.text.find("::kjit::run_whole_groups("), std::string::npos);
  EXPECT_EQ(chosen.text.find("::kjit::coop::run_groups("), std::string::npos);

  const CpuModeChoice fallback = coroutine_mode(*s, "region mode's rewriting did not compile");
  EXPECT_EQ(fallback.mode, CpuMode::Coroutine);
  const GeneratedSource coroutines = generate(*s, float_call(), fallback);
  EXPECT_EQ(coroutines.cpu_mode, CpuMode::Coroutine);
  EXPECT_EQ(coroutines.cpu_mode_reason, "region mode's rewriting did not compile");
  EXPECT_NE(coroutines.text.find("::kjit::coop::run_groups("), std::string::npos);
  EXPECT_NE(coroutines.text.find("co_await"), std::string::npos);
  EXPECT_EQ(coroutines.text.find("::kjit::run_whole_groups("), std::string::npos);
  // The same as the mode choose_cpu_mode picks when region mode is off.
  RegionsVariable off("0");
  EXPECT_EQ(generate(*s, float_call(), Target::Cpu).text, coroutines.text);
}

TEST(CpuMode, NamesOfTheModes) {
  EXPECT_STREQ(cpu_mode_name(CpuMode::Loop), "loop");
  EXPECT_STREQ(cpu_mode_name(CpuMode::Regions), "region");
  EXPECT_STREQ(cpu_mode_name(CpuMode::Coroutine), "cooperative");
}

}  // namespace
}  // namespace kjit::codegen
