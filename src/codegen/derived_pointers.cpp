#include "codegen/derived_pointers.h"

#include "codegen/token_scan.h"

namespace kjit::codegen {

std::unordered_map<std::string_view, size_t> derived_pointers(
    const std::vector<Token>& t,
    const std::function<std::optional<size_t>(std::string_view)>& array_named) {
  std::unordered_map<std::string_view, size_t> found;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].text != "=" || t[i].in_directive) continue;
    const size_t name = index_before(t, i);
    if (name == t.size() || t[name].kind != TokenKind::Identifier) continue;
    const size_t declarator = index_before(t, name);
    if (declarator == t.size() || !is_one_of(t[declarator].text, {"*", "auto"})) continue;
    size_t array = index_after(t, i);
    const bool address = array != t.size() && t[array].text == "&";
    if (address) array = index_after(t, array);
    if (array == t.size() || t[array].kind != TokenKind::Identifier) continue;
    const std::optional<size_t> k = array_named(t[array].text);
    const size_t next = index_after(t, array);
    if (!k || next == t.size() || array_named(t[name].text)) continue;
    // The array itself or an address in it: "inp + k", "inp", "&inp[k]" (not "inp[k]", a value).
    if (address ? t[next].text != "[" : !is_one_of(t[next].text, {"+", "-", ";", ","})) continue;
    found.emplace(t[name].text, *k);
  }
  // Names declared once only, counted in one pass over the tokens.
  std::unordered_map<std::string_view, size_t> declarations;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind == TokenKind::Identifier && !t[i].in_directive && found.count(t[i].text) &&
        declares_name(t, i)) {
      ++declarations[t[i].text];
    }
  }
  std::erase_if(found, [&](const auto& pointer) { return declarations[pointer.first] != 1; });
  return found;
}

}  // namespace kjit::codegen
