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

std::string group_array_kind(Dialect dialect) {
  return dialect == Dialect::Metal ? "threadgroup array" : "__shared__ array";
}

std::vector<GroupArray> group_arrays(const std::vector<Token>& t, Dialect dialect) {
  std::vector<GroupArray> found;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k].kind != TokenKind::Identifier || t[k].in_directive) continue;
    const Token* before = prev_significant(t, k);
    if (before && before->text != ";" && before->text != "{" && before->text != "}") continue;
    if (t[k].text == "extern") {
      const Token* next = next_significant(t, k);
      if (dialect != Dialect::Cuda || !next || next->text != "__shared__") continue;
    }
    if (!declares_group_memory(t, k, t.size(), dialect)) continue;
    // Its declarators: each name followed by '[' outside brackets is an array.
    size_t j = k;
    for (; t[j].text != ";"; j = index_after(t, j)) {
      if (t[j].text == "(" || t[j].text == "[") {
        j = closing(t, j);
        continue;
      }
      const size_t next = index_after(t, j);
      if (t[j].kind != TokenKind::Identifier || next == t.size() || t[next].text != "[") continue;
      const size_t after = index_after(t, next);
      found.push_back({std::string(t[j].text), j, after < t.size() && t[after].text == "]"});
    }
    k = j;
  }
  return found;
}

}  // namespace kjit::codegen
