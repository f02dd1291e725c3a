// Loop-mode kernels vectorise on AVX2 as on AVX-512, and so do the loops of region mode: the
// generated translation unit of a few bodies, compiled to assembly with the options kjit
// compiles kernels with for -march=haswell and -march=skylake-avx512, does its math in packed
// instructions on ymm or zmm registers in the entry point.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/build_directory.h"
#include "backend/cpu/compiler_process.h"
#include "backend/cpu/host_compiler.h"
#include "codegen/cpu_mode.h"
#include "codegen/kernel_spec.h"
#include "codegen/source.h"

namespace kjit {
namespace {

using codegen::CallSignature;
using codegen::GeneratedSource;

// The assembly of the entry point of |body|'s translation unit (one float32 input and output,
// T = float), in the CPU mode |expected| (the one kjit chooses for it), compiled for
// -march=|arch| in |mode|.
std::string entry_assembly(const std::string& body, MathMode mode, const std::string& arch,
                           codegen::CpuMode expected = codegen::CpuMode::Loop,
                           const std::string& entry = codegen::kCpuEntry) {
  CompileOptions options;
  options.math_mode = mode;
  auto spec = make_spec(Dialect::Metal, "vector_probe", {"inp"}, {"out"}, body, "",
                        /*ensure_row_contiguous=*/true, /*atomic_outputs=*/false,
                        /*shared_memory=*/0, options);
  const CallSignature call{{{Dtype::Float32, 1}}, {Dtype::Float32}, {{"T", Dtype::Float32}}};
  const codegen::CpuModeChoice choice = codegen::choose_cpu_mode(*spec, call);
  EXPECT_EQ(choice.mode, expected) << choice.reason;
  const GeneratedSource generated = codegen::generate(*spec, call, choice);
  cpu::BuildDirectory dir("kjit_kernel.cpp", generated.text);
  std::vector<std::string> argv = {cpu::host_compiler().path};
  for (const std::string& f : cpu::compiler_flags(mode, arch)) argv.push_back(f);
  const std::string assembly = dir.file("kjit_kernel.s");
  argv.insert(argv.end(), {"-S", dir.file("kjit_kernel.cpp"), "-o", assembly});
  std::vector<std::string> environment;
  for (char** e = environ; *e; ++e) environment.emplace_back(*e);
  const cpu::CompilerRun run = cpu::run_compiler(argv, environment, {}, dir.path());
  EXPECT_EQ(run.code, 0) << run.output;
  std::ifstream in(assembly);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const size_t begin = text.find("\n" + entry + ":");
  const size_t end = text.find(".cfi_endproc", begin);
  EXPECT_NE(begin, std::string::npos);
  return begin == std::string::npos ? std::string() : text.substr(begin, end - begin);
}

// How many instructions of |assembly| match |mnemonic| (an ECMAScript pattern) and name a ymm or
// zmm register: packed operations on 8 or 16 floats.
int packed_count(const std::string& assembly, const std::string& mnemonic) {
  const std::regex line("^\\s+(" + mnemonic + ")\\s[^\\n]*%[yz]mm", std::regex::multiline);
  return static_cast<int>(std::distance(
      std::sregex_iterator(assembly.begin(), assembly.end(), line), std::sregex_iterator()));
}

struct MathBody {
  const char* name;
  const char* expression;  // of tmp, a T
  const char* mnemonic;    // the instructions that do its math
  int at_least;            // how many of them the vector loop holds
};

// exp: the reduction's two and the polynomial's seven fused multiply-adds, and its rounding;
// floor: its rounding; clamp: the selects of fmax and fmin (as blends, or compares and masks:
// compilers differ).
const MathBody kBodies[] = {
    {"exp", "metal::exp(tmp)", "vfmadd[0-9]+ps", 9},
    {"exp", "metal::exp(tmp)", "vroundps|vrndscaleps", 1},
    {"floor", "metal::floor(tmp)", "vroundps|vrndscaleps", 1},
    {"clamp", "metal::clamp(tmp, T(0), T(1))", "vblendvps|vblendmps|vmaxps|vminps|vcmp[a-z]+ps", 2},
};

std::string body_of(const MathBody& m) {
  return std::string("uint elem = thread_position_in_grid.x;\nT tmp = inp[elem];\nout[elem] = ") +
         m.expression + ";\n";
}

class VectorCode : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
#if !defined(__x86_64__)
    GTEST_SKIP() << "x86-64 code only";
#endif
    if (!cpu::host_compiler().found) GTEST_SKIP() << "no host compiler";
  }
};

