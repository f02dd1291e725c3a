// Source generation is a pure function of the kernel spec and the call signature: these tests
// run no compiler.
#include <gtest/gtest.h>
#include <kjit/errors.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/lexer.h"
#include "codegen/regions.h"
#include "codegen/rewrite.h"
#include "codegen/source.h"

namespace kjit::codegen {
namespace {

// The arguments of a metal_kernel / cuda_kernel call, made into a spec by the library's make_spec.
class Spec {
 public:
  Spec& name(std::string n) {
    name_ = std::move(n);
    return *this;
  }
  Spec& dialect(Dialect d) {
    dialect_ = d;
    return *this;
  }
  Spec& inputs(std::vector<std::string> v) {
    inputs_ = std::move(v);
    return *this;
  }
  Spec& outputs(std::vector<std::string> v) {
    outputs_ = std::move(v);
    return *this;
  }
  Spec& source(std::string s) {
    source_ = std::move(s);
    return *this;
  }
  Spec& header(std::string s) {
    header_ = std::move(s);
    return *this;
  }
  Spec& atomic_outputs() {
    atomic_ = true;
    return *this;
  }

  std::shared_ptr<const KernelSpec> make() const {
    return make_spec(dialect_, name_, inputs_, outputs_, source_, header_,
                     /*ensure_row_contiguous=*/true, atomic_, /*shared_memory=*/0, {});
  }

