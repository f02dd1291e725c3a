#include "codegen/rewrite.h"

#include <kjit/errors.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "codegen/loop_marks.h"
#include "codegen/token_scan.h"

namespace kjit::codegen {
namespace {

struct Unsupported {
  std::string_view name;  // a whole identifier
  std::string_view reason;
};

// Features no target of the Metal dialect offers through a buffer-only signature.
constexpr Unsupported kMetalNever[] = {
    {"texture1d", "textures cannot be passed to a kernel body"},
    {"texture1d_array", "textures cannot be passed to a kernel body"},
    {"texture2d", "textures cannot be passed to a kernel body"},
    {"texture2d_array", "textures cannot be passed to a kernel body"},
    {"texture2d_ms", "textures cannot be passed to a kernel body"},
    {"texture3d", "textures cannot be passed to a kernel body"},
    {"texturecube", "textures cannot be passed to a kernel body"},
    {"texturecube_array", "textures cannot be passed to a kernel body"},
    {"texture_buffer", "textures cannot be passed to a kernel body"},
    {"depth2d", "textures cannot be passed to a kernel body"},
    {"sampler", "samplers cannot be passed to a kernel body"},
    {"imageblock", "imageblocks are not available"},
    {"visible_function_table", "function tables are not available"},
    {"intersection_function_table", "function tables are not available"},
    {"intersector", "ray tracing is not available"},
    {"function_constant", "function constants are not available"},
};

// Metal's barriers and SIMD-group operations. On the CPU a body that calls them runs in
// cooperative mode, each call suspending the thread; a helper in the header cannot suspend.
constexpr Unsupported kMetalSuspending[] = {
    {"threadgroup_barrier", "barriers"},
    {"simdgroup_barrier", "barriers"},
    {"simdgroup_multiply", "SIMD-group matrix operations"},
    {"simdgroup_multiply_accumulate", "SIMD-group matrix operations"},
    {"simd_sum", "SIMD-group operations"},
    {"simd_product", "SIMD-group operations"},
    {"simd_max", "SIMD-group operations"},
    {"simd_min", "SIMD-group operations"},
    {"simd_and", "SIMD-group operations"},
    {"simd_or", "SIMD-group operations"},
    {"simd_xor", "SIMD-group operations"},
    {"simd_prefix_exclusive_sum", "SIMD-group operations"},
    {"simd_prefix_inclusive_sum", "SIMD-group operations"},
    {"simd_prefix_exclusive_product", "SIMD-group operations"},
    {"simd_prefix_inclusive_product", "SIMD-group operations"},
    {"simd_shuffle", "SIMD-group operations"},
    {"simd_shuffle_up", "SIMD-group operations"},
    {"simd_shuffle_down", "SIMD-group operations"},
    {"simd_shuffle_xor", "SIMD-group operations"},
    {"simd_broadcast", "SIMD-group operations"},
    {"simd_broadcast_first", "SIMD-group operations"},
    {"simd_ballot", "SIMD-group operations"},
    {"simd_all", "SIMD-group operations"},
    {"simd_any", "SIMD-group operations"},
    {"simd_is_first", "SIMD-group operations"},
    {"simd_shuffle_rotate_up", "SIMD-group operations"},
    {"simd_shuffle_rotate_down", "SIMD-group operations"},
    {"simd_shuffle_and_fill_up", "SIMD-group operations"},
    {"simd_shuffle_and_fill_down", "SIMD-group operations"},
    {"quad_sum", "quad-group operations"},
    {"quad_product", "quad-group operations"},
    {"quad_max", "quad-group operations"},
    {"quad_min", "quad-group operations"},
    {"quad_and", "quad-group operations"},
    {"quad_or", "quad-group operations"},
    {"quad_xor", "quad-group operations"},
    {"quad_prefix_exclusive_sum", "quad-group operations"},
    {"quad_prefix_inclusive_sum", "quad-group operations"},
    {"quad_prefix_exclusive_product", "quad-group operations"},
    {"quad_prefix_inclusive_product", "quad-group operations"},
    {"quad_shuffle", "quad-group operations"},
    {"quad_shuffle_up", "quad-group operations"},
    {"quad_shuffle_down", "quad-group operations"},
    {"quad_shuffle_xor", "quad-group operations"},
    {"quad_shuffle_rotate_up", "quad-group operations"},
    {"quad_shuffle_rotate_down", "quad-group operations"},
    {"quad_shuffle_and_fill_up", "quad-group operations"},
    {"quad_shuffle_and_fill_down", "quad-group operations"},
    {"quad_broadcast", "quad-group operations"},
    {"quad_broadcast_first", "quad-group operations"},
    {"quad_ballot", "quad-group operations"},
    {"quad_all", "quad-group operations"},
    {"quad_any", "quad-group operations"},
    {"quad_is_first", "quad-group operations"},
};

// CUDA's barriers and warp operations. On the CPU a body that calls them runs in cooperative
// mode, as Metal's do.
constexpr Unsupported kCudaSuspending[] = {
    {"__syncthreads", "barriers"},
    {"__syncthreads_count", "barriers"},
    {"__syncthreads_and", "barriers"},
    {"__syncthreads_or", "barriers"},
    {"__syncwarp", "warp operations"},
    {"__shfl_sync", "warp operations"},
    {"__shfl_up_sync", "warp operations"},
    {"__shfl_down_sync", "warp operations"},
    {"__shfl_xor_sync", "warp operations"},
    {"__ballot_sync", "warp operations"},
    {"__any_sync", "warp operations"},
    {"__all_sync", "warp operations"},
    {"__activemask", "warp operations"},
    {"__reduce_add_sync", "warp operations"},
    {"__reduce_min_sync", "warp operations"},
    {"__reduce_max_sync", "warp operations"},
    {"__reduce_and_sync", "warp operations"},
    {"__reduce_or_sync", "warp operations"},
    {"__reduce_xor_sync", "warp operations"},
    {"__match_any_sync", "warp operations"},
    {"__match_all_sync", "warp operations"},
};
// The collective members of cooperative groups (block.sync(), tile.shfl_down(v, 1), ...),
// which suspend when called as members.
constexpr Unsupported kCudaSuspendingMembers[] = {
    {"sync", "barriers"},
    {"shfl", "warp operations"},
    {"shfl_up", "warp operations"},
    {"shfl_down", "warp operations"},
    {"shfl_xor", "warp operations"},
    {"ballot", "warp operations"},
    {"any", "warp operations"},
    {"all", "warp operations"},
};

// cooperative_groups' collective free functions, which suspend when called as that namespace's
// (cg::reduce(tile, v, cg::plus<int>()), cooperative_groups::sync(block), through an alias or
// after `using namespace cooperative_groups;`): otherwise the names are too common to take.
constexpr Unsupported kCudaSuspendingQualified[] = {
    {"sync", "barriers"},
    {"reduce", "warp operations"},
};

template <size_t N>
const Unsupported* find(const Unsupported (&table)[N], std::string_view word) {
  for (const Unsupported& u : table) {
    if (u.name == word) return &u;
  }
  return nullptr;
}

// Include lines for the dialect's own headers are dropped: the prelude already provides them.
bool is_dialect_include(std::string_view header_name, Dialect dialect) {
  auto starts = [&](std::string_view p) { return header_name.substr(0, p.size()) == p; };
  if (dialect == Dialect::Metal) return starts("metal_");
  return starts("cuda_fp16") || starts("cuda_bf16") || starts("cooperative_groups") ||
         starts("cuda_runtime") || starts("cuda/std/");
}

// A floating literal with no suffix (1.0, 2., 1e-3, 0x1p3): a double in C++, a float in Metal.
bool is_unsuffixed_floating(std::string_view num) {
  bool hex = num.size() > 1 && num[0] == '0' && (num[1] == 'x' || num[1] == 'X');
  bool floating = false;
  for (char c : num) {
    if (c == '.' || (hex ? (c == 'p' || c == 'P') : (c == 'e' || c == 'E'))) floating = true;
  }
  char last = num.back();
  bool suffixed =
      last == 'f' || last == 'F' || last == 'l' || last == 'L' || last == 'h' || last == 'H';
  return floating && !suffixed;
}

// The float a Metal floating literal (digits without a suffix) spells, as C++ that every target
// compiles: the literal with an f, or, beyond float's range, what Metal makes of it (infinity,
// or zero for one too small), which NVRTC refuses to write as a literal.
std::string metal_float(std::string_view digits) {
  std::string plain;
  for (char c : digits) {
    if (c != '\'') plain += c;  // digit separators
  }
  errno = 0;
  const float value = std::strtof(plain.c_str(), nullptr);
  if (errno == ERANGE && std::isinf(value)) return "__builtin_bit_cast(float, 0x7f800000u)";
  if (errno == ERANGE && value == 0.0f) return "0.0f";
  return std::string(digits) + "f";
}

// A Metal half literal: a floating literal with an h or H suffix (0.5h).
bool is_half_literal(std::string_view num) {
  if (num.size() < 2 || (num.back() != 'h' && num.back() != 'H')) return false;
  bool hex = num[0] == '0' && (num[1] == 'x' || num[1] == 'X');
  if (hex) return false;
  return is_unsuffixed_floating(num.substr(0, num.size() - 1)) ||
         num.find_first_not_of("0123456789") == num.size() - 1;
}

// The element indices a Metal swizzle names ("zyx" -> "2, 1, 0"), or empty when |name| is not
// one: two to four letters, all from xyzw or all from rgba.
std::string swizzle_indices(std::string_view name) {
  if (name.size() < 2 || name.size() > 4) return {};
  for (std::string_view set : {std::string_view("xyzw"), std::string_view("rgba")}) {
    std::string indices;
    for (char c : name) {
      size_t at = set.find(c);
      if (at == std::string_view::npos) break;
      indices += (indices.empty() ? "" : ", ") + std::to_string(at);
    }
    if (indices.size() == 3 * name.size() - 2) return indices;
  }
  return {};
}

// Whether the threadgroup at token |i| declares group memory ("threadgroup float buf[32];")
// rather than qualifying a pointer, reference or cast ("threadgroup float* p", "(threadgroup
// T*)x"): a declaration starts a statement and names no pointer or reference before its end.
bool declares_storage(const std::vector<Token>& t, size_t i) {
  const Token* before = prev_significant(t, i);
  if (before && before->text != ";" && before->text != "{" && before->text != "}" &&
      before->text != ":") {
    return false;
  }
  for (size_t k = i + 1; k < t.size(); ++k) {
    if (t[k].kind != TokenKind::Punct) continue;
    if (t[k].text == "*" || t[k].text == "&" || t[k].text == ")") return false;
    if (t[k].text == ";" || t[k].text == "=" || t[k].text == "[" || t[k].text == ",") return true;
  }
  return false;
}

// The header name of an include line starting at token |i| ('#'), or empty.
std::string_view include_target(const std::vector<Token>& t, size_t i) {
  const Token* kw = next_significant(t, i);
  if (!kw || kw->text != "include") return {};
  std::string_view rest;
  for (size_t k = i + 1; k < t.size() && t[k].in_directive; ++k) {
    if (t[k].kind == TokenKind::String) return t[k].text.substr(1, t[k].text.size() - 2);
    if (t[k].text == "<") {
      const char* begin = t[k].text.data() + 1;
      for (size_t e = k + 1; e < t.size() && t[e].in_directive; ++e) {
        if (t[e].text == ">") return std::string_view(begin, t[e].text.data() - begin);
      }
    }
  }
  return rest;
}

bool is_listed(const std::vector<std::string>& names, std::string_view word) {
  return std::find(names.begin(), names.end(), word) != names.end();
}

// The '(' that opens the call of the name at token |i|: the next token, or the one after
// explicit template arguments ("block_sum<float>("); t.size() when there is none.
size_t call_parenthesis(const std::vector<Token>& t, size_t i) {
  size_t k = index_after(t, i);
  if (k != t.size() && t[k].text == "<") {
    int depth = 0;
    for (; k != t.size(); k = index_after(t, k)) {
      const std::string_view text = t[k].text;
      if (text == ";" || text == "{" || text == "}") return t.size();
      depth += text == "<" ? 1 : text == ">" ? -1 : text == ">>" ? -2 : 0;
      if (depth <= 0) break;
    }
    if (k == t.size() || depth < 0) return t.size();
    k = index_after(t, k);
  }
  return k != t.size() && t[k].text == "(" ? k : t.size();
}

// Whether token |i| calls one of |helpers|: f(...), Class::f(...), or, for a function defined in
// a class, obj.f(...).
bool calls_helper(const std::vector<Token>& t, size_t i, const WaitingHelpers& helpers) {
  // The name first: finding the parenthesis walks template arguments, as far as the statement's
  // end for a name compared with '<'.
  return helpers.lists(t[i].text, is_member_access(prev_significant(t, i))) &&
         call_parenthesis(t, i) != t.size();
}

// The number of arguments of the call whose parenthesis opens at |open|.
size_t argument_count(const std::vector<Token>& t, size_t open) {
  const size_t close = closing(t, open);
  if (close == t.size() || index_after(t, open) == close) return 0;
  return top_level(t, open, close, ",").size() + 1;
}

// Whether |name| is cooperative_groups, cg, or an alias |coop| knows of.
bool names_cooperative_groups(std::string_view name, const WaitingHelpers& coop) {
  return name == "cg" || name == "cooperative_groups" || is_listed(coop.cooperative_aliases, name);
}

// Whether the free function named at token |i| (reduce, sync) is cooperative_groups': called
// qualified by that namespace (cg::reduce, an alias, ::cooperative_groups::sync, not
// other::cg::reduce), or unqualified after a using directive or declaration for it with its
// number of arguments (reduce takes three, sync one), which tells it from a function of the
// user's.
// |coop| says how the texts name the namespace.
bool calls_cooperative_groups(const std::vector<Token>& t, size_t i, const WaitingHelpers& coop) {
  const size_t open = index_after(t, i);
  if (open == t.size() || t[open].text != "(") return false;
  const size_t colons = index_before(t, i);
  if (colons != t.size() && t[colons].text == "::") {
    const size_t scope = index_before(t, colons);
    if (scope == t.size() || t[scope].kind != TokenKind::Identifier) return false;
    const size_t outer = index_before(t, scope);
    if (outer != t.size() && t[outer].text == "::") {
      const size_t before = index_before(t, outer);
      if (before != t.size() && t[before].kind == TokenKind::Identifier) return false;
    }
    return names_cooperative_groups(t[scope].text, coop);
  }
  return is_listed(coop.cooperative_unqualified, t[i].text) &&
         !is_member_access(prev_significant(t, i)) &&
         argument_count(t, open) == (t[i].text == "reduce" ? 3u : 1u);
}

// Whether token |i| names a call a body on the CPU co_awaits (barriers, SIMD-group and warp
// operations, cooperative groups' collective members and free functions, and the |helpers| of
// the header that wait).
bool suspends(const std::vector<Token>& t, size_t i, Dialect dialect,
              const WaitingHelpers& helpers) {
  if (t[i].kind != TokenKind::Identifier) return false;
  if (calls_helper(t, i, helpers)) return true;
  if (dialect == Dialect::Metal) return find(kMetalSuspending, t[i].text) != nullptr;
  if (find(kCudaSuspending, t[i].text)) return true;
  if (find(kCudaSuspendingQualified, t[i].text) && calls_cooperative_groups(t, i, helpers)) {
    return true;
  }
  return find(kCudaSuspendingMembers, t[i].text) && is_member_access(prev_significant(t, i));
}

// A call of token |i| that the CPU awaits: one that suspends, and is called.
bool awaits(const std::vector<Token>& t, size_t i, Dialect dialect, const WaitingHelpers& helpers) {
  return suspends(t, i, dialect, helpers) && call_parenthesis(t, i) != t.size();
}

// What |t| itself says of cooperative groups' names, and no helpers: for a text looked at alone.
WaitingHelpers own_names(const std::vector<Token>& t) {
  WaitingHelpers names;
  note_cooperative_groups(t, names);
  return names;
}

// Where the declaration of the function named at |name| starts: its specifiers and return type
// (after any template header).
size_t declaration_start(const std::vector<Token>& t, size_t name) {
  size_t start = name;
  for (;;) {
    const size_t p = index_before(t, start);
    if (p == t.size()) return start;
    const std::string_view text = t[p].text;
    if (t[p].kind == TokenKind::Identifier || text == "::" || text == "*" || text == "&") {
      start = p;
      continue;
    }
    if (text != ">") return start;
    const size_t q = opening(t, p);
    if (q == t.size()) return start;
    const size_t before_open = index_before(t, q);
    if (before_open != t.size() && t[before_open].text == "template") return start;
    start = q;
  }
}

// The first token of the postfix expression that ends with the name at token |i|: the whole of
// a qualified name (metal::simd_sum) or of a member call's object (cg::this_thread_block().sync).
size_t expression_start(const std::vector<Token>& t, size_t i) {
  size_t start = i;
  for (;;) {
    size_t link = index_before(t, start);
    if (link == t.size()) return start;
    std::string_view op = t[link].text;
    if (op != "::" && op != "." && op != "->") return start;
    size_t k = index_before(t, link);
    size_t opened = t.size();  // the last bracket skipped
    // Skip calls, subscripts and template arguments back to the name they follow.
    while (k != t.size() && (t[k].text == ")" || t[k].text == "]" || t[k].text == ">")) {
      const size_t open = opening(t, k);
      if (open == t.size()) break;  // unmatched: a '>' that compares, as in a > (b).sync()
      opened = open;
      k = index_before(t, open);
    }
    if (k == t.size() || t[k].kind != TokenKind::Identifier) {
      if (op == "::") return link;  // ::name names the global namespace
      // A parenthesised object, as in (*p).sync(), starts at its parenthesis.
      return opened != t.size() && t[opened].text == "(" ? opened : start;
    }
    start = k;
  }
}

// How a message about token |t| of the user's text begins:
// "[kjit.metal_kernel] 'name' (source line 3)".
std::string about(const Token& t, Dialect dialect, TextOrigin origin) {
  return std::string("[kjit.") + api_name(dialect) + "] '" + std::string(t.text) + "' (" +
         (origin == TextOrigin::Source ? "source" : "header") + " line " + std::to_string(t.line) +
         ")";
}

}  // namespace

void check_supported(const std::vector<Token>& tokens, Dialect dialect, TextOrigin origin) {
  if (dialect != Dialect::Metal) return;
  for (const Token& t : tokens) {
    if (t.kind != TokenKind::Identifier) continue;
    if (const Unsupported* u = find(kMetalNever, t.text)) {
      throw ValueError(about(t, dialect, origin) +
                       " is not supported by the Metal dialect: " + std::string(u->reason) + ".");
    }
  }
}

void check_braces_pair_up(const std::vector<Token>& tokens, Dialect dialect, TextOrigin origin) {
  auto is_brace = [](const Token& t) {
    return t.kind == TokenKind::Punct && (t.text == "{" || t.text == "}");
  };
  // A line continuation between two tokens that would join ("%\<newline>>" is "%>", a brace)
  // makes the compiler see other tokens than these.
  for (size_t i = 1; i + 1 < tokens.size(); ++i) {
    const Token &before = tokens[i - 1], &t = tokens[i], &after = tokens[i + 1];
    auto word = [](const Token& w) {
      return w.kind == TokenKind::Identifier || w.kind == TokenKind::Number;
    };
    if (t.kind == TokenKind::Space && !t.in_directive && (t.text == "\\\n" || t.text == "\\\r\n") &&
        ((before.kind == TokenKind::Punct && after.kind == TokenKind::Punct) ||
         (word(before) && word(after)))) {
      throw ValueError(about(after, dialect, origin) +
                       " follows a line continuation that joins it to the token before it: "
                       "write them on one line.");
    }
  }
  // Braces in macros, or in branches of #if, pair up only once preprocessed.
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].in_directive && is_brace(tokens[i])) return;
    if (tokens[i].kind != TokenKind::Directive) continue;
    const size_t keyword = index_after(tokens, i);
    // #if, #ifdef, #ifndef: every #else or #elif follows one.
    if (keyword != tokens.size() && tokens[keyword].in_directive &&
        tokens[keyword].text.rfind("if", 0) == 0) {
      return;
    }
  }
  std::vector<const Token*> open;
  for (const Token& t : tokens) {
    if (!is_brace(t)) continue;
    if (t.text == "{") {
      open.push_back(&t);
    } else if (open.empty()) {
      throw ValueError(about(t, dialect, origin) + " closes a brace the text did not open.");
    } else {
      open.pop_back();
    }
  }
  if (!open.empty()) throw ValueError(about(*open.back(), dialect, origin) + " is never closed.");
}

