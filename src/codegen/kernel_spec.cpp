#include "codegen/kernel_spec.h"

#include <kjit/errors.h>

#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>
#include <unordered_set>

#include "codegen/prelude.h"
#include "codegen/source.h"
#include "support/warning.h"

namespace kjit {
namespace {

// Names a body sees already: a parameter named so would be hidden or clash.
bool is_reserved_name(const std::string& n) {
  for (const codegen::Attribute& a : codegen::metal_attributes()) {
    if (n == a.name) return true;
  }
  static const std::set<std::string> kOthers = {
      "device",    "constant",    "thread",      "threadgroup", "threadgroup_imageblock",
      "ray_data",  "object_data", "kernel",      "vertex",      "fragment",
      "threadIdx", "blockIdx",    "blockDim",    "gridDim",     "uint",
      "ushort",    "uchar",       "ulong",       "half",        "bfloat",
      "float16_t", "bfloat16_t",  "complex64_t", "metal",       "cooperative_groups",
      "cg",        "int8_t",      "int16_t",     "int32_t",     "int64_t",
      "uint8_t",   "uint16_t",    "uint32_t",    "uint64_t",    "size_t",
      "WARP_SIZE", "MAX_NDIM"};
  return kOthers.count(n) > 0;
}

// Whether |n| is a macro that kjit's headers define for a kernel of |dialect| (INFINITY,
// M_PI_F...): a parameter of that name would be replaced by its value.
bool is_prelude_macro(const std::string& n, Dialect dialect) {
  static const auto& macros = *new std::array<std::set<std::string, std::less<>>, 2>([] {
    std::array<std::set<std::string, std::less<>>, 2> found;
    for (Dialect d : {Dialect::Metal, Dialect::Cuda}) {
      for (codegen::Target target : {codegen::Target::Cpu, codegen::Target::Cuda}) {
        const std::string_view text = codegen::prelude_for(d, target, codegen::CpuMode::Coroutine);
        constexpr std::string_view kDefine = "#define ";
        for (size_t at = text.find(kDefine); at != std::string_view::npos;
             at = text.find(kDefine, at + 1)) {
          const size_t end = codegen::identifier_end(text, at + kDefine.size());
          found[static_cast<int>(d)].emplace(
              text.substr(at + kDefine.size(), end - at - kDefine.size()));
        }
      }
    }
    return found;
  }());
  return macros[static_cast<int>(dialect)].count(n) > 0;
}

// The generated source names the kernel custom_kernel_<name>, as MLX does, so a name may be
// anything that makes that an identifier: 1D_conv is a good name. An empty name or a keyword
// reads as a mistake in every message about the kernel and stays refused.
void check_kernel_name(const std::string& p, const std::string& name) {
  const std::string bad = p + "name: '" + name + "' is not a valid identifier";
  if (name.empty()) throw ValueError(bad + ": a kernel name cannot be empty");
  if (!codegen::is_identifier(kernel_symbol(name))) {
    throw ValueError(bad + ": a kernel name has only ASCII letters, digits and underscores");
  }
  if (codegen::is_keyword(name)) throw ValueError(bad + ": it is a C++ keyword");
}

// KJIT_DEBUG=1 builds every kernel with the debug checks (read once per process).
bool debug_from_environment() {
  static const bool on = [] {
    const char* value = std::getenv("KJIT_DEBUG");
    if (!value || !*value || std::strcmp(value, "0") == 0) return false;
    if (std::strcmp(value, "1") == 0) return true;
    warn(std::string("KJIT_DEBUG: expected 0 or 1, got '") + value +
         "'; the debug checks stay off");
    return false;
  }();
  return on;
}

}  // namespace

std::string input_attribute_named(const std::vector<std::string>& inputs, const std::string& name) {
  for (const std::string& input : inputs) {
    for (const char* attribute : {"shape", "strides", "ndim"}) {
      if (name.size() == input.size() + 1 + std::strlen(attribute) && name.starts_with(input) &&
          name[input.size()] == '_' && name.ends_with(attribute)) {
        return "input '" + input + "''s " + attribute;
      }
    }
  }
  return {};
}

void check_usable_name(const std::string& where, const std::string& n, Dialect dialect) {
  if (!codegen::is_identifier(n)) {
    throw ValueError(where + ": '" + n + "' is not a valid identifier");
  }
  if (n.rfind("kjit_", 0) == 0) {
    throw ValueError(where + ": '" + n + "' uses the reserved prefix 'kjit_'");
  }
  if (n.rfind("__", 0) == 0 || (n.size() > 1 && n[0] == '_' && std::isupper(n[1]))) {
    throw ValueError(where + ": '" + n +
                     "' is reserved to the compiler (names starting with __, or _ and a "
                     "capital letter)");
  }
  if (is_prelude_macro(n, dialect)) {
    throw ValueError(where + ": '" + n + "' is a macro kernel bodies already have; choose another");
  }
  if (is_reserved_name(n)) {
    throw ValueError(where + ": '" + n +
                     "' is a name kernel bodies already have (a thread attribute, index "
                     "variable or type); choose another");
  }
}

std::shared_ptr<const KernelSpec> make_spec(Dialect dialect, const std::string& name,
                                            const std::vector<std::string>& input_names,
                                            const std::vector<std::string>& output_names,
                                            const std::string& source, const std::string& header,
                                            bool ensure_row_contiguous, bool atomic_outputs,
                                            int shared_memory, CompileOptions options) {
  auto spec = std::make_shared<KernelSpec>();
  spec->dialect = dialect;
  const std::string p = prefix(*spec);
  check_kernel_name(p, name);
  std::set<std::string> seen;
  for (auto [list, param] :
       {std::pair{&input_names, "input_names"}, std::pair{&output_names, "output_names"}}) {
    for (const std::string& n : *list) {
      check_usable_name(p + param, n, dialect);
      if (!seen.insert(n).second) {
        throw ValueError(p + param + ": the name '" + n +
                         "' is used more than once across input_names and output_names");
      }
      if (const std::string clash = input_attribute_named(input_names, n); !clash.empty()) {
        throw ValueError(p + param + ": '" + n + "' is the name of " + clash + "; choose another");
      }
    }
  }
  if (output_names.empty()) throw ValueError(p + "output_names: at least one output is required");
  if (shared_memory < 0) {
    throw ValueError(p + "shared_memory: must be >= 0 bytes, got " + std::to_string(shared_memory));
  }
  spec->name = name;
  spec->input_names = input_names;
  spec->output_names = output_names;
  spec->source = source;
  spec->header = header;
  spec->ensure_row_contiguous = ensure_row_contiguous;
  spec->atomic_outputs = atomic_outputs;
  spec->shared_memory = shared_memory;
  spec->compile_options = options;
  spec->compile_options.debug = options.debug || debug_from_environment();
  spec->source_tokens = codegen::lex(spec->source);
  spec->header_tokens = codegen::lex(spec->header);
  // The body's names, gathered once rather than one pass per name: a kernel may have many inputs.
  std::unordered_set<std::string_view> named;
  for (const codegen::Token& t : spec->source_tokens) {
    if (t.kind == codegen::TokenKind::Identifier) named.insert(t.text);
  }
  for (const std::string& n : input_names) {
    spec->input_uses.push_back({named.count(n + "_shape") > 0, named.count(n + "_strides") > 0,
                                named.count(n + "_ndim") > 0});
  }
  for (const codegen::Attribute& a : codegen::metal_attributes()) {
    if (named.count(a.name)) spec->attributes.push_back(a.name);
  }
  // Features the dialect lacks are rejected when the kernel is made.
  for (auto [tokens, origin] : {std::pair{&spec->source_tokens, codegen::TextOrigin::Source},
                                std::pair{&spec->header_tokens, codegen::TextOrigin::Header}}) {
    codegen::check_supported(*tokens, dialect, origin);
    codegen::check_braces_pair_up(*tokens, dialect, origin);
  }
  return spec;
}

}  // namespace kjit
