#include "codegen/derived_pointers.h"

#include "codegen/token_scan.h"

namespace kjit::codegen {
namespace {

// A pointer operand: its last token and the number of the array it points into.
struct Operand {
  size_t last;
  size_t array;
};

std::optional<Operand> pointer_operand(const std::vector<Token>& t, size_t i,
                                       const ArrayNamed& array_named);

// The '>' that closes the template arguments opening at the '<' at |open|, counted by depth
// ("reinterpret_cast<const vec<half, 4>*>"), or t.size().
size_t template_close(const std::vector<Token>& t, size_t open) {
  for (int depth = 0; open != t.size(); open = index_after(t, open)) {
    depth += t[open].text == "<" ? 1 : t[open].text == ">" ? -1 : 0;
    if (depth == 0) return open;
  }
  return t.size();
}

// Whether tokens [k, close) move a pointer by an offset ("+ i * 4 - 1"): names, numbers,
// arithmetic, calls, subscripts and casts, not a comparison, a condition or an assignment
// ("inp + i < end ? ..."), which would leave something else than the pointer.
bool moves_by_offset(const std::vector<Token>& t, size_t k, size_t close) {
  if (k == close) return true;
  if (!is_one_of(t[k].text, {"+", "-"})) return false;
  for (; k < close; k = index_after(t, k)) {
    const Token& tk = t[k];
    if (tk.text == "(" || tk.text == "[") {
      k = closing(t, k);
      if (k >= close) return false;
      continue;
    }
    const Token* before = prev_significant(t, k);
    if (tk.text == "<" && before &&
        is_one_of(before->text, {"static_cast", "reinterpret_cast", "const_cast"})) {
      k = template_close(t, k);
      if (k >= close) return false;
      continue;
    }
    if (tk.kind == TokenKind::Identifier || tk.kind == TokenKind::Number) continue;
    if (!is_one_of(tk.text, {"+", "-", "*", "/", "%", ".", "->", "::"})) return false;
  }
  return true;
}

// The operand inside the parentheses that open at |open|, moved or not ("(inp + k)").
std::optional<Operand> parenthesised(const std::vector<Token>& t, size_t open,
                                     const ArrayNamed& array_named) {
  const size_t close = closing(t, open);
  if (close == t.size()) return std::nullopt;
  const std::optional<Operand> inner = pointer_operand(t, index_after(t, open), array_named);
  if (!inner || !moves_by_offset(t, index_after(t, inner->last), close)) return std::nullopt;
  return Operand{close, inner->array};
}

// The pointer operand that starts at |i|: an array ("inp"), an element's address ("&inp[k]"),
// one in parentheses, moved or not ("(inp + k)"), or one under a pointer cast ("(device
// float4*)(inp + k)", "reinterpret_cast<const float4*>(inp)"). Not an element ("inp[k]").
std::optional<Operand> pointer_operand(const std::vector<Token>& t, size_t i,
                                       const ArrayNamed& array_named) {
  if (i == t.size()) return std::nullopt;
  if (t[i].text == "reinterpret_cast") {
    const size_t angle = index_after(t, i);
    if (angle == t.size() || t[angle].text != "<") return std::nullopt;
    const size_t close = template_close(t, angle);
    const size_t open = close == t.size() ? close : index_after(t, close);
    if (open == t.size() || t[open].text != "(") return std::nullopt;
    return parenthesised(t, open, array_named);
  }
  if (t[i].text == "(") {
    // A C-style cast names a pointer type ("(T*)"); other parentheses hold the operand.
    const size_t close = closing(t, i);
    const size_t last = close == t.size() ? close : index_before(t, close);
    if (last == t.size() || t[last].text != "*") return parenthesised(t, i, array_named);
    return pointer_operand(t, index_after(t, close), array_named);
  }
  const bool address = t[i].text == "&";
  const size_t name = address ? index_after(t, i) : i;
  if (name == t.size() || t[name].kind != TokenKind::Identifier) return std::nullopt;
  const std::optional<size_t> k = array_named(t[name].text);
  const size_t next = index_after(t, name);
  if (!k || next == t.size()) return std::nullopt;
  if (address) {
    const size_t close = t[next].text == "[" ? closing(t, next) : t.size();
    if (close == t.size()) return std::nullopt;
    return Operand{close, *k};
  }
  // An element, a call, a member, or a step that would move the view in its place.
  if (is_one_of(t[next].text, {"[", "(", ".", "->", "::", "++", "--"})) return std::nullopt;
  return Operand{name, *k};
}

// The array that the right side of the '=' at |i| is, or an address in: "inp + k", "inp",
// "&inp[k]" (not "inp[k]", a value), under any pointer casts ("(device float4*)(inp + k)"), by
// |array_named|'s number.
std::optional<size_t> derived_from(const std::vector<Token>& t, size_t i,
                                   const ArrayNamed& array_named) {
  const std::optional<Operand> operand = pointer_operand(t, index_after(t, i), array_named);
  if (!operand) return std::nullopt;
  const size_t next = index_after(t, operand->last);
  if (next == t.size() || !is_one_of(t[next].text, {"+", "-", ";", ",", ")"})) return std::nullopt;
  return operand->array;
}

// Whether the element whose ']' is at |last| goes on with a subscript, a member, a call or a
// step, which the '&' before its name takes the address of instead ("&out[i].x").
bool extends_address(const std::vector<Token>& t, size_t last) {
  const size_t next = index_after(t, last);
  return next != t.size() && is_one_of(t[next].text, {"[", "(", ".", "->", "++", "--"});
}

// The pointer made in place at |i|, the start of an access's pointer operand: through plain
// parentheses to a cast, a reinterpret_cast or a name.
std::optional<PointerInPlace> made_at(const std::vector<Token>& t, size_t i,
                                      const ArrayNamed& array_named) {
  while (i != t.size() && t[i].text == "(") {
    const size_t close = closing(t, i);
    const size_t last = close == t.size() ? close : index_before(t, close);
    if (last == t.size()) return std::nullopt;
    if (t[last].text == "*") {
      // A C-style cast of a name, of an element's address ("(float4*)&out[i]") or of an
      // operand in parentheses, which become its call's (not of another cast:
      // "(float4*)(float*)inp").
      const size_t operand = index_after(t, close);
      const std::optional<Operand> o = pointer_operand(t, operand, array_named);
      const bool parenthesised = o && t[operand].text == "(" && o->last == closing(t, operand);
      if (!o || (!parenthesised && t[operand].kind != TokenKind::Identifier &&
                 !(t[operand].text == "&" && !extends_address(t, o->last)))) {
        return std::nullopt;
      }
      // The cast's parentheses become template brackets, which hide no commas from the scans
      // that follow ("(vec<half, 4>*)" stays unchecked).
      for (size_t k = i; k < close; k = index_after(t, k)) {
        if (t[k].text == ",") return std::nullopt;
      }
      return PointerInPlace{PointerInPlace::How::Cast,          i,       close,
                            parenthesised ? t.size() : operand, o->last, o->array};
    }
    i = index_after(t, i);
  }
  const std::optional<Operand> o = pointer_operand(t, i, array_named);
  if (!o) return std::nullopt;
  if (t[i].text == "reinterpret_cast") {
    return PointerInPlace{
        PointerInPlace::How::Reinterpret, i, t.size(), t.size(), t.size(), o->array};
  }
  if (t[i].kind != TokenKind::Identifier) return std::nullopt;  // "(&out[k])[j]"
  return PointerInPlace{PointerInPlace::How::Moved, i, t.size(), t.size(), t.size(), o->array};
}

// Whether |name| is an atomic operation's, whose first argument points at the element it
// accesses: CUDA's atomicAdd and the rest (a scope's suffix too), Metal's atomic_*_explicit.
bool names_atomic_operation(std::string_view name) {
  if (name.starts_with("atomic_")) return name.ends_with("_explicit");
  if (!name.starts_with("atomic")) return false;
  for (std::string_view scope : {"_block", "_system"}) {
    if (name.ends_with(scope)) name.remove_suffix(scope.size());
  }
  return is_one_of(name,
                   {"atomicAdd", "atomicSub", "atomicExch", "atomicMin", "atomicMax", "atomicInc",
                    "atomicDec", "atomicCAS", "atomicAnd", "atomicOr", "atomicXor"});
}

// The pointer an atomic operation called at |name| is given as its first argument, when that is
// an array or a derived pointer, moved or not ("atomicAdd(out + i, v)").
std::optional<PointerInPlace> given_to_atomic(const std::vector<Token>& t, size_t name,
                                              const ArrayNamed& array_named) {
  const size_t open = index_after(t, name);
  if (open == t.size() || t[open].text != "(") return std::nullopt;
  const size_t first = index_after(t, open);
  if (first == t.size() || t[first].kind != TokenKind::Identifier) return std::nullopt;
  const std::optional<Operand> o = pointer_operand(t, first, array_named);
  const size_t close = closing(t, open);
  if (!o || close == t.size()) return std::nullopt;
  const std::vector<size_t> commas = top_level(t, open, close, ",");
  const size_t end = commas.empty() ? close : commas.front();
  if (!moves_by_offset(t, index_after(t, o->last), end)) return std::nullopt;
  return PointerInPlace{PointerInPlace::How::Atomic, first,   t.size(), first,
                        index_before(t, end),        o->array};
}

}  // namespace

std::unordered_map<std::string_view, size_t> derived_pointers(const std::vector<Token>& t,
                                                              const ArrayNamed& array_named) {
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

std::vector<PointerInPlace> pointers_made_in_place(const std::vector<Token>& t,
                                                   const ArrayNamed& array_named) {
  std::vector<PointerInPlace> found;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].in_directive) continue;
    if (t[i].kind == TokenKind::Identifier && names_atomic_operation(t[i].text) &&
        !is_member_access(prev_significant(t, i))) {
      if (const std::optional<PointerInPlace> given = given_to_atomic(t, i, array_named)) {
        found.push_back(*given);
      }
      continue;
    }
    if (!is_one_of(t[i].text, {"(", "reinterpret_cast"})) continue;
    // A call's parentheses ("f(out)[i]", "g()(out)") hold its arguments, an if's its
    // condition.
    const size_t before = index_before(t, i);
    if (t[i].text == "(" && before != t.size() &&
        ((t[before].kind == TokenKind::Identifier && t[before].text != "return") ||
         is_one_of(t[before].text, {"]", ">"}) ||
         (t[before].text == ")" && !closes_condition(t, before)))) {
      continue;
    }
    const std::optional<Operand> operand = pointer_operand(t, i, array_named);
    if (!operand) continue;
    // Dereferenced ("*(T*)(p)") or indexed ("((T*)p)[k]"). An access nested in another one's
    // operand is found too: each rewrites its own tokens.
    if (accessed_as_element(t, i, operand->last)) {
      const std::optional<PointerInPlace> made = made_at(t, i, array_named);
      if (made && (found.empty() || found.back().at != made->at)) found.push_back(*made);
    }
  }
  return found;
}

}  // namespace kjit::codegen
