#include "codegen/source.h"

#include <kjit/errors.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <string_view>

#include "codegen/derived_pointers.h"
#include "codegen/emit.h"
#include "codegen/group_memory.h"
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

constexpr const char* kDebugReport = "kjit_debug_report";

// The name of array |k| of a debug build: inputs, then outputs, then |groups|.
const std::string& checked_name(const KernelSpec& spec, const std::vector<GroupVariable>& groups,
                                size_t k) {
  const size_t n_in = spec.input_names.size(), n_out = spec.output_names.size();
  return k < n_in           ? spec.input_names[k]
         : k < n_in + n_out ? spec.output_names[k - n_in]
                            : groups[k - n_in - n_out].name;
}

// Whether |t| declares |name| anywhere but at token |except|.
bool declared_in(const std::vector<Token>& t, std::string_view name, size_t except) {
  for (size_t i = 0; i < t.size(); ++i) {
    if (i != except && t[i].kind == TokenKind::Identifier && t[i].text == name &&
        declares_name(t, i)) {
      return true;
    }
  }
  return false;
}

// The arrays (by number: inputs, outputs, then group memory) whose name the body also declares
// ("float* out" in a lambda's parameters; a group variable's own declaration aside): each use
// may mean either, so those stay unchecked.
std::vector<size_t> redeclared_arrays(const KernelSpec& spec,
                                      const std::vector<GroupVariable>& groups) {
  const std::vector<Token>& t = spec.source_tokens;
  const size_t n_arrays = spec.input_names.size() + spec.output_names.size();
  std::vector<size_t> found;
  for (size_t k = 0; k < n_arrays + groups.size(); ++k) {
    const std::string& name = checked_name(spec, groups, k);
    const size_t own =
        k < n_arrays || groups[k - n_arrays].in_header ? t.size() : groups[k - n_arrays].name_at;
    if (declared_in(t, name, own)) found.push_back(k);
  }
  return found;
}

// The inputs and outputs (by number) that the body moves ("out++", "inp += k", "out = p"):
// their name no longer points where their bounds start, so those stay unchecked.
std::vector<size_t> moved_arrays(const KernelSpec& spec, const std::vector<GroupVariable>& groups) {
  const std::vector<Token>& t = spec.source_tokens;
  const size_t n_arrays = spec.input_names.size() + spec.output_names.size();
  std::vector<size_t> found;
  for (size_t k = 0; k < n_arrays; ++k) {
    const std::string& name = checked_name(spec, groups, k);
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].kind != TokenKind::Identifier || t[i].text != name) continue;
      const Token* before = prev_significant(t, i);
      const Token* after = next_significant(t, i);
      if (is_member_access(before) || (before && before->text == "::")) continue;
      const bool stepped = (before && is_one_of(before->text, {"++", "--"})) ||
                           (after && is_one_of(after->text, {"++", "--"}));
      const bool assigned =
          after && is_one_of(after->text, {"=", "+=", "-="}) && !after_prefix_operator(t, i, "*");
      if (stepped || assigned) {
        found.push_back(k);
        break;
      }
    }
  }
  return found;
}

// An input's shape or strides that a debug build checks against the input's dimensions: its
// name, its number in reports (after the inputs, outputs and group-memory arrays, two to an
// input, the shape first) and the input's dimensions. A name the body declares again stays
// unchecked.
struct CheckedDims {
  std::string name;
  size_t number;
  int ndim;
};
std::vector<CheckedDims> checked_dims(const KernelSpec& spec, const CallSignature& call,
                                      size_t first_number) {
  const std::vector<Token>& t = spec.source_tokens;
  std::vector<CheckedDims> found;
  for (size_t k = 0; k < spec.input_names.size(); ++k) {
    const KernelSpec::InputUse& use = spec.input_uses[k];
    const int ndim = call.inputs[k].second;
    for (const bool strides : {false, true}) {
      if (ndim == 0 || !(strides ? use.strides : use.shape)) continue;
      std::string name = spec.input_names[k] + (strides ? "_strides" : "_shape");
      if (!declared_in(t, name, t.size())) {
        found.push_back({std::move(name), first_number + 2 * k + strides, ndim});
      }
    }
  }
  return found;
}