void check_waits_are_suspendable(const std::vector<Token>& tokens, Dialect dialect,
                                 TextOrigin origin, const WaitingHelpers& helpers) {
  // The operations themselves first, then calls of the header's helpers that wait: a function
  // of a local class that waits is found as such a helper too, and the operation inside it
  // names the problem better.
  const WaitingHelpers operations_only = own_names(tokens);
  for (const WaitingHelpers* calls : {&operations_only, &helpers}) {
    FunctionsWithin functions(/*classes=*/origin == TextOrigin::Source);
    for (size_t i = 0; i < tokens.size(); ++i) {
      functions.step(tokens, i);
      if (!functions.inside() || !awaits(tokens, i, dialect, *calls)) continue;
      throw ValueError(about(tokens[i], dialect, origin) +
                       " waits for other threads inside a lambda or a function of a local class, "
                       "which the CPU backend cannot suspend; call it from the body or from a "
                       "function of the header.");
    }
  }
}

void check_header_macros_do_not_wait(const std::vector<Token>& header,
                                     const std::vector<Token>& body, Dialect dialect,
                                     const WaitingHelpers& helpers) {
  // A macro of the body is awaited where it is defined, as the body's own text; one of the
  // header expands where the CPU cannot tell that it waits.
  struct Macro {
    std::string_view name;
    size_t begin, end;                 // its tokens after the name
    size_t waits = std::string::npos;  // the operation it waits in, directly or through another
  };
  std::vector<Macro> macros;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i].kind != TokenKind::Directive) continue;
    const size_t keyword = index_after(header, i), name = index_after(header, keyword);
    if (keyword == header.size() || header[keyword].text != "define" || name == header.size() ||
        !header[name].in_directive) {
      continue;
    }
    // Its line: up to the next directive (consecutive directive lines run together).
    size_t end = name + 1;
    while (end < header.size() && header[end].in_directive &&
           header[end].kind != TokenKind::Directive) {
      ++end;
    }
    macros.push_back({header[name].text, name + 1, end});
  }
  for (Macro& m : macros) {
    for (size_t i = m.begin; i < m.end && m.waits == std::string::npos; ++i) {
      if (awaits(header, i, dialect, helpers)) m.waits = i;
    }
  }
  // Through other macros: a worklist from each macro that waits to the macros that name it.
  std::unordered_map<std::string_view, std::vector<size_t>> named_by;
  std::vector<size_t> waiting;
  for (size_t k = 0; k < macros.size(); ++k) {
    if (macros[k].waits != std::string::npos) waiting.push_back(k);
    for (size_t i = macros[k].begin; i < macros[k].end; ++i) {
      if (header[i].kind == TokenKind::Identifier) named_by[header[i].text].push_back(k);
    }
  }
  while (!waiting.empty()) {
    const Macro& other = macros[waiting.back()];
    waiting.pop_back();
    const auto users = named_by.find(other.name);
    if (users == named_by.end()) continue;
    for (size_t k : users->second) {
      if (macros[k].waits != std::string::npos) continue;
      macros[k].waits = other.waits;
      waiting.push_back(k);
    }
  }
  // Used by the body (its macros too), or by the header's code.
  std::unordered_set<std::string_view> used;
  for (const Token& u : body) {
    if (u.kind == TokenKind::Identifier) used.insert(u.text);
  }
  for (const Token& u : header) {
    if (u.kind == TokenKind::Identifier && !u.in_directive) used.insert(u.text);
  }
  for (const Macro& m : macros) {
    if (m.waits == std::string::npos || !used.count(m.name)) continue;
    throw ValueError(about(header[m.waits], dialect, TextOrigin::Header) +
                     " waits for other threads inside the header's macro '" + std::string(m.name) +
                     "', which the CPU backend cannot suspend; define the macro in the body, or "
                     "make it a function of the header.");
  }
}