 private:
  std::string name_ = "k";
  Dialect dialect_ = Dialect::Metal;
  std::vector<std::string> inputs_ = {"inp"};
  std::vector<std::string> outputs_ = {"out"};
  std::string source_;
  std::string header_;
  bool atomic_ = false;
};

CallSignature call(std::vector<std::pair<Dtype, int>> inputs, std::vector<Dtype> outputs,
                   TemplateArgs template_args = {}) {
  return {std::move(inputs), std::move(outputs), std::move(template_args)};
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(Signature, MetalArrayInputAndOutput) {
  auto spec = Spec().source("out[0] = inp[0];").make();
  EXPECT_EQ(signature(*spec, call({{Dtype::Float32, 2}}, {Dtype::Float32})),
            "    const device float* inp,\n"
            "    device float* out");
}

TEST(Signature, CudaArrayInputAndOutput) {
  auto spec = Spec().dialect(Dialect::Cuda).source("out[0] = inp[0];").make();
  EXPECT_EQ(signature(*spec, call({{Dtype::Float32, 2}}, {Dtype::Float32})),
            "    const float* __restrict__ inp,\n"
            "    float* __restrict__ out");
}

TEST(Signature, TypeNamesPerDialect) {
  Spec args = Spec().inputs({"a", "b"}).outputs({"c", "d"}).source("c[0] = a[0];");
  auto m = args.make();
  args.dialect(Dialect::Cuda);
  auto c = args.make();
  auto sig = call({{Dtype::Float16, 1}, {Dtype::BFloat16, 3}}, {Dtype::Int32, Dtype::UInt8});
  EXPECT_EQ(signature(*m, sig),
            "    const device float16_t* a,\n"
            "    const device bfloat16_t* b,\n"
            "    device int32_t* c,\n"
            "    device uint8_t* d");
  EXPECT_EQ(signature(*c, sig),
            "    const __half* __restrict__ a,\n"
            "    const __nv_bfloat16* __restrict__ b,\n"
            "    int32_t* __restrict__ c,\n"
            "    uint8_t* __restrict__ d");
}

TEST(Signature, ShapeStridesAndNdimOnlyWhenNamed) {
  const std::string source =
      "uint n = inp_shape[0] + inp_strides[1] + inp_ndim;\n"
      "out[0] = other[0];\n";
  for (Dialect d : {Dialect::Metal, Dialect::Cuda}) {
    auto spec = Spec().dialect(d).inputs({"inp", "other"}).source(source).make();
    std::string sig =
        signature(*spec, call({{Dtype::Float32, 2}, {Dtype::Float32, 2}}, {Dtype::Float32}));
    const std::string ptr =
        d == Dialect::Metal ? "const device float* " : "const float* __restrict__ ";
    const std::string out = d == Dialect::Metal ? "device float* out" : "float* __restrict__ out";
    // CUDA's are MLX's Shape and Strides; Metal's those of the target.
    const std::string dims = d == Dialect::Metal ? "kjit_" : "kjit_cuda_";
    EXPECT_EQ(sig, "    " + ptr +
                       "inp,\n"
                       "    const " +
                       dims +
                       "shape inp_shape,\n"
                       "    const " +
                       dims +
                       "strides inp_strides,\n"
                       "    const int inp_ndim,\n"
                       "    " +
                       ptr +
                       "other,\n"
                       "    " +
                       out);
  }
  // Only the ones named.
  auto spec = Spec().source("out[0] = inp[inp_strides[0]];").make();
  EXPECT_EQ(signature(*spec, call({{Dtype::Float32, 1}}, {Dtype::Float32})),
            "    const device float* inp,\n"
            "    const kjit_strides inp_strides,\n"
            "    device float* out");
}

TEST(Signature, ShapeNamesMustBeWholeIdentifiers) {
  auto spec = Spec()
                  .source(
                      "// inp_shape inp_strides inp_ndim\n"
                      "const char* s = \"inp_shape\";\n"
                      "uint a = inp_shapes[0] + my_inp_strides + inp_ndim2;\n"
                      "out[0] = inp[0];\n")
                  .make();
  EXPECT_EQ(signature(*spec, call({{Dtype::Float32, 2}}, {Dtype::Float32})),
            "    const device float* inp,\n"
            "    device float* out");
}

TEST(Signature, ShapeOnlyInHeaderDoesNotCount) {
  auto spec = Spec().source("out[0] = inp[0];").header("// inp_shape\n").make();
  EXPECT_EQ(signature(*spec, call({{Dtype::Float32, 2}}, {Dtype::Float32})),
            "    const device float* inp,\n"
            "    device float* out");
}

TEST(Signature, ZeroDimensionalInputs) {
  const std::string source = "out[0] = inp[0] * d[0] + d_shape[0] + d_ndim;";
  auto m = Spec().inputs({"inp", "d"}).source(source).make();
  auto sig = call({{Dtype::Float32, 1}, {Dtype::Float32, 0}}, {Dtype::Float32});
  // A value, with no shape, strides or ndim even when the body names them.
  EXPECT_EQ(signature(*m, sig),
            "    const device float* inp,\n"
            "    const float d,\n"
            "    device float* out");

  auto c = Spec().dialect(Dialect::Cuda).inputs({"inp", "d"}).source(source).make();
  std::string text = signature(*c, sig);
  std::vector<std::string> params;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) params.push_back(line);
  ASSERT_EQ(params.size(), 3u) << text;
  EXPECT_EQ(params[0], "    const float* __restrict__ inp,");
  EXPECT_EQ(params[2], "    float* __restrict__ out");
  // Passed by value: not a pointer, but a wrapper of the element type.
  EXPECT_EQ(params[1].find('*'), std::string::npos) << params[1];
  EXPECT_EQ(params[1].find('&'), std::string::npos) << params[1];
  EXPECT_TRUE(contains(params[1], "float")) << params[1];
  EXPECT_TRUE(params[1].size() > 3 && params[1].substr(params[1].size() - 3) == " d,") << params[1];
  EXPECT_EQ(params[1], "    const ::kjit::by_value<float> d,");
}

TEST(Signature, AtomicOutputs) {
  auto m = Spec()
               .source("atomic_fetch_add_explicit(&out[0], inp[0], memory_order_relaxed);")
               .atomic_outputs()
               .make();
  EXPECT_EQ(signature(*m, call({{Dtype::Float32, 1}}, {Dtype::Float32})),
            "    const device float* inp,\n"
            "    device atomic<float>* out");
  // CUDA's atomic functions take plain pointers: the outputs stay as they are.
  auto c =
      Spec().dialect(Dialect::Cuda).source("atomicAdd(&out[0], inp[0]);").atomic_outputs().make();
  std::string sig = signature(*c, call({{Dtype::Int32, 1}}, {Dtype::Int32}));
  EXPECT_TRUE(contains(sig, "int32_t* __restrict__ out")) << sig;
  EXPECT_FALSE(contains(sig, "atomic<")) << sig;
}

TEST(Signature, NoInputs) {
  auto spec = Spec().inputs({}).outputs({"a", "b"}).source("a[0] = 1; b[0] = 2;").make();
  EXPECT_EQ(signature(*spec, call({}, {Dtype::Float32, Dtype::Int64})),
            "    device float* a,\n"
            "    device int64_t* b");
}

TEST(TemplateDeclarations, InOrderPerDialect) {
  TemplateArgs args = {{"e", true},           {"f", 3},  {"T", Dtype::Float16},
                       {"g", false},          {"h", -7}, {"U", Dtype::Float32},
                       {"B", Dtype::BFloat16}};
  auto c = Spec().dialect(Dialect::Cuda).source("out[0] = inp[0];").make();
  EXPECT_EQ(template_declarations(*c, args),
            "  constexpr bool e = true;\n"
            "  constexpr int f = 3;\n"
            "  using T = __half;\n"
            "  constexpr bool g = false;\n"
            "  constexpr int h = -7;\n"
            "  using U = float;\n"
            "  using B = __nv_bfloat16;\n");
  auto m = Spec().source("out[0] = inp[0];").make();
  EXPECT_EQ(template_declarations(*m, args),
            "  constexpr bool e = true;\n"
            "  constexpr int f = 3;\n"
            "  using T = float16_t;\n"
            "  constexpr bool g = false;\n"
            "  constexpr int h = -7;\n"
            "  using U = float;\n"
            "  using B = bfloat16_t;\n");
  EXPECT_EQ(template_declarations(*m, {}), "");
}

TEST(MetalAttributes, TwentyNamesWithTheirTypes) {
  const auto& attrs = metal_attributes();
  EXPECT_EQ(attrs.size(), 20u);
  auto is_vector = [&](std::string_view name) {
    for (const Attribute& a : attrs) {
      if (name == a.name) return static_cast<int>(a.is_vector);
    }
    return -1;
  };
  EXPECT_EQ(is_vector("thread_position_in_grid"), 1);
  EXPECT_EQ(is_vector("threadgroup_position_in_grid"), 1);
  EXPECT_EQ(is_vector("threads_per_threadgroup"), 1);
  EXPECT_EQ(is_vector("thread_index_in_simdgroup"), 0);
  EXPECT_EQ(is_vector("thread_index_in_threadgroup"), 0);
  EXPECT_EQ(is_vector("simdgroup_index_in_threadgroup"), 0);
  EXPECT_EQ(is_vector("threads_per_simdgroup"), 0);
}

// Lines of |text|, 1-based: lines[n - 1] is line n.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

const std::string kBody =
    "uint elem = thread_position_in_grid.x;\n"
    "uint lane = thread_index_in_simdgroup; // threads_per_grid grid_size\n"
    "out[elem] = inp[elem] * scale + (T)lane * 2.0f;\n";

TEST(Generate, AttributeLocalsOnlyWhenNamedInTheBody) {
  auto spec = Spec().source(kBody).header("// threadgroups_per_grid in the header\n").make();
  GeneratedSource g = generate(
      *spec, call({{Dtype::Float32, 1}}, {Dtype::Float32}, {{"T", Dtype::Float32}, {"scale", 2}}),
      Target::Cpu);
  const std::string user = g.text.substr(g.user_part);
  EXPECT_TRUE(contains(user, "const ::kjit::uint3 thread_position_in_grid = ")) << user;
  EXPECT_TRUE(contains(user, "const unsigned thread_index_in_simdgroup = ")) << user;
  for (std::string absent : {"threads_per_grid =", "grid_size =", "threadgroups_per_grid =",
                             "thread_position_in_threadgroup =", "simdgroups_per_threadgroup ="}) {
    EXPECT_FALSE(contains(user, absent)) << absent;
  }
  EXPECT_TRUE(contains(user, "  using T = float;\n  constexpr int scale = 2;\n")) << user;
  EXPECT_EQ(g.kernel_name, "custom_kernel_k");
  EXPECT_TRUE(contains(user, g.kernel_name + "(")) << user;
}

TEST(Generate, ANameStartingWithADigitNamesThePrefixedFunction) {
  for (Dialect dialect : {Dialect::Metal, Dialect::Cuda}) {
    auto spec = Spec().name("1D_conv").dialect(dialect).source("out[0] = inp[0];").make();
    EXPECT_EQ(spec->name, "1D_conv");
    for (Target target : {Target::Cpu, Target::Cuda}) {
      GeneratedSource g = generate(*spec, call({{Dtype::Float32, 1}}, {Dtype::Float32}), target);
      EXPECT_EQ(g.kernel_name, "custom_kernel_1D_conv");
      const std::string user = g.text.substr(g.user_part);
      EXPECT_TRUE(contains(user, " custom_kernel_1D_conv(")) << user;
      EXPECT_FALSE(contains(user, " 1D_conv")) << user;
    }
  }
}

TEST(Generate, LineDirectivesAndBodyText) {
  const std::string header = "KJIT_INLINE float twice(float x) { return x * 2.0f; }\n";
  const std::string body = "uint i = thread_position_in_grid.x;\nout[i] = twice(inp[i]);\n";
  for (Dialect d : {Dialect::Metal, Dialect::Cuda}) {
    auto spec = Spec().dialect(d).source(body).header(header).make();
    GeneratedSource g = generate(*spec, call({{Dtype::Float32, 1}}, {Dtype::Float32}), Target::Cpu);
    const std::string user = g.text.substr(g.user_part);
    size_t h = user.find("#line 1 \"<header>\"\n" + header);
    size_t s = user.find("#line 1 \"<source>\"\n" + body);
    ASSERT_NE(h, std::string::npos) << user;
    ASSERT_NE(s, std::string::npos) << user;
    EXPECT_LT(h, s);
    EXPECT_EQ(user.find("#line 1 \"<header>\""), user.rfind("#line 1 \"<header>\""));
    EXPECT_EQ(user.find("#line 1 \"<source>\""), user.rfind("#line 1 \"<source>\""));
    // The header comes before the kernel function, the body inside it.
    size_t fn = user.find(g.kernel_name + "(");
    EXPECT_LT(h, fn);
    EXPECT_LT(fn, s);
  }
}

TEST(Generate, NoHeaderNoHeaderLine) {
  auto spec = Spec().source("out[0] = inp[0];\n").make();
  GeneratedSource g = generate(*spec, call({{Dtype::Float32, 1}}, {Dtype::Float32}), Target::Cpu);
  EXPECT_FALSE(contains(g.text, "<header>"));
  EXPECT_TRUE(contains(g.text, "#line 1 \"<source>\"\nout[0] = inp[0];\n"));
}

TEST(Generate, LinesAfterUserTextAreNumberedCorrectly) {
  // Every '#line N "kjit_kernel.cpp"' directive must make the next line number N.
  auto spec = Spec().source(kBody).header("// one\n// two\n// three").make();
  GeneratedSource g = generate(
      *spec, call({{Dtype::Float32, 1}}, {Dtype::Float32}, {{"T", Dtype::Float32}, {"scale", 2}}),
      Target::Cpu);
  std::vector<std::string> lines = split_lines(g.text);
  int directives = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.rfind("#line ", 0) != 0 || !contains(l, "\"kjit_kernel.cpp\"")) continue;
    ++directives;
    long n = std::strtol(l.c_str() + 6, nullptr, 10);
    EXPECT_EQ(n, static_cast<long>(i + 2)) << "directive on physical line " << i + 1;
  }
  EXPECT_EQ(directives, 2);
}