// The type of an input's shape or strides parameter: in the CUDA dialect MLX's Shape and
// Strides (prelude/dialect/cuda/mlx_utils.h), in the Metal dialect the target's (which MLX
// passes as pointers).
std::string dims_type(const KernelSpec& spec, Param::Kind kind) {
  const bool cuda = spec.dialect == Dialect::Cuda;
  if (kind == Param::Kind::Shape) return cuda ? "kjit_cuda_shape" : "kjit_shape";
  return cuda ? "kjit_cuda_strides" : "kjit_strides";
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
    params.push_back(metal ? "const device " + t + "* " + name
                           : "const " + t + "* __restrict__ " + name);
    const KernelSpec::InputUse& use = spec.input_uses[i];
    if (use.shape) {
      params.push_back("const " + dims_type(spec, Param::Kind::Shape) + " " + name + "_shape");
    }
    if (use.strides) {
      params.push_back("const " + dims_type(spec, Param::Kind::Strides) + " " + name + "_strides");
    }
    if (use.ndim) params.push_back("const int " + name + "_ndim");
  }
  for (size_t i = 0; i < spec.output_names.size(); ++i) {
    std::string t(type_name(spec, call.outputs[i]));
    const std::string& n = spec.output_names[i];
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
    if (use.shape) {
      layout.push_back({Param::Kind::Shape, index, dims_type(spec, Param::Kind::Shape)});
    }
    if (use.strides) {
      layout.push_back({Param::Kind::Strides, index, dims_type(spec, Param::Kind::Strides)});
    }
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
  const size_t n_arrays = n_in + spec.output_names.size();
  const std::vector<GroupVariable> groups = group_variables(spec);
  // The array a name is, by its number: inputs, outputs, then group memory; 0-d inputs are
  // values.
  std::vector<bool> unchecked(n_arrays + groups.size());
  for (size_t k : redeclared_arrays(spec, groups)) unchecked[k] = true;
  for (size_t k : moved_arrays(spec, groups)) unchecked[k] = true;
  for (size_t k = 0; k < n_in; ++k) unchecked[k] = unchecked[k] || call.inputs[k].second == 0;
  auto array_named = [&](std::string_view name) -> std::optional<size_t> {
    for (size_t k = 0; k < unchecked.size(); ++k) {
      if (!unchecked[k] && checked_name(spec, groups, k) == name) return k;
    }
    return std::nullopt;
  };
  // A group variable's declaration ("float tile[32]") is no access.
  std::vector<bool> declaring(tokens.size());
  for (const GroupVariable& g : groups) {
    if (!g.in_header) declaring[g.name_at] = true;
  }
  const auto derived = derived_pointers(tokens, [&](std::string_view name) {
    const std::optional<size_t> k = array_named(name);
    return k && *k < n_arrays ? k : std::nullopt;
  });
  // Pointers made in place from an array or a derived pointer, cast or moved.
  const std::vector<PointerInPlace> in_place =
      pointers_made_in_place(tokens, [&](std::string_view name) {
        if (const auto pointer = derived.find(name); pointer != derived.end()) {
          return std::optional<size_t>(pointer->second);
        }
        const std::optional<size_t> k = array_named(name);
        return k && *k < n_arrays ? k : std::nullopt;
      });
  // Only the name's element accesses become checked: "name[...]" and "*name". Every other use
  // stays the array's pointer, for whatever the body does with a pointer.
  auto accessed = [&](size_t i) { return accessed_as_element(tokens, i, i); };
  const std::vector<CheckedDims> dims = checked_dims(spec, call, n_arrays + groups.size());
  const std::string context = std::string(", kjit_thread, ") + kDebugReport + "))";
  for (size_t i = 0; i < tokens.size(); ++i) {
    Token& t = tokens[i];
    if (t.kind != TokenKind::Identifier || t.in_directive) continue;
    const Token* before = prev_significant(tokens, i);
    if (is_member_access(before) || (before && before->text == "::")) continue;
    if (const auto d = std::find_if(dims.begin(), dims.end(),
                                    [&](const CheckedDims& c) { return c.name == t.text; });
        d != dims.end()) {
      const size_t after = index_after(tokens, i);
      if (after == tokens.size() || tokens[after].text != "[") continue;
      t.text = texts.emplace_back("(::kjit::debug::checked_dims_of(" + d->name + ", " +
                                  std::to_string(d->ndim) + ", " + std::to_string(d->number) +
                                  ", " + std::to_string(t.line) + context);
      continue;
    }
    if (const auto pointer = derived.find(t.text); pointer != derived.end()) {
      if (declares_name(tokens, i)) continue;  // "float s, *p = out;" declares p
      // "*p++" accesses where p pointed before the step, "*++p" where it points after: the
      // view is of the step's value (the step's own token dropped).
      std::string moved(t.text);
      const size_t step = before ? index_before(tokens, i) : tokens.size();
      if (step != tokens.size() && is_one_of(tokens[step].text, {"++", "--"}) &&
          after_prefix_operator(tokens, step, "*")) {
        moved.insert(0, tokens[step].text);
        tokens[step].kind = TokenKind::Space;
        tokens[step].text = {};
      } else if (!accessed(i)) {
        continue;
      } else if (const size_t after = index_after(tokens, i);
                 after != tokens.size() && is_one_of(tokens[after].text, {"++", "--"})) {
        moved += tokens[after].text;
        tokens[after].kind = TokenKind::Space;
        tokens[after].text = {};
      }
      const size_t array = pointer->second;
      t.text = texts.emplace_back("(::kjit::debug::derived_view_of(" + moved + ", " +
                                  checked_name(spec, groups, array) + ", " + std::to_string(array) +
                                  ", " + std::to_string(t.line) + context);
      continue;
    }
    const std::optional<size_t> k = array_named(t.text);
    if (!k || declaring[i]) continue;
    // A group variable of one value is accessed by each use of its name ("decltype(total)"
    // declares a name as far as redeclared_arrays can tell).
    const bool scalar = *k >= n_arrays && !groups[*k - n_arrays].array;
    if (!scalar && !accessed(i)) continue;
    const std::string name(t.text), number = std::to_string(*k), line = std::to_string(t.line);
    if (*k < n_arrays) {
      t.text = texts.emplace_back("(::kjit::debug::view_of(" + name + ", " + number + ", " + line +
                                  context);
      continue;
    }
    // Accesses whose address the body takes (atomics, pointers) are checked, not recorded.
    const std::string tracked = after_prefix_operator(tokens, i, "&") ? ", false" : ", true";
    if (scalar) {
      t.text = texts.emplace_back("(::kjit::debug::group_variable_of(" + name + ", " + number +
                                  ", " + line + tracked + context);
    } else if (groups[*k - n_arrays].dynamic) {
      t.text = texts.emplace_back("(::kjit::debug::dynamic_group_view_of(" + name + ", " +
                                  std::to_string(spec.shared_memory) + ", " + number + ", " + line +
                                  tracked + context);
    } else {
      t.text = texts.emplace_back("(::kjit::debug::group_view_of(" + name + ", " + number + ", " +
                                  line + tracked + context);
    }
  }
  // Last, as the names inside keep their own checks. A cast's parentheses change together,
  // so that the brackets left still pair; the parentheses added around an operand join the
  // texts of its first and last tokens, which closing() and opening() still read as the
  // brackets they were.
  for (const PointerInPlace& p : in_place) {
    Token& at = tokens[p.at];
    const std::string base = checked_name(spec, groups, p.array);
    const std::string checked = "::kjit::debug::cast_of(" + base + ", " + std::to_string(p.array) +
                                ", " + std::to_string(at.line) + ", kjit_thread, " + kDebugReport +
                                ").reinterpret";
    if (p.how == PointerInPlace::How::Cast) {
      // The cast's parentheses become the call's template brackets: no longer brackets that
      // pair for the scans that follow.
      Token& close = tokens[p.close];
      at.text = texts.emplace_back(checked + "<");
      close.text = ">";
      at.partner = kNoPartner;
      close.partner = -kNoPartner;
      if (p.operand != tokens.size()) {
        Token& first = tokens[p.operand];
        first.text = texts.emplace_back(std::string("(").append(first.text));
        Token& last = tokens[p.operand_last];
        last.text = texts.emplace_back(std::string(last.text).append(")"));
      }
    } else if (p.how == PointerInPlace::How::Reinterpret) {
      at.text = texts.emplace_back(checked);
    } else {
      // Moved, or given to an atomic operation as the address of the element it reaches.
      const bool atomic = p.how == PointerInPlace::How::Atomic;
      at.text = texts.emplace_back((atomic ? "&*(" : "") + checked + "<decltype(" +
                                   std::string(at.text) + ")>(" + std::string(at.text) + ")");
      if (atomic) {
        Token& last = tokens[p.operand_last];
        last.text = texts.emplace_back(std::string(last.text).append(")"));
      }
    }
  }
  // A lambda that names its captures ("[inp](uint j) { ... }") captures what its checked
  // accesses use too. One without captures ("[]") sees no array of the body's to check.
  for (size_t body = 0; body < tokens.size(); ++body) {
    if (tokens[body].text != "{" || tokens[body].in_directive) continue;
    const size_t close = lambda_captures_end(tokens, body);
    const size_t open = close == tokens.size() ? close : opening(tokens, close);
    const size_t end = closing(tokens, body);
    if (open == tokens.size() || end == tokens.size()) continue;
    const size_t first = index_after(tokens, open);
    const size_t second = index_after(tokens, first);
    const bool by_default =
        tokens[first].text == "=" ||
        (tokens[first].text == "&" && is_one_of(tokens[second].text, {",", "]"}));
    const bool checks = std::any_of(
        tokens.begin() + static_cast<std::ptrdiff_t>(body),
        tokens.begin() + static_cast<std::ptrdiff_t>(end),
        [](const Token& t) { return t.text.find("kjit_thread") != std::string_view::npos; });
    // The text goes before the first capture ("[inp, v = f(x)]", "[&i, inp]"): the last
    // capture's last token may close a bracket, whose pairing the scans that follow rely on, or
    // be a Metal literal, which is respelled later.
    if (first == close || by_default || !checks) continue;
    tokens[first].text = texts.emplace_back(
        std::string("&kjit_thread, ").append(kDebugReport).append(", ").append(tokens[first].text));
  }
  return tokens;
}