TEST_P(VectorCode, SafeMathVectorises) {
  for (const MathBody& m : kBodies) {
    const std::string assembly = entry_assembly(body_of(m), MathMode::Safe, GetParam());
    EXPECT_GE(packed_count(assembly, m.mnemonic), m.at_least)
        << m.name << " for " << GetParam() << ":\n"
        << assembly;
    // The results are stored 8 or 16 at a time too (a load may be the math's memory operand).
    EXPECT_GE(packed_count(assembly, "vmovups|vmovaps"), 1) << m.name << " for " << GetParam();
  }
}

TEST_P(VectorCode, ExpVectorisesInEveryMathMode) {
  for (MathMode mode : {MathMode::Relaxed, MathMode::Fast}) {
    const std::string assembly = entry_assembly(body_of(kBodies[0]), mode, GetParam());
    EXPECT_GE(packed_count(assembly, kBodies[0].mnemonic), kBodies[0].at_least)
        << "mode " << static_cast<int>(mode) << " for " << GetParam();
  }
}

// Region mode's loops over a group's threads vectorise: the exp before a SIMD-group
// reduction and the division after it, and a step of a tree reduction in group memory between
// barriers (whose reads and writes of one array need no overlap check: threads do not order
// them).
TEST_P(VectorCode, RegionLoopsVectorise) {
  const std::string softmax_like =
      "const uint i = thread_position_in_grid.x;\n"
      "const float e = metal::exp(inp[i]);\n"
      "out[i] = e / simd_sum(e);\n";
  std::string assembly =
      entry_assembly(softmax_like, MathMode::Safe, GetParam(), codegen::CpuMode::Regions);
  EXPECT_GE(packed_count(assembly, kBodies[0].mnemonic), kBodies[0].at_least) << assembly;
  EXPECT_GE(packed_count(assembly, "vdivps"), 1) << assembly;
  const std::string tree_step =
      "threadgroup float partial[256];\n"
      "const uint t = thread_index_in_threadgroup;\n"
      "partial[t] = inp[thread_position_in_grid.x];\n"
      "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "for (uint s = 128; s > 0; s /= 2) {\n"
      "  if (t < s) partial[t] += partial[t + s];\n"
      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "}\n"
      "if (t == 0) out[threadgroup_position_in_grid.x] = partial[0];\n";
  assembly = entry_assembly(tree_step, MathMode::Safe, GetParam(), codegen::CpuMode::Regions);
  EXPECT_GE(packed_count(assembly, "vaddps"), 1) << assembly;
}

// In a small grid, a row of one simdgroup reads its lanes' consecutive elements as vectors,
// though the body computes their index in 32 bits (inp[row * 1024 + k0 + lane], MLX's way):
// the entry for such grids loads them with packed moves, where the other entry, which cannot
// rule out a wrapping index, loads each lane's element alone.
TEST_P(VectorCode, SmallGridsReadConsecutiveLanesAsVectors) {
  const std::string row_max =
      "const uint row = thread_position_in_grid.y, lane = thread_index_in_simdgroup;\n"
      "float best = -INFINITY;\n"
      "for (uint k0 = 0; k0 < 1024; k0 += 32) {\n"
      "  const float v = inp[row * 1024 + k0 + lane];\n"
      "  if (v > best) best = v;\n"
      "}\n"
      "out[row * 32 + lane] = simd_max(best);\n";
  const std::string small = entry_assembly(row_max, MathMode::Safe, GetParam(),
                                           codegen::CpuMode::Regions, codegen::kCpuSmallGridEntry);
  const std::string any =
      entry_assembly(row_max, MathMode::Safe, GetParam(), codegen::CpuMode::Regions);
  EXPECT_GE(packed_count(small, "vmaxps|vcmp[a-z]+ps"), 1) << small;
  EXPECT_EQ(small.find("vinsertps"), std::string::npos) << small;
  EXPECT_NE(any.find("vinsertps"), std::string::npos) << any;
}

// The 256-bit target uses no 512-bit register: the -march value reached the compiler.
TEST(VectorCode, HaswellCodeStaysWithinAvx2) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 code only";
#endif
  if (!cpu::host_compiler().found) GTEST_SKIP() << "no host compiler";
  const std::string assembly = entry_assembly(body_of(kBodies[0]), MathMode::Safe, "haswell");
  EXPECT_EQ(assembly.find("%zmm"), std::string::npos);
  EXPECT_EQ(assembly.find("{%k"), std::string::npos);  // no AVX-512 mask register
}

INSTANTIATE_TEST_SUITE_P(Targets, VectorCode, ::testing::Values("haswell", "skylake-avx512"),
                         [](const auto& info) {
                           return std::string(info.param) == "haswell" ? "Avx2" : "Avx512";
                         });

}  // namespace
}  // namespace kjit
