#include "codegen/derived_pointers.h"

#include "codegen/token_scan.h"

namespace kjit::codegen {
namespace {

// The first token of the operand of the pointer casts and parentheses that start at |i|
// ("(const device float4*)", "reinterpret_cast<const float4*>(", "("), or |i| where none does.
size_t after_casts(const std::vector<Token>& t, size_t i) {
  while (i != t.size()) {
    if (t[i].text == "reinterpret_cast") {
      size_t close = index_after(t, i);
      if (close == t.size() || t[close].text != "<") return t.size();
      for (int depth = 0; close != t.size(); close = index_after(t, close)) {
        depth += t[close].text == "<" ? 1 : t[close].text == ">" ? -1 : 0;
        if (depth == 0) break;
      }
      const size_t open = close == t.size() ? close : index_after(t, close);
      if (open == t.size() || t[open].text != "(") return t.size();
      i = index_after(t, open);
    } else if (t[i].text == "(") {
      // A C-style cast names a pointer type ("(T*)"); other parentheses hold the operand.
      const size_t close = closing(t, i);
      const size_t last = close == t.size() ? close : index_before(t, close);
      const bool cast = last != t.size() && t[last].text == "*";
      i = index_after(t, cast ? close : i);
    } else {
      return i;
    }
  }
  return i;
}

// The array that the right side of the '=' at |i| is, or an address in: "inp + k", "inp",
// "&inp[k]" (not "inp[k]", a value), under any pointer casts ("(device float4*)(inp + k)"), by
// |array_named|'s number.
std::optional<size_t> derived_from(
    const std::vector<Token>& t, size_t i,
    const std::function<std::optional<size_t>(std::string_view)>& array_named) {
  size_t array = after_casts(t, index_after(t, i));
  const bool address = array != t.size() && t[array].text == "&";
  if (address) array = index_after(t, array);
  if (array == t.size() || t[array].kind != TokenKind::Identifier) return std::nullopt;
  const std::optional<size_t> k = array_named(t[array].text);
  const size_t next = index_after(t, array);
  if (!k || next == t.size()) return std::nullopt;
  if (address ? t[next].text != "[" : !is_one_of(t[next].text, {"+", "-", ";", ",", ")"})) {
    return std::nullopt;
  }
  return k;
}

}  // namespace

std::unordered_map<std::string_view, size_t> derived_pointers(
    const std::vector<Token>& t,
    const std::function<std::optional<size_t>(std::string_view)>& array_named) {
  // Pointers declared with an address in an array ("T* p = inp + k"), and pointers declared
  // without a value ("T* p;"), whose array their first assignment names.
  std::unordered_map<std::string_view, std::optional<size_t>> pointers;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!is_one_of(t[i].text, {"=", ";"}) || t[i].in_directive) continue;
    const size_t name = index_before(t, i);
    if (name == t.size() || t[name].kind != TokenKind::Identifier) continue;
    const size_t declarator = index_before(t, name);
    if (declarator == t.size() || array_named(t[name].text)) continue;
    if (t[i].text == ";") {
      if (t[declarator].text == "*" && declares_name(t, name)) pointers.try_emplace(t[name].text);
      continue;
    }
    if (!is_one_of(t[declarator].text, {"*", "auto"})) continue;
    if (const std::optional<size_t> k = derived_from(t, i, array_named)) {
      pointers.emplace(t[name].text, *k);
    }
  }
  // Names declared once only, counted in one pass over the tokens, and assigned nothing but an
  // address in their own array: a pointer moved to another array would be checked against the
  // first one's bounds.
  std::unordered_map<std::string_view, size_t> declarations;
  std::unordered_map<std::string_view, bool> moved_away;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind != TokenKind::Identifier || t[i].in_directive || !pointers.count(t[i].text)) {
      continue;
    }
    if (declares_name(t, i)) ++declarations[t[i].text];
    const Token* before = prev_significant(t, i);
    const size_t next = index_after(t, i);
    if (next == t.size() || t[next].text != "=" || is_member_access(before)) continue;
    // "*p = v" writes where p points, and leaves p as it was.
    const size_t deref = index_before(t, i);
    const size_t operand = deref == t.size() ? t.size() : index_before(t, deref);
    if (deref != t.size() && t[deref].text == "*" &&
        (operand == t.size() || t[operand].kind != TokenKind::Identifier ||
         is_statement_keyword(t[operand].text))) {
      continue;
    }
    std::optional<size_t>& array = pointers[t[i].text];
    const std::optional<size_t> k = derived_from(t, next, array_named);
    if (!array) array = k;
    if (!k || k != array) moved_away[t[i].text] = true;
  }
  std::unordered_map<std::string_view, size_t> found;
  for (const auto& [name, array] : pointers) {
    if (array && declarations[name] == 1 && !moved_away[name]) found.emplace(name, *array);
  }
  return found;
}

}  // namespace kjit::codegen