void warn_of_unchecked_arrays(const KernelSpec& spec) {
  if (!spec.compile_options.debug) return;
  const size_t n_in = spec.input_names.size();
  const size_t n_arrays = n_in + spec.output_names.size();
  const std::vector<GroupVariable> groups = group_variables(spec);
  for (size_t k : redeclared_arrays(spec, groups)) {
    const std::string& name = checked_name(spec, groups, k);
    const std::string what = k < n_in ? "input"
                             : k < n_arrays
                                 ? "output"
                                 : group_variable_kind(spec.dialect, groups[k - n_arrays].array);
    warn(prefix_named(spec) + "the debug checks leave " + what + " '" + name +
         "' unchecked: the body declares another '" + name + "'");
  }
  for (size_t k : moved_arrays(spec, groups)) {
    const std::string& name = checked_name(spec, groups, k);
    warn(prefix_named(spec) + "the debug checks leave " + (k < n_in ? "input" : "output") + " '" +
         name + "' unchecked: the body moves '" + name +
         "' away from the array's start (declare a pointer to step instead)");
  }
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
                       CpuMode cpu_mode, const IndexVariables& vars,
                       const std::string& header_defines, const WaitingHelpers& helpers) {
  g.kernel_name = kernel_symbol(spec.name);
  const std::string_view prelude = prelude_for(spec.dialect, target, cpu_mode);
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
  warn_of_unchecked_arrays(spec);
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
