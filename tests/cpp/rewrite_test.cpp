#include <gtest/gtest.h>
#include <kjit/errors.h>

#include <algorithm>
#include <string>

#include "codegen/lexer.h"
#include "codegen/rewrite.h"

namespace kjit::codegen {
namespace {

std::string metal(const std::string& text, Target target = Target::Cpu) {
  return rewrite(lex(text), Dialect::Metal, target);
}
std::string cuda(const std::string& text, Target target = Target::Cpu) {
  return rewrite(lex(text), Dialect::Cuda, target);
}

size_t newlines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// The message of the kjit::ValueError that check_supported throws, or "" when it throws none.
std::string unsupported(const std::string& text, Dialect dialect,
                        TextOrigin origin = TextOrigin::Source) {
  try {
    check_supported(lex(text), dialect, origin);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

TEST(RewriteMetal, DropsDeviceAndThread) {
  EXPECT_EQ(metal("const device float* a, device float* b, thread float& t"),
            "const float* a, float* b, float& t");
  EXPECT_EQ(metal("device\nfloat* p;"), "\nfloat* p;");
}

TEST(RewriteMetal, ConstantBecomesConstOnce) {
  EXPECT_EQ(metal("constant float k = 2;"), "const float k = 2;");
  EXPECT_EQ(metal("constant float* p"), "const float* p");
  EXPECT_EQ(metal("constant const float k"), "const float k");
  EXPECT_EQ(metal("const constant float* p"), "const float* p");
  EXPECT_EQ(metal("const /* c */ constant float* p"), "const /* c */ float* p");
  EXPECT_EQ(metal("constant\n  const int n"), "\n  const int n");
}

TEST(RewriteMetal, LeavesIdentifiersContainingQualifiers) {
  const std::string text =
      "uint device_id = my_device + thread_count + threadgroup_size + my_constant +\n"
      "    constant_k + devices + threads + thread_ + _thread + constants;\n";
  EXPECT_EQ(metal(text), text);
}

TEST(RewriteMetal, LeavesCommentsAndStrings) {
  const std::string text =
      "// device thread constant 0.5\nconst char* s = \"device 0.5\"; /* 1.5 */\n";
  EXPECT_EQ(metal(text), text);
}

TEST(RewriteMetal, UnsuffixedFloatLiteralsBecomeFloat) {
  EXPECT_EQ(metal("x = 0.5;"), "x = 0.5f;");
  EXPECT_EQ(metal("x = 1e3;"), "x = 1e3f;");
  EXPECT_EQ(metal("x = 2.;"), "x = 2.f;");
  EXPECT_EQ(metal("x = 0x1p3;"), "x = 0x1p3f;");
  EXPECT_EQ(metal("x = .25 + 1.5e-3 + 1E+2 + 0x1.8P-1 + 1'000.5;"),
            "x = .25f + 1.5e-3f + 1E+2f + 0x1.8P-1f + 1'000.5f;");
}

TEST(RewriteMetal, LiteralsBeyondFloatsRangeBecomeWhatMetalMakesOfThem) {
  // Infinity, or zero below the smallest float: NVRTC refuses such literals.
  EXPECT_EQ(metal("x = 1e39 + 1e-50 + 1e-40;"),
            "x = __builtin_bit_cast(float, 0x7f800000u) + 0.0f + 1e-40f;");
  EXPECT_EQ(metal("h = 1e39h;"), "h = static_cast<half>(__builtin_bit_cast(float, 0x7f800000u));");
}

TEST(RewriteMetal, SuffixedAndIntegerLiteralsStay) {
  const std::string text =
      "x = 0.5f + 1 + 0x10 + 1e3f + 2.F + 0x1p3f + 0x1e3 + 0xE + 7u + 1'000 + 0b11 + "
      "1.0L + 012;";
  EXPECT_EQ(metal(text), text);
}

TEST(RewriteMetal, DropsMetalIncludesKeepingLines) {
  EXPECT_EQ(metal("#include <metal_stdlib>\nusing namespace metal;\n"),
            "\nusing namespace metal;\n");
  EXPECT_EQ(metal("  #  include <metal_math> // math\nx = 1;\n"), "  \nx = 1;\n");
  EXPECT_EQ(metal("#include \"metal_atomic\"\nx = 1;\n"), "\nx = 1;\n");
  EXPECT_EQ(metal("#include <metal_stdlib>"), "");
  // Other headers are the user's.
  EXPECT_EQ(metal("#include <my_header.h>\n"), "#include <my_header.h>\n");
  EXPECT_EQ(metal("#include <metalfoo.h>\n"), "#include <metalfoo.h>\n");
}

TEST(RewriteMetal, SwizzlesBecomeMemberTemplates) {
  EXPECT_EQ(metal("v.zyx + p->rg"), "v.template swizzle<2, 1, 0>() + p->template swizzle<0, 1>()");
  EXPECT_EQ(metal("v.xy = s; v.wz += t; c = v.xy == s;"),
            "v.template swizzle_ref<0, 1>() = s; v.template swizzle_ref<3, 2>() += t; "
            "c = v.template swizzle<0, 1>() == s;");
  // Single letters are members; mixed sets, long names and non-members are left alone.
  EXPECT_EQ(metal("v.x + v.xg + v.xyzwx + xy + s.rgba"),
            "v.x + v.xg + v.xyzwx + xy + s.template swizzle<0, 1, 2, 3>()");
  EXPECT_EQ(cuda("v.xy"), "v.xy");
}

TEST(RewriteMetal, KeepsLineStructure) {
  const std::string text =
      "#include <metal_stdlib>\n"
      "using namespace metal;\n"
      "constant float scale = 0.5;\n"
      "/* device\n"
      "   thread */ device float* p = nullptr;\n"
      "#define TWICE(x) \\\n"
      "  ((x) * 2.0)\n"
      "auto s = R\"(raw\n"
      "device)\";\n"
      "thread float& r = *p; // 1.5\n"
      "float y = 1e3 + scale;\n";
  const std::string out = metal(text);
  EXPECT_EQ(newlines(out), newlines(text));
  // Each marker is on the same line before and after.
  auto line_of = [](const std::string& s, const std::string& needle) {
    size_t at = s.find(needle);
    return at == std::string::npos ? -1
                                   : static_cast<int>(std::count(s.begin(), s.begin() + at, '\n'));
  };
  for (std::string marker :
       {"using namespace", "scale =", "p = nullptr", "TWICE", "((x)", "raw", "r = *p", "float y"}) {
    EXPECT_EQ(line_of(out, marker), line_of(text, marker)) << marker;
  }
  EXPECT_NE(out.find("const float scale = 0.5f;"), std::string::npos) << out;
  EXPECT_NE(out.find("((x) * 2.0f)"), std::string::npos) << out;
  EXPECT_NE(out.find("device)\""), std::string::npos) << out;  // inside a raw string
  EXPECT_NE(out.find("/* device\n   thread */"), std::string::npos) << out;
  EXPECT_NE(out.find("float y = 1e3f + scale;"), std::string::npos) << out;
}

TEST(RewriteMetal, ThreadgroupStorageBecomesSharedOnCuda) {
  EXPECT_EQ(metal("threadgroup float buf[32];", Target::Cuda), "__shared__ float buf[32];");
  EXPECT_EQ(metal("{ threadgroup atomic_uint c[4]; }", Target::Cuda),
            "{ __shared__ atomic_uint c[4]; }");
  // A qualifier of a pointer, reference, cast or parameter is dropped.
  EXPECT_EQ(metal("threadgroup float* p = buf;", Target::Cuda), "float* p = buf;");
  EXPECT_EQ(metal("x = (threadgroup float*)y;", Target::Cuda), "x = (float*)y;");
  EXPECT_EQ(metal("void f(threadgroup float& r);", Target::Cuda), "void f(float& r);");
  // threadgroup_barrier and mem_threadgroup are other names.
  EXPECT_EQ(metal("threadgroup_barrier(mem_flags::mem_threadgroup);", Target::Cuda),
            "threadgroup_barrier(mem_flags::mem_threadgroup);");
}

TEST(RewriteCuda, LeavesTextAlone) {
  const std::string text =
      "float device = 0.5; double thread = 1e3; const float constant = 2.;\n"
      "#include <my_header.h>\n";
  EXPECT_EQ(cuda(text), text);
  EXPECT_EQ(cuda("#include <cuda_fp16.h>\nx = 1;\n"), "\nx = 1;\n");
  EXPECT_EQ(cuda("#include <cooperative_groups.h>\n"), "\n");
}

TEST(CheckSupported, MetalFeaturesNoBackendRuns) {
  std::string msg = unsupported("uint i = 0;\n\ntexture2d<float> tex;\n", Dialect::Metal);
  EXPECT_NE(msg.find("'texture2d'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("metal_kernel"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not supported"), std::string::npos) << msg;

  msg = unsupported("\nsampler s;", Dialect::Metal);
  EXPECT_NE(msg.find("'sampler'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;

  msg = unsupported("\ntexture2d_array<half> t;", Dialect::Metal, TextOrigin::Header);
  EXPECT_NE(msg.find("'texture2d_array'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("header line 2"), std::string::npos) << msg;
}

TEST(RewriteMetal, CooperativeBodiesBecomeCoroutinesOnTheCpu) {
  const std::string body =
      "float s = simd_sum(x) + simd_max(simd_shuffle(x, 3));\n"
      "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "if (i == 0) return;\n";
  EXPECT_EQ(rewrite(lex(body), Dialect::Metal, Target::Cpu, /*coroutine=*/true),
            "float s = (co_await simd_sum(x)) + (co_await simd_max((co_await simd_shuffle(x, "
            "3))));\n"
            "(co_await threadgroup_barrier(mem_flags::mem_threadgroup));\n"
            "if (i == 0) co_return;\n");
  EXPECT_TRUE(uses_suspending_calls(lex(body), Dialect::Metal));
  EXPECT_FALSE(uses_suspending_calls(lex("uint simd_lane_id = 0; // simd_sum(x)"), Dialect::Metal));
  EXPECT_EQ(metal("threadgroup float buf[8];"), "static thread_local float buf[8];");
}

TEST(RewriteCooperative, AwaitsWholeQualifiedNamesAndMemberCalls) {
  EXPECT_EQ(rewrite(lex("float s = metal::simd_sum(x) + ::metal::simd_max(y);"), Dialect::Metal,
                    Target::Cpu, true),
            "float s = (co_await metal::simd_sum(x)) + (co_await ::metal::simd_max(y));");
  EXPECT_EQ(rewrite(lex("v += tile.shfl_down(v, d); cg::this_thread_block().sync();\n"
                        "p->tiles[k].sync(); t.shfl(t.shfl_xor(v, 1), 0); g.thread_rank();"),
                    Dialect::Cuda, Target::Cpu, true),
            "v += (co_await tile.shfl_down(v, d)); (co_await cg::this_thread_block().sync());\n"
            "(co_await p->tiles[k].sync()); (co_await t.shfl((co_await t.shfl_xor(v, 1)), 0)); "
            "g.thread_rank();");
  EXPECT_EQ(rewrite(lex("x = (*p).sync(); y = a > (b).any(1);"), Dialect::Cuda, Target::Cpu, true),
            "x = (co_await (*p).sync()); y = a > (co_await (b).any(1));");
  // Outside cooperative mode, and for free functions of the same names, nothing changes.
  EXPECT_EQ(rewrite(lex("bool b = any(x) && sync(y);"), Dialect::Cuda, Target::Cpu, true),
            "bool b = any(x) && sync(y);");
  // cooperative_groups' collective free functions wait when qualified; a function of the user's
  // named reduce, or another namespace's, does not.
  EXPECT_EQ(rewrite(lex("s = cg::reduce(t, v, cg::plus<float>()) + reduce(v);\n"
                        "cooperative_groups::sync(b); std::reduce(p, q); my::sync(b);"),
                    Dialect::Cuda, Target::Cpu, true),
            "s = (co_await cg::reduce(t, v, cg::plus<float>())) + reduce(v);\n"
            "(co_await cooperative_groups::sync(b)); std::reduce(p, q); my::sync(b);");
  // Through an alias, from the global namespace, or after a using directive; not a namespace cg
  // of the user's inside another.
  EXPECT_EQ(rewrite(lex("namespace g = ::cooperative_groups; s = g::reduce(t, v, op);\n"
                        "::cg::sync(b); my::cg::reduce(x); t.reduce(v);"),
                    Dialect::Cuda, Target::Cpu, true),
            "namespace g = ::cooperative_groups; s = (co_await g::reduce(t, v, op));\n"
            "(co_await ::cg::sync(b)); my::cg::reduce(x); t.reduce(v);");
  // Unqualified, only with cooperative groups' numbers of arguments.
  EXPECT_EQ(rewrite(lex("using namespace cooperative_groups; s = reduce(t, v, plus<int>()) + "
                        "reduce(v); sync(b); sync(b, c);"),
                    Dialect::Cuda, Target::Cpu, true),
            "using namespace cooperative_groups; s = (co_await reduce(t, v, plus<int>())) + "
            "reduce(v); (co_await sync(b)); sync(b, c);");
  // After a using declaration, the one function it names, also through an alias.
  EXPECT_EQ(rewrite(lex("using cooperative_groups::reduce; s = reduce(t, v, op); sync(b);"),
                    Dialect::Cuda, Target::Cpu, true),
            "using cooperative_groups::reduce; s = (co_await reduce(t, v, op)); sync(b);");
  EXPECT_EQ(rewrite(lex("namespace g = cg; using ::g::sync; sync(b); reduce(t, v, op);"),
                    Dialect::Cuda, Target::Cpu, true),
            "namespace g = cg; using ::g::sync; (co_await sync(b)); reduce(t, v, op);");
  // An alias the header declares, for the body.
  WaitingHelpers header = find_waiting_helpers(lex("namespace g = cg;"), Dialect::Cuda);
  EXPECT_EQ(rewrite(lex("g::sync(b);"), Dialect::Cuda, Target::Cpu, true, 0, &header),
            "(co_await g::sync(b));");
  EXPECT_EQ(rewrite(lex("g::sync(b);"), Dialect::Cuda, Target::Cpu, true), "g::sync(b);");
}

TEST(RewriteCooperative, LambdasKeepTheirReturns) {
  EXPECT_EQ(rewrite(lex("auto sq = [&](float v) -> float { return v * v; };\n"
                        "auto one = [] { if (true) { return 1; } return 2; };\n"
                        "if (x) { simd_sum(x); return; }\nreturn;"),
                    Dialect::Metal, Target::Cpu, true),
            "auto sq = [&](float v) -> float { return v * v; };\n"
            "auto one = [] { if (true) { return 1; } return 2; };\n"
            "if (x) { (co_await simd_sum(x)); co_return; }\nco_return;");
}

TEST(RewriteCooperative, LoopsThatWaitCountTheirIterations) {
  auto cpu = [](const std::string& body) {
    return rewrite(lex(body), Dialect::Metal, Target::Cpu, /*coroutine=*/true);
  };
  // The mark names the loop's place in the source, on the loop's line.
  const std::string mark =
      "{::kjit::coop::loop_mark kjit_loop_0(co_await ::kjit::coop::this_lane{}, KJIT_CALL_SITE);";
  // A for counts after its step; a while becomes a for, its condition kept as written.
  EXPECT_EQ(
      cpu("for (int k = 0; k < n; ++k) s += simd_sum(k);"),
      mark + "for (int k = 0; k < n; (void)kjit_loop_0.next(), ++k) s += (co_await simd_sum(k));}");
  EXPECT_EQ(cpu("for (;;) {\n  if (simd_all(d)) break;\n}"),
            mark + "for (;;(void)kjit_loop_0.next()) {\n  if ((co_await simd_all(d))) break;\n}}");
  EXPECT_EQ(cpu("while (int r = f(simd_sum(x))) g(r);"),
            mark + "for (;int r = f((co_await simd_sum(x)));(void)kjit_loop_0.next()) g(r);}");
  // A do-while and a range for count on entering their bodies, braced or not.
  EXPECT_EQ(cpu("do { s = simd_sum(s); } while (s < 9);"),
            mark + "do {(void)kjit_loop_0.next(); s = (co_await simd_sum(s)); } while (s < 9);}");
  EXPECT_EQ(cpu("for (float v : a) s += simd_sum(v);"),
            mark + "for (float v : a) {(void)kjit_loop_0.next();s += (co_await simd_sum(v));}}");
  // An unroll hint right before a marked loop is blanked, keeping its line; a labelled
  // statement is a whole loop body.
  EXPECT_EQ(cpu("s = 0;\n#pragma unroll\nfor (;;) simd_sum(s);"),
            "s = 0;\n\n{::kjit::coop::loop_mark kjit_loop_12(co_await ::kjit::coop::this_lane{}, "
            "KJIT_CALL_SITE);for (;;(void)kjit_loop_12.next()) (co_await simd_sum(s));}");
  const std::string hinted =
      cpu("#if 1\n#pragma unroll\n#endif\n_Pragma(\"unroll\") for (;;) simd_sum(s);");
  EXPECT_EQ(hinted.find("pragma"), std::string::npos) << hinted;
  EXPECT_NE(hinted.find("#if 1\n\n#endif\n"), std::string::npos) << hinted;
  EXPECT_EQ(cpu("while (a) L: { simd_sum(a); } b = 1;"),
            mark + "for (;a;(void)kjit_loop_0.next()) L: { (co_await simd_sum(a)); }} b = 1;");
  // Loops that do not wait, and loops inside lambdas, stay as they are.
  EXPECT_EQ(cpu("for (int k = 0; k < 3; ++k) s += k;\nsimd_sum(s);"),
            "for (int k = 0; k < 3; ++k) s += k;\n(co_await simd_sum(s));");
  EXPECT_EQ(cpu("auto f = [&] { for (;;) g(); };"), "auto f = [&] { for (;;) g(); };");
  // The while of a do-while is not a loop of its own; the lines stay where they were.
  const std::string nested = "while (a) {\n  do\n    simd_sum(a);\n  while (b);\n}\n";
  const std::string rewritten = cpu(nested);
  EXPECT_EQ(std::count(rewritten.begin(), rewritten.end(), '\n'), 5) << rewritten;
  EXPECT_EQ(rewritten.find("while (a)"), std::string::npos) << rewritten;
  EXPECT_NE(rewritten.find("while (b);}"), std::string::npos) << rewritten;
}

TEST(RewriteCooperative, WaitingHelpersBecomeSubtasks) {
  const std::string header =
      "template <class T>\ninline T total(T v) {\n  return simd_sum(v);\n}\n"
      "float plain(float v) { return v; }\n"
      "constexpr float twice(float v) {\n  return total(v) + total(v);\n}\n"
      "bool any_of(int x);\n";
  const std::vector<Token> tokens = lex(header);
  const WaitingHelpers helpers = find_waiting_helpers(tokens, Dialect::Metal);
  EXPECT_EQ(helpers.names, (std::vector<std::string>{"total", "twice"}));
  const std::string out = rewrite_header(tokens, Dialect::Metal, Target::Cpu, helpers);
  EXPECT_EQ(out,
            "template <class T>\ninline ::kjit::coop::subtask<T> total(T v) {\n"
            "  co_return (co_await simd_sum(v));\n}\n"
            "float plain(float v) { return v; }\n"
            "::kjit::coop::subtask<float> twice(float v) {\n"
            "  co_return (co_await ::kjit::coop::called_at(KJIT_CALL_SITE, total(v))) + "
            "(co_await ::kjit::coop::called_at(KJIT_CALL_SITE, total(v)));\n}\n"
            "bool any_of(int x);\n");
  EXPECT_EQ(newlines(out), newlines(header));
  // In the body, calls of waiting helpers are awaited; other uses of the names are not.
  EXPECT_EQ(rewrite(lex("float t = total(x); auto f = &plain; s.total(1);"), Dialect::Metal,
                    Target::Cpu, true, 0, &helpers),
            "float t = (co_await ::kjit::coop::called_at(KJIT_CALL_SITE, total(x))); "
            "auto f = &plain; s.total(1);");
  EXPECT_TRUE(uses_suspending_calls(lex("y = twice(x);"), Dialect::Metal, &helpers));
  EXPECT_FALSE(uses_suspending_calls(lex("y = plain(x);"), Dialect::Metal, &helpers));
  // A function defined in a class is awaited when called through an object too.
  const std::vector<Token> with_class =
      lex("struct Reduce {\n  float sum(float v) const { return simd_sum(v); }\n};\n");
  const WaitingHelpers members = find_waiting_helpers(with_class, Dialect::Metal);
  EXPECT_EQ(members.members, std::vector<std::string>{"sum"});
  EXPECT_EQ(
      rewrite(lex("r.sum(x); Reduce().sum(y);"), Dialect::Metal, Target::Cpu, true, 0, &members),
      "(co_await ::kjit::coop::called_at(KJIT_CALL_SITE, r.sum(x))); "
      "(co_await ::kjit::coop::called_at(KJIT_CALL_SITE, Reduce().sum(y)));");
  // A deduced return type cannot become a subtask.
  const std::vector<Token> deduced = lex("\nauto f(float v) { return simd_sum(v); }");
  EXPECT_THROW(rewrite_header(deduced, Dialect::Metal, Target::Cpu,
                              find_waiting_helpers(deduced, Dialect::Metal)),
               ValueError);
}

TEST(RewriteCuda, SharedMemoryOnTheCpu) {
  EXPECT_EQ(rewrite(lex("__shared__ float s[8];"), Dialect::Cuda, Target::Cpu),
            "static thread_local float s[8];");
  EXPECT_EQ(rewrite(lex("extern __shared__ unsigned int buf[];\nx;"), Dialect::Cuda, Target::Cpu,
                    false, 64),
            "unsigned int* const buf = reinterpret_cast<unsigned int*>("
            "::kjit::dynamic_shared(64));\nx;");
  EXPECT_EQ(rewrite(lex("__syncthreads();"), Dialect::Cuda, Target::Cpu, /*coroutine=*/true),
            "(co_await __syncthreads());");
}

TEST(CheckSupported, SimdgroupMatricesAreAccepted) {
  // MSL's names for SIMD-group matrices and their functions; products wait on the CPU.
  for (std::string text :
       {"simdgroup_float8x8 m;", "simdgroup_half8x8 m;", "simdgroup_bfloat8x8 m;",
        "simdgroup_matrix<float, 8, 8> m;", "simdgroup_load(m, p, 8);", "simdgroup_store(m, p);"}) {
    EXPECT_EQ(unsupported(text, Dialect::Metal), "") << text;
    EXPECT_TRUE(uses_simdgroup_matrices(lex(text))) << text;
  }
  EXPECT_FALSE(uses_simdgroup_matrices(lex("float simdgroup_sum = simd_sum(x);")));
  EXPECT_EQ(
      rewrite(lex("simdgroup_multiply_accumulate(d, a, b, d);"), Dialect::Metal, Target::Cpu, true),
      "(co_await simdgroup_multiply_accumulate(d, a, b, d));");
}

TEST(CheckSupported, CooperativeFeatures) {
  // Barriers, SIMD-group, quad-group and warp operations run in the body and in helpers.
  for (const char* text :
       {"uint i = 0;\nthreadgroup_barrier(mem_flags::mem_threadgroup);\n", "float s = simd_sum(x);",
        "float q = quad_sum(x) + quad_shuffle_rotate_down(x, 1);",
        "float r = simd_shuffle_and_fill_up(x, y, 2, 8);",
        "atomic_fetch_add_explicit(p, 1, memory_order_relaxed);"}) {
    EXPECT_EQ(unsupported(text, Dialect::Metal), "") << text;
  }
  EXPECT_EQ(
      unsupported("float f(float x) { return simd_sum(x); }", Dialect::Metal, TextOrigin::Header),
      "");
  EXPECT_EQ(unsupported("__syncthreads();", Dialect::Cuda), "");
  EXPECT_EQ(unsupported("int n = __syncthreads_count(1);", Dialect::Cuda), "");
  EXPECT_EQ(unsupported("float f(T g, float v) { return g.shfl_down(v, 1); }", Dialect::Cuda,
                        TextOrigin::Header),
            "");
}

TEST(CheckSupported, UserIdentifiersAreNotFeatures) {
  const std::string text =
      "uint simd_lane_id = 0; uint simd_size = 32; uint threadgroup_size = 4;\n"
      "uint my_texture2d = 1; uint simdgroup_id = 0; uint atomics = 2; uint sum_simd = 3;\n"
      "// threadgroup_barrier texture2d simd_sum\n"
      "const char* s = \"simd_sum texture2d\";\n";
  EXPECT_EQ(unsupported(text, Dialect::Metal), "");
  EXPECT_EQ(unsupported(text, Dialect::Cuda), "");
  // Metal-only features mean nothing to the CUDA dialect.
  EXPECT_EQ(unsupported("int texture2d = 1;", Dialect::Cuda), "");
}

}  // namespace
}  // namespace kjit::codegen