TEST(Generate, MetalBodyIsRewritten) {
  auto spec =
      Spec().source("device float* p = out;\nconstant float k = 0.5;\np[0] = inp[0] * k;\n").make();
  GeneratedSource g = generate(*spec, call({{Dtype::Float32, 1}}, {Dtype::Float32}), Target::Cpu);
  const std::string user = g.text.substr(g.user_part);
  EXPECT_TRUE(contains(user, "#line 1 \"<source>\"\nfloat* p = out;\nconst float k = 0.5f;\n"))
      << user;
  // The signature is rewritten too: no address-space qualifier reaches the C++ compiler.
  EXPECT_FALSE(has_identifier(lex(user), "device")) << user;
}

TEST(Generate, IsPure) {
  Spec args = Spec().inputs({"inp", "d"}).source(kBody).header("#define TWO 2\n");
  auto a = args.make();
  auto b = args.make();
  auto sig = call({{Dtype::Float16, 3}, {Dtype::Int32, 0}}, {Dtype::Float32},
                  {{"T", Dtype::Float32}, {"scale", 4}, {"flag", true}});
  GeneratedSource ga = generate(*a, sig, Target::Cpu);
  GeneratedSource gb = generate(*b, sig, Target::Cpu);
  GeneratedSource ga2 = generate(*a, sig, Target::Cpu);
  EXPECT_EQ(ga.text, gb.text);
  EXPECT_EQ(ga.text, ga2.text);
  EXPECT_EQ(ga.user_part, gb.user_part);
  EXPECT_EQ(ga.kernel_name, gb.kernel_name);
  // And depends on the call: another template value gives another text.
  auto sig2 = sig;
  sig2.template_args[1].second = 5;
  EXPECT_NE(generate(*a, sig2, Target::Cpu).text, ga.text);
  auto sig3 = sig;
  sig3.inputs[1].second = 1;
  EXPECT_NE(generate(*a, sig3, Target::Cpu).text, ga.text);
}

