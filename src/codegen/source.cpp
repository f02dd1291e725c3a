#include "codegen/source.h"

#include <kjit/errors.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <optional>
#include <string_view>

#include "codegen/prelude.h"
#include "codegen/regions.h"
#include "codegen/token_scan.h"

namespace kjit::codegen {
namespace {

std::string_view type_name(const KernelSpec& spec, Dtype dtype) {
  return spec.dialect == Dialect::Metal ? msl_type_name(dtype) : cuda_type_name(dtype);
}

// Appends text while counting lines, so that #line directives can name the real line.
class Writer {
 public:
  void add(std::string_view text) {
    line_ += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    out_ += text;
  }
  // Room for |bytes| more, so that a long text grows once.
  void reserve(size_t bytes) { out_.reserve(out_.size() + bytes); }
  Writer& operator<<(std::string_view text) {
    add(text);
    return *this;
  }
  // Resumes line numbering of the generated file after a stretch of user text.
  void resume_generated() {
    add("\n#line " + std::to_string(line_ + 2) + " \"kjit_kernel.cpp\"\n");
  }
  std::string& str() { return out_; }
  size_t size() const { return out_.size(); }

 private:
  std::string out_;
  int line_ = 1;
};

// CUDA's builtin index variables, emitted as locals on targets that lack them.
struct CudaBuiltin {
  const char* name;
  const char* attribute;
  bool decoded;  // differs from the GPU's own value, which counts blocks of the 1-D launch
  bool sizes;    // a dim3 in CUDA (blockDim, gridDim), else a uint3
};
constexpr CudaBuiltin kCudaBuiltins[] = {
    {"threadIdx", "thread_position_in_threadgroup", false, false},
    {"blockIdx", "threadgroup_position_in_grid", true, false},
    {"blockDim", "dispatch_threads_per_threadgroup", false, true},
    {"gridDim", "threadgroups_per_grid", true, true},
};

// The value of |b| as CUDA types it (uint3 or dim3), from kjit's uint3 |value|.
std::string cuda_typed(const CudaBuiltin& b, Target target, const std::string& value) {
  if (target == Target::Cuda) {
    return std::string(b.sizes ? "dim3(" : "(") + "::kjit::cuda_uint3(" + value + "))";
  }
  return std::string(b.sizes ? "::kjit::cuda_dialect::dim3(" : "::kjit::cuda_dialect::uint3(") +
         value + ")";
}

// The builtins of kCudaBuiltins that |tokens| use and |target| must supply.
std::vector<const CudaBuiltin*> builtins_used(const KernelSpec& spec,
                                              const std::vector<Token>& tokens, Target target) {
  std::vector<const CudaBuiltin*> used;
  if (spec.dialect != Dialect::Cuda) return used;
  for (const CudaBuiltin& b : kCudaBuiltins) {
    if ((target == Target::Cpu || b.decoded) && has_identifier(tokens, b.name)) used.push_back(&b);
  }
  return used;
}

// The index variables the header reads. Its functions are compiled before the body, which
// declares them as locals, so generate defines them as macros around the header: all but those
// the header declares itself (a member, parameter or variable of that name: "dim3 blockDim",
// "s.gridDim"), which stay its own.
std::vector<const CudaBuiltin*> header_builtins(const KernelSpec& spec, Target target) {
  std::vector<const CudaBuiltin*> read;
  const std::vector<Token>& t = spec.header_tokens;
  for (const CudaBuiltin* b : builtins_used(spec, t, target)) {
    bool declared = false;
    for (size_t i = 0; i < t.size() && !declared; ++i) {
      if (t[i].kind != TokenKind::Identifier || t[i].text != b->name || t[i].in_directive) continue;
      // After a type ("dim3 blockDim") or a member access; not after a keyword that starts an
      // expression ("return blockIdx").
      const Token* before = prev_significant(t, i);
      const bool after_type =
          before && before->kind == TokenKind::Identifier && !before->in_directive &&
          before->text != "return" && before->text != "case" && before->text != "else" &&
          before->text != "do" && before->text != "sizeof" && before->text != "throw";
      declared = after_type || is_member_access(before);
    }
    if (!declared) read.push_back(b);
  }
  return read;
}

}  // namespace

const std::vector<Attribute>& metal_attributes() {
  static const std::vector<Attribute> kAttributes = {
      {"dispatch_quadgroups_per_threadgroup", false, true},
      {"dispatch_simdgroups_per_threadgroup", false, true},
      {"dispatch_threads_per_threadgroup", true, true},
      {"grid_origin", true, true},
      {"grid_size", true, true},
      {"quadgroup_index_in_threadgroup", false, false},
      {"quadgroups_per_threadgroup", false, true},
      {"simdgroup_index_in_threadgroup", false, false},
      {"simdgroups_per_threadgroup", false, true},
      {"thread_execution_width", false, true},
      {"thread_index_in_quadgroup", false, false},
      {"thread_index_in_simdgroup", false, false},
      {"thread_index_in_threadgroup", false, false},
      {"thread_position_in_grid", true, false},
      {"thread_position_in_threadgroup", true, false},
      {"threadgroup_position_in_grid", true, true},
      {"threadgroups_per_grid", true, true},
      {"threads_per_grid", true, true},
      {"threads_per_simdgroup", false, true},
      {"threads_per_threadgroup", true, true},
  };
  return kAttributes;
}

std::string signature(const KernelSpec& spec, const CallSignature& call) {
  const bool metal = spec.dialect == Dialect::Metal;
  std::vector<std::string> params;
  for (size_t i = 0; i < spec.input_names.size(); ++i) {
    const std::string& n = spec.input_names[i];
    auto [dtype, ndim] = call.inputs[i];
    std::string t(type_name(spec, dtype));
    if (ndim == 0) {
      params.push_back(metal ? "const " + t + " " + n : "const ::kjit::by_value<" + t + "> " + n);
      continue;
    }
    params.push_back(metal ? "const device " + t + "* " + n : "const " + t + "* __restrict__ " + n);
    const KernelSpec::InputUse& use = spec.input_uses[i];
    if (use.shape) params.push_back("const kjit_shape " + n + "_shape");
    if (use.strides) params.push_back("const kjit_strides " + n + "_strides");
    if (use.ndim) params.push_back("const int " + n + "_ndim");
  }
  for (size_t i = 0; i < spec.output_names.size(); ++i) {
    std::string t(type_name(spec, call.outputs[i]));
    // CUDA's atomic functions take plain pointers: atomic_outputs changes Metal's outputs only.
    if (spec.atomic_outputs && metal) {
      params.push_back("device atomic<" + t + ">* " + spec.output_names[i]);
    } else {
      params.push_back(metal ? "device " + t + "* " + spec.output_names[i]
                             : t + "* __restrict__ " + spec.output_names[i]);
    }
  }
  std::string out;
  for (size_t i = 0; i < params.size(); ++i) {
    out += (i ? ",\n    " : "    ") + params[i];
  }
  return out;
}

std::string template_declarations(const KernelSpec& spec, const TemplateArgs& args) {
  std::string out;
  for (const auto& [name, value] : args) {
    if (const bool* b = std::get_if<bool>(&value)) {
      out += "  constexpr bool " + name + " = " + (*b ? "true" : "false") + ";\n";
    } else if (const int* i = std::get_if<int>(&value)) {
      out += "  constexpr int " + name + " = " + std::to_string(*i) + ";\n";
    } else {
      out +=
          "  using " + name + " = " + std::string(type_name(spec, std::get<Dtype>(value))) + ";\n";
    }
  }
  return out;
}

std::vector<Param> parameter_layout(const KernelSpec& spec, const CallSignature& call) {
  std::vector<Param> layout;
  for (size_t i = 0; i < spec.input_names.size(); ++i) {
    const int index = static_cast<int>(i);
    auto [dtype, ndim] = call.inputs[i];
    std::string t(type_name(spec, dtype));
    if (ndim == 0) {
      layout.push_back({Param::Kind::Scalar, index,
                        spec.dialect == Dialect::Metal ? t : "::kjit::by_value<" + t + ">"});
      continue;
    }
    layout.push_back({Param::Kind::Input, index, "const " + t + "*"});
    const KernelSpec::InputUse& use = spec.input_uses[i];
    if (use.shape) layout.push_back({Param::Kind::Shape, index, "kjit_shape"});
    if (use.strides) layout.push_back({Param::Kind::Strides, index, "kjit_strides"});
    if (use.ndim) layout.push_back({Param::Kind::Ndim, index, "int"});
  }
  for (size_t o = 0; o < spec.output_names.size(); ++o) {
    std::string t(type_name(spec, call.outputs[o]));
    layout.push_back(
        {Param::Kind::Output, static_cast<int>(o),
         spec.atomic_outputs && spec.dialect == Dialect::Metal ? "atomic<" + t + ">*" : t + "*"});
  }
  return layout;
}

namespace {

// The entry point's call of the kernel function: its parameters, then the thread context.
std::string arguments(const std::vector<Param>& layout) {
  std::string args;
  for (size_t k = 0; k < layout.size(); ++k) args += "kjit_arg" + std::to_string(k) + ", ";
  return args;
}

}  // namespace

std::string cuda_entry_name(unsigned index) {
  return "kjit_cuda_entry_" + std::to_string(cuda_entry_layout(index)) +
         (cuda_entry_full(index) ? "_full" : "");
}

std::string cuda_entry_points(const GeneratedSource& g, unsigned mask) {
  const std::string args = arguments(g.layout);
  Writer w;
  w << "namespace kjit_user {\n";
  for (unsigned index = 0; index < kCudaEntryPoints; ++index) {
    if (!(mask & (1u << index))) continue;
    w << "extern \"C\" __global__ void " << cuda_entry_name(index) << "(\n";
    for (size_t k = 0; k < g.layout.size(); ++k) {
      w << "    " << g.layout[k].type << " kjit_arg" << std::to_string(k) << ",\n";
    }
    const std::string flags = std::to_string(cuda_entry_layout(index)) +
                              (cuda_entry_full(index) ? "u, true" : "u, false");
    w << "    const kjit_cuda_launch kjit_launch) {\n"
         "  const ::kjit::thread_ctx t = ::kjit::make_thread_ctx<"
      << flags << ">(kjit_launch);\n  if (!::kjit::in_grid<" << flags << ">(t)) return;\n  "
      << g.kernel_name << "(" << args << "t);\n}\n\n";
  }
  w << "}  // namespace kjit_user\n";
  return w.str();
}

namespace {

// The names a loop with barriers may use in its header in region mode: the same for every
// thread of a group.
std::vector<std::string> uniform_names(const KernelSpec& spec, const CallSignature& call) {
  std::vector<std::string> names;
  for (const Attribute& a : metal_attributes()) {
    if (a.uniform) names.push_back(a.name);
  }
  for (const CudaBuiltin& b : kCudaBuiltins) {
    for (const Attribute& a : metal_attributes()) {
      if (a.uniform && std::string_view(a.name) == b.attribute) names.push_back(b.name);
    }
  }
  names.push_back("warpSize");
  for (const auto& [name, value] : call.template_args) names.push_back(name);
  for (size_t i = 0; i < spec.input_names.size(); ++i) {
    const std::string& n = spec.input_names[i];
    if (call.inputs[i].second == 0) names.push_back(n);  // a 0-d input: one value
    for (const char* suffix : {"_shape", "_strides", "_ndim"}) names.push_back(n + suffix);
  }
  return names;
}

// The CUDA index variables a kernel's texts use, worked out once per generated source.
struct IndexVariables {
  std::vector<const CudaBuiltin*> body;    // builtins_used of the body
  std::vector<const CudaBuiltin*> header;  // header_builtins
};

// The body's thread attributes and CUDA index variables (|vars|), read from the thread
// context |ctx|.
std::string thread_locals(const KernelSpec& spec, Target target, const IndexVariables& vars,
                          const std::string& ctx, bool sets_current_thread) {
  std::string out;
  for (const std::string& attr : spec.attributes) {
    bool vector = false;
    for (const Attribute& a : metal_attributes()) {
      if (attr == a.name) vector = a.is_vector;
    }
    out += "  const " + std::string(vector ? "::kjit::uint3 " : "unsigned ") + attr + " = " + ctx +
           "." + attr + "();\n";
  }
  // Typed as CUDA types them (on the CPU, the dialect's uint3 and dim3, with CUDA's layout).
  for (const CudaBuiltin* b : vars.body) {
    out += "  const auto " + std::string(b->name) + " = " +
           cuda_typed(*b, target, ctx + "." + b->attribute + "()") + ";\n";
  }
  if (sets_current_thread && target == Target::Cpu &&
      (!vars.header.empty() || has_identifier(spec.source_tokens, "this_grid") ||
       has_identifier(spec.source_tokens, "this_thread_block") ||
       has_identifier(spec.header_tokens, "this_grid") ||
       has_identifier(spec.header_tokens, "this_thread_block"))) {
    out += "  ::kjit::current_thread = &" + ctx + ";\n";
  }
  if (target == Target::Cuda) {
    // Every thread of the group stores the same values (see generate).
    for (const CudaBuiltin* b : vars.header) {
      const std::string var = std::string("kjit_group_") + b->name;
      out += "  { const ::kjit::uint3 v = " + ctx + "." + b->attribute + "(); " + var +
             "[0] = v.x; " + var + "[1] = v.y; " + var + "[2] = v.z; }\n";
    }
  }
  out += "  (void)" + ctx + ";\n";
  return out;
}

// A body in region mode: a function that runs one whole group, each region a loop over the
// group's threads (codegen/regions.h).
void write_regions(Writer& w, const KernelSpec& spec, const CallSignature& call,
                   const RegionPlan& plan, const IndexVariables& vars, const std::string& name,
                   const std::string& params) {
  std::deque<std::string> texts;
  const std::vector<Token> edited = region_tokens(spec, plan, texts);
  // Tokens [begin, end) of |tokens|, the body's own or as regions see them.
  auto user_text = [&](const std::vector<Token>& tokens, size_t begin, size_t end) {
    w << "#line " << std::to_string(tokens[begin].line) << " \"" << kSourceFile << "\"\n";
    w << rewrite(std::vector<Token>(tokens.begin() + static_cast<std::ptrdiff_t>(begin),
                                    tokens.begin() + static_cast<std::ptrdiff_t>(end)),
                 spec.dialect, Target::Cpu, false, spec.shared_memory);
    w.resume_generated();
  };
  w << "static KJIT_INLINE void " << name << "(\n"
    << params << (params.empty() ? "    " : ",\n    ")
    << "const ::kjit::thread_ctx& kjit_group) {\n";
  w << template_declarations(spec, call.template_args);
  // Loop headers read the uniform ones.
  w << thread_locals(spec, Target::Cpu, vars, "kjit_group", false);
  for (const auto& [begin, end] : plan.group_memory) user_text(spec.source_tokens, begin, end);
  for (const RegionPlan::Carried& c : plan.carried) {
    std::string type;
    for (size_t k = c.type_begin; k < c.type_end; ++k) {
      const Token& t = spec.source_tokens[k];
      if (t.kind == TokenKind::Space || t.kind == TokenKind::Comment || t.text == "const" ||
          t.text == "constexpr" || (spec.dialect == Dialect::Metal && t.text == "thread")) {
        continue;
      }
      type += std::string(t.text) + " ";
    }
    if (spec.dialect == Dialect::Metal) type = rewrite(lex(type), spec.dialect, Target::Cpu);
    w << "  " << type << "kjit_carried_" << c.name << "[1024];\n";
  }
  if (plan.returns) {
    w << "  bool kjit_exited[1024];\n"
         "  for (unsigned kjit_i = 0; kjit_i < kjit_group.group_threads(); ++kjit_i) "
         "kjit_exited[kjit_i] = false;\n";
  }
  for (const RegionPlan::Piece& piece : plan.pieces) {
    switch (piece.kind) {
      case RegionPlan::Piece::Kind::Region:
        w << "  ::kjit::for_each_thread(kjit_group, [&](const ::kjit::thread_ctx& kjit_thread, "
             "unsigned kjit_wi) __attribute__((always_inline)) {\n";
        if (plan.returns) w << "  if (kjit_exited[kjit_wi]) return;\n";
        w << thread_locals(spec, Target::Cpu, vars, "kjit_thread", true) << "  (void)kjit_wi;\n";
        user_text(edited, piece.begin, piece.end);
        w << "  });\n";
        break;
      case RegionPlan::Piece::Kind::LoopBegin:
        user_text(edited, piece.begin, piece.end);
        w << "  {\n";
        break;
      case RegionPlan::Piece::Kind::LoopEnd:
        // The group's loop ends when every thread has left the kernel: a loop its threads
        // leave by returning may have no end of its own.
        if (plan.returns) {
          w << "  {\n    bool kjit_running = false;\n"
               "    for (unsigned kjit_i = 0; kjit_i < kjit_group.group_threads(); ++kjit_i) "
               "kjit_running = kjit_running || !kjit_exited[kjit_i];\n"
               "    if (!kjit_running) break;\n  }\n";
        }
        w << "  }\n";
        break;
    }
  }
  w << "}\n\n";
}

}  // namespace

GeneratedSource generate(const KernelSpec& spec, const CallSignature& call, Target target,
                         bool regions) {
  GeneratedSource g;
  g.kernel_name = "custom_kernel_" + spec.name;
  // Bodies with barriers, SIMD-group or warp operations run on the CPU in region mode when
  // their only waits are barriers all threads of a group meet together, else as coroutines.
  // Helpers of the header that wait become coroutines the body awaits.
  WaitingHelpers helpers = target == Target::Cpu
                               ? find_waiting_helpers(spec.header_tokens, spec.dialect)
                               : WaitingHelpers{};
  // The header's names for cooperative_groups: region planning reads the body alone.
  const bool header_names_groups =
      !helpers.cooperative_aliases.empty() || !helpers.cooperative_unqualified.empty();
  // What follows decides how the CPU waits; a GPU kernel needs none of it.
  if (target == Target::Cpu) note_cooperative_groups(spec.source_tokens, helpers);
  const bool matrices =
      target == Target::Cpu && spec.dialect == Dialect::Metal &&
      (uses_simdgroup_matrices(spec.source_tokens) || uses_simdgroup_matrices(spec.header_tokens));
  const bool waits =
      target == Target::Cpu && (matrices || !helpers.names.empty() ||
                                uses_suspending_calls(spec.source_tokens, spec.dialect, &helpers));
  // KJIT_CPU_REGIONS=0 keeps every such body in cooperative mode.
  const char* regions_env = std::getenv("KJIT_CPU_REGIONS");
  const bool regions_allowed = regions && !(regions_env && std::string_view(regions_env) == "0");
  std::optional<RegionPlan> plan;
  if (waits && regions_allowed && helpers.names.empty() && !matrices && !header_names_groups) {
    plan = plan_regions(spec, uniform_names(spec, call), helpers);
  }
  const bool coroutine = waits && !plan;
  if (target == Target::Cpu) {
    check_waits_are_suspendable(spec.source_tokens, spec.dialect, TextOrigin::Source, helpers);
    check_waits_are_suspendable(spec.header_tokens, spec.dialect, TextOrigin::Header, helpers);
    check_header_macros_do_not_wait(spec.header_tokens, spec.source_tokens, spec.dialect, helpers);
  }
  g.regions = plan.has_value();
  Writer w;
  const std::string_view prelude = prelude_for(spec.dialect, target, coroutine);
  w.reserve(prelude.size() + 4 * (spec.source.size() + spec.header.size()) + 16384);
  w << prelude;
  g.user_part = w.size();

  const IndexVariables vars{builtins_used(spec, spec.source_tokens, target),
                            header_builtins(spec, target)};
  w << "namespace kjit_user {\n";
  if (!spec.header.empty()) {
    // The header reads the running thread's index variables: on the CPU through its context,
    // and on the GPU (where threadIdx and blockDim are the hardware's, and a block's own blockIdx
    // and gridDim differ from the body's for grids laid out otherwise) from variables of the
    // group that each of its threads sets to the same values (thread_locals).
    for (const CudaBuiltin* b : vars.header) {
      const std::string var = std::string("kjit_group_") + b->name;
      if (target == Target::Cpu) {
        w << "#define " << b->name << " ("
          << cuda_typed(*b, target, std::string("::kjit::current_thread->") + b->attribute + "()")
          << ")\n";
      } else {
        w << "__shared__ unsigned " << var << "[3];\n#define " << b->name << " ("
          << cuda_typed(*b, target, "::kjit::uint3(" + var + "[0], " + var + "[1], " + var + "[2])")
          << ")\n";
      }
    }
    w << "#line 1 \"" << kHeaderFile << "\"\n";
    w << rewrite_header(spec.header_tokens, spec.dialect, target, helpers);
    w.resume_generated();
    for (const CudaBuiltin* b : vars.header) w << "#undef " << b->name << "\n";
  }

  std::string params = signature(spec, call);
  if (spec.dialect == Dialect::Metal) params = rewrite(lex(params), spec.dialect, target);
  if (plan) {
    write_regions(w, spec, call, *plan, vars, g.kernel_name, params);
  } else {
    // The kernel body as an always-inlined function: early returns end one thread, and the
    // thread loop around the call stays vectorisable.
    w << (coroutine ? "static ::kjit::coop::task " : "static KJIT_INLINE void ") << g.kernel_name
      << "(\n"
      << params;
    w << (params.empty() ? "    " : ",\n    ")
      << (coroutine ? "const ::kjit::thread_ctx kjit_thread) {\n"
                    : "const ::kjit::thread_ctx& kjit_thread) {\n");
    w << template_declarations(spec, call.template_args);
    // Cooperative mode sets the current thread for each thread it resumes.
    w << thread_locals(spec, target, vars, "kjit_thread", !coroutine);
    w << "#line 1 \"" << kSourceFile << "\"\n";
    w << rewrite(spec.source_tokens, spec.dialect, target, coroutine, spec.shared_memory, &helpers);
    w.resume_generated();
    if (coroutine) w << "  co_return;\n";
    w << "}\n\n";
  }

  g.layout = parameter_layout(spec, call);
  const std::vector<Param>& layout = g.layout;
  if (target == Target::Cpu) {
    const std::string args = arguments(layout);
    // The entry point the library calls with a range of groups. Arguments are unpacked once,
    // outside the thread loop, into locals the loop captures by value.
    w << "extern \"C\" __attribute__((visibility(\"default\"))) void " << kCpuEntry
      << "(\n"
         "    const kjit_cpu_launch* kjit_launch, unsigned long long kjit_first,\n"
         "    unsigned long long kjit_end) {\n";
    for (size_t k = 0; k < layout.size(); ++k) {
      const Param& p = layout[k];
      const std::string i = std::to_string(p.index);
      const std::string at = std::to_string(p.index * 10);
      std::string init;
      switch (p.kind) {
        case Param::Kind::Input:
          init = "static_cast<" + p.type + ">(kjit_launch->args[" + i + "])";
          break;
        case Param::Kind::Scalar:
          init = "{*static_cast<const " + std::string(type_name(spec, call.inputs[p.index].first)) +
                 "*>(kjit_launch->args[" + i + "])}";
          break;
        case Param::Kind::Shape:
          init = "{kjit_launch->shapes + " + at + "}";
          break;
        case Param::Kind::Strides:
          init = "{kjit_launch->strides + " + at + "}";
          break;
        case Param::Kind::Ndim:
          init = "kjit_launch->ndims[" + i + "]";
          break;
        case Param::Kind::Output:
          init = "static_cast<" + p.type + ">(kjit_launch->args[" +
                 std::to_string(spec.input_names.size() + p.index) + "])";
          break;
      }
      w << "  " << p.type << " const kjit_arg" << std::to_string(k) << " = " << init << ";\n";
    }
    if (coroutine) {
      w << "  ::kjit::coop::run_groups(kjit_launch, kjit_first, kjit_end,\n"
           "      [=](const ::kjit::thread_ctx& t) {\n        return "
        << g.kernel_name << "(" << args << "t);\n      });\n}\n\n}  // namespace kjit_user\n";
    } else if (plan) {
      w << "  ::kjit::run_whole_groups(kjit_launch, kjit_first, kjit_end,\n"
           "      [=](const ::kjit::thread_ctx& kjit_group) {\n        "
        << g.kernel_name << "(" << args
        << "kjit_group);\n      });\n}\n\n}  // namespace kjit_user\n";
    } else {
      w << "  ::kjit::run_groups_loop(kjit_launch, kjit_first, kjit_end,\n"
           "      [=](const ::kjit::thread_ctx& t) __attribute__((always_inline)) {\n"
           "        "
        << g.kernel_name << "(" << args << "t);\n      });\n}\n\n}  // namespace kjit_user\n";
    }
  } else {
    // The entry points are added per launch layout (cuda_entry_points).
    w << "}  // namespace kjit_user\n";
  }
  g.text = std::move(w.str());
  return g;
}

}  // namespace kjit::codegen