void WaitingHelpers::add(const std::string& name, bool member) {
  if (listed_.insert(name).second) names.push_back(name);
  if (member && listed_members_.insert(name).second) members.push_back(name);
}

bool WaitingHelpers::lists(std::string_view name, bool through_object) const {
  const auto& set = through_object ? listed_members_ : listed_;
  return set.find(name) != set.end();
}

bool is_waiting_call(const std::vector<Token>& tokens, size_t i, Dialect dialect,
                     const WaitingHelpers& names) {
  return suspends(tokens, i, dialect, names);
}

bool is_lane_operation(const std::vector<Token>& tokens, size_t i, Dialect dialect) {
  if (is_member_access(prev_significant(tokens, i))) return false;
  const Unsupported* call = dialect == Dialect::Metal ? find(kMetalSuspending, tokens[i].text)
                                                      : find(kCudaSuspending, tokens[i].text);
  if (!call) return false;
  return call->reason == "SIMD-group operations" || call->reason == "quad-group operations" ||
         tokens[i].text == "simdgroup_barrier" ||
         (call->reason == "warp operations" && tokens[i].text != "__match_all_sync");
}

bool uses_suspending_calls(const std::vector<Token>& tokens, Dialect dialect,
                           const WaitingHelpers* helpers) {
  const WaitingHelpers own = helpers ? WaitingHelpers{} : own_names(tokens);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (suspends(tokens, i, dialect, helpers ? *helpers : own)) return true;
  }
  return false;
}