// The CUDA source has no entry point of its own: each launch shape's is added when needed.
TEST(CudaEntryPoints, OnlyThoseAskedForWithTheirLayoutAndFullness) {
  auto spec = Spec().source(kBody).make();
  GeneratedSource g = generate(*spec, call({{Dtype::Float16, 3}}, {Dtype::Float32}), Target::Cuda);
  EXPECT_FALSE(contains(g.text, "__global__")) << g.text.substr(g.user_part);
  std::set<std::string> names;
  for (unsigned index = 0; index < kCudaEntryPoints; ++index) {
    names.insert(cuda_entry_name(index));
  }
  EXPECT_EQ(names.size(), kCudaEntryPoints);
  // Entry point 5: kjit_cuda_column (layout 2), every group full.
  const std::string one = cuda_entry_points(g, 1u << 5);
  EXPECT_TRUE(contains(one, "void " + cuda_entry_name(5) + "(")) << one;
  EXPECT_TRUE(contains(one, "make_thread_ctx<2u, true>(kjit_launch)")) << one;
  EXPECT_TRUE(contains(one, "in_grid<2u, true>(t)")) << one;
  EXPECT_EQ(std::count(one.begin(), one.end(), '{') - std::count(one.begin(), one.end(), '}'), 0);
  const std::string all = cuda_entry_points(g, kAllCudaEntryPoints);
  for (unsigned index = 0; index < kCudaEntryPoints; ++index) {
    const bool in_one = contains(one, "void " + cuda_entry_name(index) + "(");
    EXPECT_EQ(in_one, index == 5) << index;
    EXPECT_TRUE(contains(all, "void " + cuda_entry_name(index) + "(")) << index;
    const std::string flags = std::to_string(index / 2) + (index % 2 ? "u, true>" : "u, false>");
    EXPECT_TRUE(contains(all, "make_thread_ctx<" + flags)) << index;
  }
  // Each entry point passes the kernel's parameters on in the launcher's order.
  EXPECT_TRUE(contains(one, g.kernel_name + "(kjit_arg0, kjit_arg1, t);")) << one;
}

