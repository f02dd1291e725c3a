// Generating a kernel's source takes time linear in its texts, whatever their shape: many
// comment lines, lines of code or tokens on one line, deep nesting. Each case is generated at n
// and at 4n; a stage that is quadratic takes about 16 times as long for the larger one. The
// generation runs on a thread with a small stack, so that a stage that recurses once per level
// of nesting fails here rather than in a user's thread.
#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "codegen/cpu_mode.h"
#include "codegen/kernel_spec.h"
#include "codegen/source.h"

namespace kjit::codegen {
namespace {

// What a body, or a header, of size n is made of.
using Text = std::function<std::string(size_t n)>;

std::string no_text(size_t) { return {}; }

struct Case {
  const char* name;
  Dialect dialect;
  CpuMode mode;  // the CPU mode the body must reach, so that the case tests that mode's stages
  Text source;
  Text header = no_text;
  size_t n = 25000;  // 4n = 100,000 comment lines, lines, levels...
};

std::string repeat(std::string_view piece, size_t n) {
  std::string out;
  out.reserve(piece.size() * n);
  for (size_t k = 0; k < n; ++k) out += piece;
  return out;
}

const char* kMetalIndex = "uint i = thread_position_in_grid.x;\n";
const char* kMetalBarrier = "threadgroup_barrier(mem_flags::mem_threadgroup);\n";

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"comment lines", Dialect::Metal, CpuMode::Loop,
       [](size_t n) { return "out[0] = inp[0];\n" + repeat("// a comment\n", n); }},
      {"comment lines around barriers", Dialect::Metal, CpuMode::Regions,
       [](size_t n) {
         return kMetalIndex + std::string("float x = inp[i];\n") + kMetalBarrier +
                repeat("// a comment\n", n) + "out[i] = x;\n" + kMetalBarrier;
       }},
      // Twice the lines of the others: at 25,000 the text's tokens still fit the caches, and
      // linear stages took 10-11 times as long at 4n.
      {"comment lines in a coroutine", Dialect::Metal, CpuMode::Coroutine,
       [](size_t n) {
         return kMetalIndex + repeat("/* a comment */\n", n) +
                "if (i < 4) out[i] = simd_sum(inp[i]);\n";
       },
       no_text, 50000},
      {"comment lines in CUDA", Dialect::Cuda, CpuMode::Regions,
       [](size_t n) {
         return "int x = inp[threadIdx.x];\n__syncthreads();\n" + repeat("// a comment\n", n) +
                "out[threadIdx.x] = x;\n";
       }},
      {"comment lines in the header", Dialect::Metal, CpuMode::Loop,
       [](size_t) { return std::string("out[0] = twice(inp[0]);\n"); },
       [](size_t n) {
         return repeat("// a comment\n", n) + "float twice(float v) { return 2 * v; }\n";
       }},
      {"lines of code", Dialect::Metal, CpuMode::Regions,
       [](size_t n) {
         return kMetalIndex + std::string("float x = inp[i];\n") + kMetalBarrier +
                repeat("x = x * 0.5 + 1.0;\n", n) + "out[i] = x;\n";
       }},
      {"one long line", Dialect::Metal, CpuMode::Regions,
       [](size_t n) {
         return kMetalIndex + std::string("float x = inp[i]") + repeat(" + inp[i] * 2.0", n) +
                ";\nout[i] = simd_sum(x);\n";
       }},
      {"nested parentheses", Dialect::Metal, CpuMode::Regions,
       [](size_t n) {
         return kMetalIndex + std::string("out[i] = simd_sum") + repeat("(", n) + "inp[i]" +
                repeat(")", n) + ";\n";
       }},
      {"nested braces", Dialect::Metal, CpuMode::Regions,
       [](size_t n) {
         return kMetalIndex + std::string(kMetalBarrier) + repeat("{", n) + "out[i] = inp[i];" +
                repeat("}", n) + "\n";
       }},
      {"nested calls", Dialect::Cuda, CpuMode::Regions,
       [](size_t n) {
         return "out[0] = __shfl_sync(0xffffffffu, " + repeat("max(", n) + "inp[0]" +
                repeat(", 1.0f)", n) + ", 0);\n";
       }},
      {"nested ifs", Dialect::Metal, CpuMode::Coroutine,
       [](size_t n) {
         return kMetalIndex + repeat("if (i < 4) ", n) + "out[i] = simd_sum(inp[i]);\n";
       }},
      {"nested loops that wait", Dialect::Metal, CpuMode::Coroutine,
       [](size_t n) {
         return kMetalIndex + repeat("for (int j = 0; j < 1; ++j) ", n) +
                "{ out[i] = inp[i]; threadgroup_barrier(mem_flags::mem_none); }\n";
       },
       no_text, 10000},
      {"nested braced loops that wait", Dialect::Cuda, CpuMode::Coroutine,
       [](size_t n) {
         return repeat("while (inp[0] > 1) {", n) +
                "out[0] = __shfl_sync(0xffffffffu, inp[0], 0);" + repeat("}", n) + "\n";
       },
       no_text, 10000},
      {"barriers", Dialect::Metal, CpuMode::Regions,
       [](size_t n) {
         return kMetalIndex + std::string("float x = inp[i];\n") +
                repeat(std::string("x = x + 1.0;\n") + kMetalBarrier, n) + "out[i] = x;\n";
       },
       no_text, 5000},
      {"warp operations", Dialect::Cuda, CpuMode::Regions,
       [](size_t n) {
         return "float x = inp[0];\n" + repeat("x = __shfl_sync(0xffffffffu, x, 0);\n", n) +
                "out[0] = x;\n";
       },
       no_text, 5000},
      {"barriers in a coroutine", Dialect::Cuda, CpuMode::Coroutine,
       [](size_t n) {
         return "float x = inp[0];\n" +
                repeat("if (x > 0) x = __shfl_sync(0xffffffffu, x, 0);\n", n) + "out[0] = x;\n";
       },
       no_text, 5000},
      {"variables carried across a barrier", Dialect::Metal, CpuMode::Regions,
       [](size_t n) {
         std::string body = kMetalIndex, sum = "0.0";
         for (size_t k = 0; k < n; ++k) {
           body += "float v" + std::to_string(k) + " = inp[i];\n";
           sum += " + v" + std::to_string(k);
         }
         return body + kMetalBarrier + "out[i] = " + sum + ";\n";
       },
       no_text, 5000},
      {"helpers that wait, callers first", Dialect::Metal, CpuMode::Coroutine,
       [](size_t n) { return "out[0] = f" + std::to_string(n - 1) + "(inp[0]);\n"; },
       [](size_t n) {
         // Each helper waits through the next one defined: found one round at a time, a
         // quadratic search.
         std::string header;
         for (size_t k = 0; k < n; ++k) header += "float f" + std::to_string(k) + "(float v);\n";
         for (size_t k = n; k-- > 1;) {
           header += "float f" + std::to_string(k) + "(float v) { return f" +
                     std::to_string(k - 1) + "(v) + 1; }\n";
         }
         return header + "float f0(float v) { return simd_sum(v); }\n";
       },
       5000},
      {"header macros that wait through each other", Dialect::Metal, CpuMode::Loop,
       [](size_t) { return std::string("out[0] = inp[0];\n"); },
       [](size_t n) {
         // Each macro names the one defined after it, the last waits: found one round at a
         // time, rounds x macros x tokens. None is used, so none is refused.
         std::string header;
         for (size_t k = n; k-- > 1;) {
           header += "#define M" + std::to_string(k) + " (M" + std::to_string(k - 1) + " + 1)\n";
         }
         return header + "#define M0 simd_sum(1.0f)\n";
       },
       2000},
  };
  return kCases;
}