bool uses_simdgroup_matrices(const std::vector<Token>& tokens) {
  static constexpr std::string_view kNames[] = {
      "simdgroup_matrix",    "simdgroup_float8x8",           "simdgroup_half8x8",
      "simdgroup_bfloat8x8", "make_filled_simdgroup_matrix", "simdgroup_load",
      "simdgroup_store",     "simdgroup_multiply",           "simdgroup_multiply_accumulate"};
  for (const Token& t : tokens) {
    if (t.kind != TokenKind::Identifier) continue;
    for (std::string_view name : kNames) {
      if (t.text == name) return true;
    }
  }
  return false;
}

void note_cooperative_groups(const std::vector<Token>& t, WaitingHelpers& helpers) {
  // The index of the name after |k| and an optional leading ::, when it is cooperative_groups,
  // cg or an alias of it; else t.size().
  auto namespace_after = [&](size_t k) {
    size_t name = index_after(t, k);
    if (name != t.size() && t[name].text == "::") name = index_after(t, name);
    return name != t.size() && names_cooperative_groups(t[name].text, helpers) ? name : t.size();
  };
  auto allow_unqualified = [&](std::string_view name) {
    if (!is_listed(helpers.cooperative_unqualified, name))
      helpers.cooperative_unqualified.emplace_back(name);
  };
  for (size_t k = 0; k < t.size(); ++k) {
    const size_t next = index_after(t, k);
    if (next == t.size()) break;
    if (t[k].text == "using" && t[next].text == "namespace" && namespace_after(next) != t.size()) {
      allow_unqualified("reduce");
      allow_unqualified("sync");
    }
    // using cooperative_groups::reduce;
    if (const size_t scope = t[k].text == "using" ? namespace_after(k) : t.size();
        scope != t.size()) {
      const size_t colons = index_after(t, scope), name = index_after(t, colons);
      if (name != t.size() && t[colons].text == "::" &&
          (t[name].text == "reduce" || t[name].text == "sync")) {
        allow_unqualified(t[name].text);
      }
    }
    // namespace alias = cooperative_groups;
    const size_t equals = index_after(t, next);
    if (t[k].text == "namespace" && t[next].kind == TokenKind::Identifier && equals != t.size() &&
        t[equals].text == "=" && namespace_after(equals) != t.size()) {
      helpers.cooperative_aliases.emplace_back(t[next].text);
    }
  }
}