const std::vector<std::string> kUniform = {"threads_per_threadgroup", "n"};

// How |spec|'s body names cooperative groups, as generation notes it for region planning.
WaitingHelpers body_names(const KernelSpec& spec) {
  WaitingHelpers names;
  note_cooperative_groups(spec.source_tokens, names);
  return names;
}

std::vector<RegionPlan::Piece::Kind> kinds(const RegionPlan& plan) {
  std::vector<RegionPlan::Piece::Kind> out;
  for (const RegionPlan::Piece& p : plan.pieces) out.push_back(p.kind);
  return out;
}

TEST(Regions, SplitAtBarriersOfTheBodyAndOfAUniformLoop) {
  auto spec = Spec()
                  .source(R"(
    threadgroup float partial[64];
    uint t = thread_index_in_threadgroup, u = t + 1;
    partial[t] = inp[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = threads_per_threadgroup.x / 2; s > 0; s /= 2) {
      if (t < s) partial[t] += partial[t + s];
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (t == 0) out[0] = partial[0] + u;
  )")
                  .make();
  std::optional<RegionPlan> plan = plan_regions(*spec, kUniform, body_names(*spec)).plan;
  ASSERT_TRUE(plan);
  using K = RegionPlan::Piece::Kind;
  EXPECT_EQ(kinds(*plan),
            (std::vector<K>{K::Region, K::LoopBegin, K::Region, K::LoopEnd, K::Region}));
  ASSERT_EQ(plan->carried.size(), 2u);  // both variables of the declaration
  EXPECT_EQ(plan->carried[0].name, "t");
  EXPECT_EQ(plan->carried[1].name, "u");
  EXPECT_EQ(plan->group_memory.size(), 1u);
  EXPECT_FALSE(plan->returns);
  std::deque<std::string> texts;
  std::vector<Token> edited = region_tokens(*spec, *plan, texts);
  std::string text;
  for (const Token& t : edited) text += t.text;
  EXPECT_TRUE(contains(text,
                       "kjit_carried_t = thread_index_in_threadgroup, "
                       "kjit_carried_u = kjit_carried_t + 1;"))
      << text;
  EXPECT_FALSE(contains(text, "threadgroup float")) << text;
}

TEST(Regions, ConstVariablesOfTheIndexVariablesAreDeclaredAgainNotCarried) {
  auto spec = Spec()
                  .source(R"(
    threadgroup float partial[64];
    const uint t = thread_index_in_threadgroup, u = t + 1;
    const uint v = u * 2;
    const float x = inp[t];
    partial[t] = x;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[v] = partial[63 - t] + x;
  )")
                  .make();
  std::optional<RegionPlan> plan = plan_regions(*spec, kUniform, body_names(*spec)).plan;
  ASSERT_TRUE(plan);
  // x reads memory: carried. t and u, and v, which reads u: declared again where used.
  ASSERT_EQ(plan->carried.size(), 1u);
  EXPECT_EQ(plan->carried[0].name, "x");
  ASSERT_EQ(plan->recomputed.size(), 2u);
  // The second region uses t and v; v needs u, declared with t.
  EXPECT_EQ(plan->recomputed[0].pieces, std::vector<size_t>{1});
  EXPECT_EQ(plan->recomputed[1].pieces, std::vector<size_t>{1});
}

TEST(Regions, SplitAtSimdGroupOperationsAndRunUniformLoopsAsTheGroups) {
  auto spec = Spec()
                  .source(R"(
    const uint lane = thread_index_in_simdgroup;
    float acc = 0.0f;
    for (uint k = 0; k < 4; ++k) acc += inp[k * 32 + lane] > 0.0f ? inp[k * 32 + lane] : 0.0f;
    float s = simd_sum(acc);
    for (ushort d = 16; d > 0; d /= 2) s += simd_shuffle_down(s, d);
    out[lane] = s;
  )")
                  .make();
  std::optional<RegionPlan> plan = plan_regions(*spec, kUniform, body_names(*spec)).plan;
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->operations);
  EXPECT_TRUE(plan->barriers.empty());
  using K = RegionPlan::Piece::Kind;
  // The loop without waits that branches is the group's too, so that the loop over its threads
  // vectorises the branch.
  EXPECT_EQ(kinds(*plan),
            (std::vector<K>{K::Region, K::LoopBegin, K::Region, K::LoopEnd, K::Operation, K::Region,
                            K::LoopBegin, K::Operation, K::Region, K::LoopEnd, K::Region}));
  ASSERT_EQ(plan->carried.size(), 2u);
  EXPECT_EQ(plan->carried[0].name, "acc");
  EXPECT_EQ(plan->carried[1].name, "s");
  EXPECT_EQ(plan->recomputed.size(), 1u);
  std::deque<std::string> texts;
  std::string text;
  for (const Token& t : with_operation_results(region_tokens(*spec, *plan, texts), *plan, texts)) {
    text += t.text;
  }
  EXPECT_TRUE(contains(text, "kjit_carried_s = kjit_op0_out[kjit_wi];")) << text;
  EXPECT_TRUE(contains(text, "kjit_carried_s += kjit_op1_out[kjit_wi]")) << text;
}

