#include "codegen/source.h"

#include <kjit/errors.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <string_view>

#include "codegen/emit.h"
#include "codegen/prelude.h"
#include "codegen/token_scan.h"
#include "support/warning.h"

namespace kjit::codegen {
namespace {

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

// A debug build's parameter for array |name|: the body's name becomes a view of it
// (debug_view_tokens).
std::string debug_array_name(const std::string& name) { return "kjit_debug_" + name; }

constexpr const char* kDebugReport = "kjit_debug_report";

// The arrays (by number: inputs, then outputs) whose name the body also declares ("int a" in a
// lambda's parameters): each use may mean either, so those stay unchecked.
std::vector<size_t> redeclared_arrays(const KernelSpec& spec) {
  static constexpr std::string_view kExpressionStarts[] = {
      "return",   "case", "else",   "do",   "sizeof",   "throw",   "co_return", "co_yield",
      "co_await", "new",  "delete", "goto", "typename", "alignof", "decltype"};
  const std::vector<Token>& t = spec.source_tokens;
  const size_t n_in = spec.input_names.size();
  std::vector<size_t> found;
  for (size_t k = 0; k < n_in + spec.output_names.size(); ++k) {
    const std::string& name = k < n_in ? spec.input_names[k] : spec.output_names[k - n_in];
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].kind != TokenKind::Identifier || t[i].in_directive || t[i].text != name) continue;
      const Token* before = prev_significant(t, i);
      if (!before || before->kind != TokenKind::Identifier || before->in_directive ||
          std::find(std::begin(kExpressionStarts), std::end(kExpressionStarts), before->text) !=
              std::end(kExpressionStarts)) {
        continue;
      }
      found.push_back(k);
      break;
    }
  }
  return found;
}

}  // namespace

std::string_view type_name(const KernelSpec& spec, Dtype dtype) {
  return spec.dialect == Dialect::Metal ? msl_type_name(dtype) : cuda_type_name(dtype);
}

std::string cuda_typed(const CudaBuiltin& b, Target target, const std::string& value) {
  if (target == Target::Cuda) {
    return std::string(b.sizes ? "dim3(" : "(") + "::kjit::cuda_uint3(" + value + "))";
  }
  return std::string(b.sizes ? "::kjit::cuda_dialect::dim3(" : "::kjit::cuda_dialect::uint3(") +
         value + ")";
}

IndexVariables index_variables(const KernelSpec& spec, Target target) {
  return {builtins_used(spec, spec.source_tokens, target), header_builtins(spec, target)};
}

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
  const bool debug = spec.compile_options.debug;
  std::vector<std::string> params;
  for (size_t i = 0; i < spec.input_names.size(); ++i) {
    const std::string& name = spec.input_names[i];
    auto [dtype, ndim] = call.inputs[i];
    std::string t(type_name(spec, dtype));
    if (ndim == 0) {
      params.push_back(metal ? "const " + t + " " + name
                             : "const ::kjit::by_value<" + t + "> " + name);
      continue;
    }
    const std::string n = debug ? debug_array_name(name) : name;
    params.push_back(metal ? "const device " + t + "* " + n : "const " + t + "* __restrict__ " + n);
    const KernelSpec::InputUse& use = spec.input_uses[i];
    if (use.shape) params.push_back("const kjit_shape " + name + "_shape");
    if (use.strides) params.push_back("const kjit_strides " + name + "_strides");
    if (use.ndim) params.push_back("const int " + name + "_ndim");
  }
  for (size_t i = 0; i < spec.output_names.size(); ++i) {
    std::string t(type_name(spec, call.outputs[i]));
    const std::string n = debug ? debug_array_name(spec.output_names[i]) : spec.output_names[i];
    // CUDA's atomic functions take plain pointers: atomic_outputs changes Metal's outputs only.
    if (spec.atomic_outputs && metal) {
      params.push_back("device atomic<" + t + ">* " + n);
    } else {
      params.push_back(metal ? "device " + t + "* " + n : t + "* __restrict__ " + n);
    }
  }
  if (debug) params.push_back(std::string("::kjit::debug::report* ") + kDebugReport);
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
  // A debug build's report comes after the outputs, as one more output.
  if (spec.compile_options.debug) {
    layout.push_back({Param::Kind::Output, static_cast<int>(spec.output_names.size()),
                      "::kjit::debug::report*"});
  }
  return layout;
}