WaitingHelpers find_waiting_helpers(const std::vector<Token>& t, Dialect dialect) {
  // Function definitions: a name, its parameters, optional qualifiers, a body; at namespace
  // scope or in a class.
  std::vector<WaitingHelpers::Definition> all;
  std::vector<size_t> class_ends;  // the closing braces of the classes around token i
  for (size_t i = 0; i < t.size(); ++i) {
    while (!class_ends.empty() && i > class_ends.back()) class_ends.pop_back();
    if (t[i].text == "{" && opens_class_body(t, i)) {
      class_ends.push_back(closing(t, i));
      continue;
    }
    if (t[i].kind != TokenKind::Identifier || !is_identifier(t[i].text)) continue;
    const size_t open = index_after(t, i);
    if (open == t.size() || t[open].text != "(") continue;
    size_t k = index_after(t, closing(t, open));
    while (k != t.size() && (t[k].text == "const" || t[k].text == "noexcept")) {
      k = index_after(t, k);
    }
    if (k == t.size() || t[k].text != "{") continue;
    all.push_back({declaration_start(t, i), i, k, closing(t, k), !class_ends.empty()});
    i = all.back().body_end;
  }
  // Those that wait, directly or through each other (overloads one by one). Each body is read
  // once for the operations it waits at and the names it may call; waiting then spreads from
  // each helper to the bodies that call its name.
  WaitingHelpers found;
  note_cooperative_groups(t, found);
  std::vector<bool> waits(all.size());
  std::vector<size_t> newly;  // helpers found to wait, whose callers are yet to be looked at
  // The tokens of each name in a body, called plainly or through an object: (body, token).
  std::unordered_map<std::string_view, std::vector<std::pair<size_t, size_t>>> uses, member_uses;
  for (size_t d = 0; d < all.size(); ++d) {
    for (size_t k = all[d].body_begin; k < all[d].body_end && k < t.size(); ++k) {
      if (t[k].kind != TokenKind::Identifier) continue;
      if (!waits[d] && suspends(t, k, dialect, found)) {
        waits[d] = true;
        newly.push_back(d);
      }
      (is_member_access(prev_significant(t, k)) ? member_uses : uses)[t[k].text].emplace_back(d, k);
    }
  }
  std::unordered_set<std::string_view> spread, spread_to_members;  // names already followed
  auto follow = [&](auto& used, std::string_view name) {
    const auto calls = used.find(name);
    if (calls == used.end()) return;
    for (const auto& [d, k] : calls->second) {
      if (!waits[d] && call_parenthesis(t, k) != t.size()) {
        waits[d] = true;
        newly.push_back(d);
      }
    }
  };
  while (!newly.empty()) {
    const size_t d = newly.back();
    newly.pop_back();
    const std::string_view name = t[all[d].name].text;
    if (spread.insert(name).second) follow(uses, name);
    if (all[d].member && spread_to_members.insert(name).second) follow(member_uses, name);
  }
  for (size_t d = 0; d < all.size(); ++d) {
    if (!waits[d]) continue;
    found.add(std::string(t[all[d].name].text), all[d].member);
    found.definitions.push_back(all[d]);
  }
  std::sort(found.definitions.begin(), found.definitions.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return found;
}

std::string rewrite_header(const std::vector<Token>& tokens, Dialect dialect, Target target,
                           const WaitingHelpers& helpers) {
  auto slice = [&](size_t begin, size_t end) {
    return std::vector<Token>(tokens.begin() + std::min(begin, tokens.size()),
                              tokens.begin() + std::min(end, tokens.size()));
  };
  std::string out;
  size_t done = 0;
  for (const WaitingHelpers::Definition& d : helpers.definitions) {
    out += rewrite(slice(done, d.type_begin), dialect, target);
    // The return type T becomes subtask<T>; specifiers a coroutine cannot have are dropped.
    std::string specifiers, type, breaks;
    for (size_t k = d.type_begin; k < d.name; ++k) {
      const Token& tok = tokens[k];
      const std::string_view w = tok.text;
      if (tok.kind == TokenKind::Space || tok.kind == TokenKind::Comment) {
        breaks += blank_keeping_lines(w);
        if (!type.empty() && type.back() != ' ') type += ' ';
      } else if (w == "constexpr" || w == "consteval" || w == "__forceinline__") {
        continue;
      } else if (w == "inline" || w == "static" || w == "__device__" || w == "__host__" ||
                 w == "__noinline__") {
        specifiers += std::string(w) + " ";
      } else {
        type += w;
      }
    }
    while (!type.empty() && type.back() == ' ') type.pop_back();
    if (type.empty() || type.find("auto") != std::string::npos) {
      throw ValueError(std::string("[kjit.") + api_name(dialect) + "] helper '" +
                       std::string(tokens[d.name].text) + "' (header line " +
                       std::to_string(tokens[d.name].line) +
                       ") waits for other threads, so on the CPU it must name its return type "
                       "(not auto).");
    }
    out +=
        specifiers + "::kjit::coop::subtask<" + rewrite(lex(type), dialect, target) + "> " + breaks;
    out += rewrite(slice(d.name, d.body_begin), dialect, target);
    out += rewrite(slice(d.body_begin, d.body_end + 1), dialect, target, /*coroutine=*/true, 0,
                   &helpers);
    done = d.body_end + 1;
  }
  out += rewrite(slice(done, tokens.size()), dialect, target);
  return out;
}

std::string rewrite(const std::vector<Token>& tokens, Dialect dialect, Target target,
                    bool coroutine, int dynamic_shared, const WaitingHelpers* helpers) {
  // The text's own names for cooperative groups are read only where calls are awaited.
  const WaitingHelpers own = coroutine && !helpers ? own_names(tokens) : WaitingHelpers{};
  if (!helpers) helpers = &own;
  std::string out;
  std::vector<size_t> closers;  // tokens after which a wrapped call's co_await closes
  std::vector<size_t> emitted_at(tokens.size());  // where each token's text begins in |out|
  FunctionsWithin functions;
  // In a coroutine: the calls that wait (each awaited below), and the loops around them.
  std::vector<bool> waits(tokens.size());
  LoopMarks marks;
  if (coroutine) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      waits[i] = awaits(tokens, i, dialect, *helpers);
    }
    marks = mark_waiting_loops(tokens, waits);
  }
  // A qualifier that is dropped takes the blanks after it along where what comes before it
  // already ends in a blank or opens a list ("const device T*" becomes "const T*"). Blanks with a
  // newline stay: they keep the line structure.
  bool drop_blanks = false;
  auto drop_qualifier = [&] {
    drop_blanks =
        out.empty() || std::string_view(" \t\n(<,").find(out.back()) != std::string_view::npos;
  };
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (coroutine) out += marks.before[i];
    emitted_at[i] = out.size();
    const Token& t = tokens[i];
    if (std::exchange(drop_blanks, false) && t.kind == TokenKind::Space &&
        t.text.find('\n') == std::string_view::npos) {
      continue;
    }
    if (coroutine) functions.step(tokens, i);
    if (coroutine && marks.instead[i]) {
      out += *marks.instead[i];
      continue;
    }
    if (coroutine && t.kind == TokenKind::Identifier) {
      // The body becomes a coroutine: barriers and SIMD-group operations are awaited, and
      // returning ends the coroutine (a lambda's return stays: the lambda is a function of its
      // own).
      if (t.text == "return" && !functions.inside()) {
        out += "co_return";
        continue;
      }
      if (waits[i]) {
        const size_t k = closing(tokens, call_parenthesis(tokens, i));
        // A helper's call also records its line, which orders the helper's meeting points.
        const bool helper = calls_helper(tokens, i, *helpers);
        const size_t start = expression_start(tokens, i);
        const std::string_view await =
            helper ? "(co_await ::kjit::coop::called_at(KJIT_CALL_SITE, " : "(co_await ";
        out.insert(emitted_at[start], await);
        for (size_t k = start + 1; k <= i; ++k) emitted_at[k] += await.size();
        closers.push_back(k);
        if (helper) closers.push_back(k);
      }
    }
    if (t.kind == TokenKind::Directive) {
      std::string_view header = include_target(tokens, i);
      if (!header.empty() && is_dialect_include(header, dialect)) {
        size_t end = i;
        while (end + 1 < tokens.size() && tokens[end + 1].in_directive) ++end;
        for (size_t k = i; k <= end; ++k) out += blank_keeping_lines(tokens[k].text);
        i = end;
        continue;
      }
    }
    if (dialect == Dialect::Metal && t.kind == TokenKind::Identifier) {
      // Address-space qualifiers: device and thread are dropped; constant is read-only data;
      // threadgroup declares group memory (on CUDA, __shared__) or qualifies a pointer.
      if (t.text == "device" || t.text == "thread") {
        drop_qualifier();
        continue;
      }
      if (t.text == "threadgroup") {
        // One instance per running group: on the CPU a worker runs one group at a time.
        if (declares_storage(tokens, i)) {
          out += target == Target::Cuda ? "__shared__" : "static thread_local";
        } else {
          drop_qualifier();
        }
        continue;
      }
      if (t.text == "constant") {
        const Token* before = prev_significant(tokens, i);
        const Token* after = next_significant(tokens, i);
        bool has_const = (before && before->text == "const") || (after && after->text == "const");
        if (has_const) {
          drop_qualifier();
        } else {
          out += "const";
        }
        continue;
      }
    }
    if (dialect == Dialect::Cuda && target == Target::Cpu && t.kind == TokenKind::Identifier &&
        t.text == "__shared__") {
      // Group memory on the CPU: one instance per worker, which runs one group at a time.
      const Token* before = prev_significant(tokens, i);
      if (before && before->text == "extern") {
        // extern __shared__ T name[]; : the launch's dynamic shared memory.
        out.resize(out.rfind("extern"));
        size_t k = i + 1;
        std::string type, name;
        for (; k < tokens.size() && tokens[k].text != "["; ++k) {
          if (tokens[k].kind == TokenKind::Identifier) {
            if (!name.empty()) type += (type.empty() ? "" : " ") + name;
            name = std::string(tokens[k].text);
          }
        }
        while (k < tokens.size() && tokens[k].text != ";") ++k;
        out += type + "* const " + name + " = reinterpret_cast<" + type +
               "*>(::kjit::dynamic_shared(" + std::to_string(dynamic_shared) + "));";
        for (size_t j = i; j <= k && j < tokens.size(); ++j) {
          out += blank_keeping_lines(tokens[j].text);
        }
        i = k;
        continue;
      }
      out += "static thread_local";
      continue;
    }
    if (dialect == Dialect::Metal && t.kind == TokenKind::Identifier) {
      // A swizzle (v.zyx) reads a new vector; an assigned one (v.xy = ..., v.xy += ...) is a
      // view that writes through.
      const Token* before = prev_significant(tokens, i);
      std::string indices = swizzle_indices(t.text);
      if (before && (before->text == "." || before->text == "->") && !indices.empty()) {
        const Token* after = next_significant(tokens, i);
        const Token* after2 =
            after ? next_significant(tokens, size_t(after - tokens.data())) : nullptr;
        bool assigned = after && ((after->text == "=" && !(after2 && after2->text == "=")) ||
                                  after->text == "+=" || after->text == "-=" ||
                                  after->text == "*=" || after->text == "/=");
        out += assigned ? "template swizzle_ref<" : "template swizzle<";
        out += indices + ">()";
        continue;
      }
    }
    if (dialect == Dialect::Metal && t.kind == TokenKind::Number &&
        is_unsuffixed_floating(t.text)) {
      out += metal_float(t.text);
      continue;
    }
    if (dialect == Dialect::Metal && t.kind == TokenKind::Number && is_half_literal(t.text)) {
      out += "static_cast<half>(";
      out += metal_float(t.text.substr(0, t.text.size() - 1));
      out += ")";
      continue;
    }
    out += t.text;
    while (!closers.empty() && closers.back() == i) {
      out += ')';
      closers.pop_back();
    }
  }
  if (coroutine) out += marks.before.back();
  return out;
}

}  // namespace kjit::codegen