TEST(Regions, LoopsThatNeitherWaitNorBranchStayTheThreadsOwn) {
  auto spec = Spec()
                  .source(R"(
    const uint lane = thread_index_in_simdgroup;
    float acc = 0.0f;
    for (uint k = 0; k < 4; ++k) acc += inp[k * 32 + lane];
    out[lane] = simd_sum(acc);
  )")
                  .make();
  std::optional<RegionPlan> plan = plan_regions(*spec, kUniform, body_names(*spec)).plan;
  ASSERT_TRUE(plan);
  using K = RegionPlan::Piece::Kind;
  EXPECT_EQ(kinds(*plan), (std::vector<K>{K::Region, K::Operation, K::Region}));
}

TEST(Regions, KnowWhereEachBarrierStands) {
  auto spec = Spec()
                  .source(R"(
    threadgroup float v[64];
    v[thread_index_in_threadgroup] = 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = 0; s < 4; ++s) {
      threadgroup_barrier(mem_flags::mem_threadgroup);
      out[0] = v[s];
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  )")
                  .make();
  std::optional<RegionPlan> plan = plan_regions(*spec, kUniform, body_names(*spec)).plan;
  ASSERT_TRUE(plan);
  using K = RegionPlan::Piece::Kind;
  ASSERT_EQ(kinds(*plan), (std::vector<K>{K::Region, K::LoopBegin, K::Region, K::LoopEnd}));
  // Each barrier stands before a piece: the loop, the region in it, and the loop's end.
  ASSERT_EQ(plan->barriers.size(), 3u);
  EXPECT_EQ(plan->barriers[0].before, 1u);
  EXPECT_EQ(plan->barriers[0].line, 4);
  EXPECT_EQ(plan->barriers[1].before, 2u);
  EXPECT_EQ(plan->barriers[1].line, 6);
  EXPECT_EQ(plan->barriers[2].before, 3u);
  EXPECT_EQ(plan->barriers[2].line, 8);
}

