#include "codegen/group_memory.h"

#include "codegen/token_scan.h"

namespace kjit::codegen {
namespace {

// Words whose parenthesised argument may precede a declaration's type or name.
bool takes_attribute_argument(std::string_view word) {
  return word == "__align__" || word == "alignas" || word == "__attribute__";
}

}  // namespace

bool declares_group_memory(const std::vector<Token>& t, size_t k, size_t end, Dialect dialect) {
  const std::string_view first = t[k].text;
  if (dialect == Dialect::Metal ? first != "threadgroup"
                                : first != "__shared__" && first != "extern") {
    return false;
  }
  for (size_t j = k; j < end; ++j) {
    if (!is_significant(t[j])) continue;
    if (t[j].text == ";") return true;
    if (t[j].text == "(") {
      const Token* before = prev_significant(t, j);
      if (!before || !takes_attribute_argument(before->text)) return false;
      j = closing(t, j);
      if (j >= end) return false;
      continue;
    }
    if (t[j].text == "*" || t[j].text == "&" || t[j].text == "&&" || t[j].text == "=" ||
        t[j].text == "{") {
      return false;
    }
  }
  return false;
}

std::string group_variable_kind(Dialect dialect, bool array) {
  return std::string(dialect == Dialect::Metal ? "threadgroup" : "__shared__") +
         (array ? " array" : " variable");
}

std::vector<GroupVariable> group_variables(const std::vector<Token>& t, Dialect dialect,
                                           bool top_level_only) {
  std::vector<GroupVariable> found;
  int depth = 0;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k].kind == TokenKind::Punct && !t[k].in_directive) {
      depth += t[k].text == "{" ? 1 : t[k].text == "}" ? -1 : 0;
    }
    if (t[k].kind != TokenKind::Identifier || t[k].in_directive) continue;
    if (top_level_only && depth != 0) continue;
    const Token* before = prev_significant(t, k);
    if (before && !before->in_directive && before->text != ";" && before->text != "{" &&
        before->text != "}") {
      continue;
    }
    if (t[k].text == "extern") {
      const Token* next = next_significant(t, k);
      if (dialect != Dialect::Cuda || !next || next->text != "__shared__") continue;
    }
    if (!declares_group_memory(t, k, t.size(), dialect)) continue;
    // Its declarators: each name followed by '[' outside brackets is an array, each followed by
    // ',' or ';' a variable of one value.
    size_t j = k;
    for (; t[j].text != ";"; j = index_after(t, j)) {
      if (t[j].text == "(" || t[j].text == "[") {
        j = closing(t, j);
        continue;
      }
      const size_t next = index_after(t, j);
      if (t[j].kind != TokenKind::Identifier || next == t.size()) continue;
      if (t[next].text == "," || t[next].text == ";") {
        found.push_back({std::string(t[j].text), j, false, false, top_level_only});
      } else if (t[next].text == "[") {
        const size_t after = index_after(t, next);
        const bool dynamic = after < t.size() && t[after].text == "]";
        found.push_back({std::string(t[j].text), j, true, dynamic, top_level_only});
      }
    }
    k = j;
  }
  return found;
}

std::vector<GroupVariable> group_variables(const KernelSpec& spec) {
  std::vector<GroupVariable> found = group_variables(spec.source_tokens, spec.dialect);
  for (GroupVariable& v : group_variables(spec.header_tokens, spec.dialect, true)) {
    found.push_back(std::move(v));
  }
  return found;
}

}  // namespace kjit::codegen