std::vector<Token> debug_view_tokens(const KernelSpec& spec, const CallSignature& call,
                                     std::vector<Token> tokens, std::deque<std::string>& texts) {
  const size_t n_in = spec.input_names.size();
  // The array each name is, by its number: inputs first, then outputs; 0-d inputs are values.
  auto name_of = [&](size_t k) -> const std::string& {
    return k < n_in ? spec.input_names[k] : spec.output_names[k - n_in];
  };
  std::vector<bool> declared(n_in + spec.output_names.size());
  for (size_t k : redeclared_arrays(spec)) declared[k] = true;
  auto array_named = [&](std::string_view name) -> std::optional<size_t> {
    for (size_t k = 0; k < declared.size(); ++k) {
      if (name_of(k) == name && !declared[k] && (k >= n_in || call.inputs[k].second != 0)) {
        return k;
      }
    }
    return std::nullopt;
  };
  // reinterpret_cast<T*>(name) cannot take a view: it gets the array's pointer, unchecked.
  auto cast_operand = [&](size_t i) {
    const Token* open = prev_significant(tokens, i);
    const Token* after = next_significant(tokens, i);
    if (!open || open->text != "(" || !after || after->text != ")") return false;
    size_t k = static_cast<size_t>(open - tokens.data());
    const Token* close = prev_significant(tokens, k);
    if (!close || close->text != ">") return false;
    k = static_cast<size_t>(close - tokens.data());
    for (int depth = 0; k-- > 0;) {
      if (tokens[k].text == ">" || tokens[k].text == ">>")
        depth += static_cast<int>(tokens[k].text.size());
      if (tokens[k].text == "<" && depth-- == 0) {
        const Token* cast = prev_significant(tokens, k);
        return cast && cast->text == "reinterpret_cast";
      }
    }
    return false;
  };
  for (size_t i = 0; i < tokens.size(); ++i) {
    Token& t = tokens[i];
    if (t.kind != TokenKind::Identifier || t.in_directive) continue;
    const std::optional<size_t> k = array_named(t.text);
    const Token* before = prev_significant(tokens, i);
    if (!k || is_member_access(before) || (before && before->text == "::")) continue;
    const std::string raw = debug_array_name(std::string(t.text));
    if (cast_operand(i)) {
      t.text = texts.emplace_back(raw);
      continue;
    }
    t.text =
        texts.emplace_back("(::kjit::debug::view_of(" + raw + ", " + std::to_string(*k) + ", " +
                           std::to_string(t.line) + ", kjit_thread, " + kDebugReport + "))");
  }
  return tokens;
}

std::string debug_aliases(const KernelSpec& spec, const CallSignature& call) {
  if (!spec.compile_options.debug) return "";
  const size_t n_in = spec.input_names.size();
  std::string out;
  for (size_t k : redeclared_arrays(spec)) {
    if (k < n_in && call.inputs[k].second == 0) continue;  // a value, named as it is
    const std::string& name = k < n_in ? spec.input_names[k] : spec.output_names[k - n_in];
    warn(prefix_named(spec) + "the debug checks leave " + (k < n_in ? "input" : "output") + " '" +
         name + "' unchecked: the body declares another '" + name + "'");
    out += "  auto* const " + name + " = " + debug_array_name(name) + ";\n";
  }
  return out;
}

std::string arguments(const std::vector<Param>& layout) {
  std::string args;
  for (size_t k = 0; k < layout.size(); ++k) args += "kjit_arg" + std::to_string(k) + ", ";
  return args;
}

std::string thread_locals(const KernelSpec& spec, Target target, const IndexVariables& vars,
                          const std::string& ctx, const std::string& target_locals) {
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
  out += target_locals;
  out += "  (void)" + ctx + ";\n";
  return out;
}

void write_common_part(Writer& w, GeneratedSource& g, const KernelSpec& spec, Target target,
                       bool cooperative, const IndexVariables& vars,
                       const std::string& header_defines, const WaitingHelpers& helpers) {
  g.kernel_name = kernel_symbol(spec.name);
  const std::string_view prelude = prelude_for(spec.dialect, target, cooperative);
  w.reserve(prelude.size() + 4 * (spec.source.size() + spec.header.size()) + 16384);
  w << prelude;
  g.user_part = w.size();
  w << "namespace kjit_user {\n";
  if (spec.header.empty()) return;
  w << header_defines;
  w << "#line 1 \"" << kHeaderFile << "\"\n";
  w << rewrite_header(spec.header_tokens, spec.dialect, target, helpers);
  w.resume_generated();
  for (const CudaBuiltin* b : vars.header) w << "#undef " << b->name << "\n";
}

std::string kernel_parameters(const KernelSpec& spec, const CallSignature& call, Target target) {
  const std::string params = signature(spec, call);
  return spec.dialect == Dialect::Metal ? rewrite(lex(params), spec.dialect, target) : params;
}

void write_kernel_function(Writer& w, const GeneratedSource& g, const KernelSpec& spec,
                           const CallSignature& call, Target target, const std::string& params,
                           const std::string& locals, bool coroutine,
                           const WaitingHelpers& helpers) {
  w << (coroutine ? "static ::kjit::coop::task " : "static KJIT_INLINE void ") << g.kernel_name
    << "(\n"
    << params;
  w << (params.empty() ? "    " : ",\n    ")
    << (coroutine ? "const ::kjit::thread_ctx kjit_thread) {\n"
                  : "const ::kjit::thread_ctx& kjit_thread) {\n");
  w << template_declarations(spec, call.template_args);
  w << locals;
  w << debug_aliases(spec, call);
  w << "#line 1 \"" << kSourceFile << "\"\n";
  std::deque<std::string> texts;
  w << rewrite(spec.compile_options.debug ? debug_view_tokens(spec, call, spec.source_tokens, texts)
                                          : spec.source_tokens,
               spec.dialect, target, coroutine, spec.shared_memory, &helpers);
  w.resume_generated();
  if (coroutine) w << "  co_return;\n";
  w << "}\n\n";
}

GeneratedSource generate(const KernelSpec& spec, const CallSignature& call, Target target) {
  if (target == Target::Cuda) return emit_cuda_source(spec, call);
  return emit_cpu_source(spec, call, choose_cpu_mode(spec, call));
}

GeneratedSource generate(const KernelSpec& spec, const CallSignature& call,
                         const CpuModeChoice& mode) {
  return emit_cpu_source(spec, call, mode);
}

}  // namespace kjit::codegen