TEST(Regions, AThreadThatReturnsLeavesTheLaterRegions) {
  auto spec = Spec()
                  .inputs({"inp", "n"})
                  .source(R"(
    if (thread_position_in_grid.x >= n) return;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    auto twice = [](float v) { return 2 * v; };
    out[0] = twice(inp[0]);
  )")
                  .make();
  std::optional<RegionPlan> plan = plan_regions(*spec, kUniform, body_names(*spec)).plan;
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->returns);
  std::deque<std::string> texts;
  std::string text;
  for (const Token& t : region_tokens(*spec, *plan, texts)) text += t.text;
  EXPECT_TRUE(contains(text, "return (void)(kjit_exited[kjit_wi] = true);")) << text;
  EXPECT_TRUE(contains(text, "{ return 2 * v; }")) << text;  // the lambda's own return stays
}

TEST(Regions, WaitsThreadsMayReachApartNeedCoroutines) {
  for (const char* body : {
           // A barrier in a branch.
           "if (thread_index_in_threadgroup < 4) threadgroup_barrier(mem_flags::mem_none);",
           // A loop whose header differs between threads.
           "for (uint k = thread_index_in_threadgroup; k < 4; ++k) {\n"
           "  threadgroup_barrier(mem_flags::mem_none);\n}",
           // A SIMD-group operation in a branch, braced or not, or in an else.
           "if (thread_index_in_threadgroup < 4) { out[0] = simd_sum(inp[0]); }",
           "if (thread_index_in_threadgroup < 4) out[0] = simd_sum(inp[0]);",
           "if (inp[0] > 0) {} else out[0] = simd_sum(inp[0]);",
           // ... after an operator that may skip it, or after a comma operator.
           "out[0] = inp[0] > 0 ? simd_sum(inp[0]) : 0;",
           "out[0] = inp[0] > 0 && simd_any(inp[0] > 1);",
           "float a = inp[0], b = simd_sum(a);\nout[0] = b;",
           // ... in another's operands, or in a loop that threads may run apart.
           "out[0] = simd_sum(simd_shuffle(inp[0], 3));",
           "for (uint k = thread_index_in_threadgroup; k < 4; ++k) out[k] = simd_sum(inp[k]);",
           // A shared variable declared again inside.
           "const uint t = 3;\nthreadgroup_barrier(mem_flags::mem_none);\n"
           "{ float t; t = 2; out[0] = t; }\nout[1] = t;",
       }) {
    auto spec = Spec().source(body).make();
    const RegionPlanning planning = plan_regions(*spec, kUniform, body_names(*spec));
    EXPECT_FALSE(planning.plan) << body;
    EXPECT_EQ(planning.refusal.substr(0, 5), "line ") << body;
  }
}

}  // namespace
}  // namespace kjit::codegen