// Runs |work| on a thread with a 1 MiB stack, and rethrows what it threw.
void on_small_stack(const std::function<void()>& work) {
  struct Job {
    const std::function<void()>* work;
    std::exception_ptr error;
  } job{&work, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 20);
  pthread_t thread;
  auto run = [](void* arg) -> void* {
    Job* j = static_cast<Job*>(arg);
    try {
      (*j->work)();
    } catch (...) {
      j->error = std::current_exception();
    }
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, run, &job), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  if (job.error) std::rethrow_exception(job.error);
}

// Seconds to make the spec of |c| at size |n| and generate it for the CPU and for CUDA: the
// faster of two tries, as a loaded machine only ever adds time.
double generation_seconds(const Case& c, size_t n) {
  const std::string source = c.source(n), header = c.header(n);
  const CallSignature call{{{Dtype::Float32, 1}}, {Dtype::Float32}, {}};
  double best = 1e9;
  for (int attempt = 0; attempt < 2; ++attempt) {
    on_small_stack([&] {
      const auto start = std::chrono::steady_clock::now();
      auto spec = make_spec(c.dialect, "k", {"inp"}, {"out"}, source, header,
                            /*ensure_row_contiguous=*/true, /*atomic_outputs=*/false,
                            /*shared_memory=*/0, {});
      const CpuModeChoice mode = choose_cpu_mode(*spec, call);
      EXPECT_EQ(cpu_mode_name(mode.mode), std::string(cpu_mode_name(c.mode)))
          << c.name << ": " << mode.reason;
      const GeneratedSource cpu = generate(*spec, call, mode);
      const GeneratedSource cuda = generate(*spec, call, Target::Cuda);
      EXPECT_GT(cpu.text.size(), source.size());
      EXPECT_GT(cuda.text.size(), source.size());
      best = std::min(
          best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    });
  }
  return best;
}

TEST(GenerationScaling, LinearInEveryShapeOfText) {
  for (const Case& c : cases()) {
    // Linear work takes about 4 times as long at 4n (up to 7 where the larger texts outgrow the
    // caches), quadratic about 16; times too short to measure well count as a millisecond. A
    // machine busy with other work (tests run in parallel) can slow one measurement, so a case
    // has five chances and 5 s, where the quadratic stages took tens of seconds; a quadratic
    // stage fails them all.
    double small = 0, large = 0;
    for (int chance = 0; chance < 5; ++chance) {
      small = generation_seconds(c, c.n);
      large = generation_seconds(c, 4 * c.n);
      if ((large / std::max(small, 1e-3) < 10.0 && large < 5.0) || large > 20.0) break;
    }
    EXPECT_LT(large / std::max(small, 1e-3), 10.0)
        << c.name << ": " << small << " s at n = " << c.n << ", " << large << " s at 4n";
    EXPECT_LT(large, 5.0) << c.name << " at n = " << 4 * c.n;
  }
}

}  // namespace
}  // namespace kjit::codegen
