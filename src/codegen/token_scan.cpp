#include "codegen/token_scan.h"

#include <algorithm>
#include <cstdint>

namespace kjit::codegen {

// Each step skips a whole run of spaces and comments (Token::run_ahead, run_behind): a token
// inside a long run of comment lines finds its neighbours at once.
const Token* next_significant(const std::vector<Token>& t, size_t i) {
  for (size_t k = i + 1; k < t.size();) {
    if (is_significant(t[k])) return &t[k];
    k += std::max<size_t>(1, t[k].run_ahead);
  }
  return nullptr;
}
const Token* prev_significant(const std::vector<Token>& t, size_t i) {
  for (size_t k = i; k > 0;) {
    --k;
    if (is_significant(t[k])) return &t[k];
    k -= std::min<size_t>(k, std::max<size_t>(1, t[k].run_behind) - 1);  // to the run's first
  }
  return nullptr;
}

bool is_member_access(const Token* t) { return t && (t->text == "." || t->text == "->"); }

bool is_one_of(std::string_view word, std::initializer_list<std::string_view> words) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

bool is_statement_keyword(std::string_view word) {
  return is_one_of(word,
                   {"if",       "else",     "for",    "while",    "do",     "switch",  "case",
                    "default",  "return",   "break",  "continue", "goto",   "throw",   "co_return",
                    "co_yield", "co_await", "delete", "new",      "sizeof", "alignof", "using",
                    "typedef",  "and",      "or",     "not",      "xor",    "bitand",  "bitor",
                    "compl",    "and_eq",   "or_eq",  "xor_eq",   "not_eq"});
}

bool closes_condition(const std::vector<Token>& t, size_t close) {
  const size_t open = opening(t, close);
  const Token* keyword = open == t.size() ? nullptr : prev_significant(t, open);
  return keyword && is_one_of(keyword->text, {"if", "for", "while", "switch"});
}

bool names_builtin_type(std::string_view word) {
  // A vector: a scalar's name and its length (float4, uint2, half3).
  if (word.size() > 2 && word.back() >= '2' && word.back() <= '4' &&
      is_one_of(word.substr(0, word.size() - 1),
                {"bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                 "float", "half", "bfloat", "double"})) {
    return true;
  }
  return is_one_of(word, {"const",     "volatile", "signed",   "unsigned",  "bool",      "char",
                          "uchar",     "short",    "ushort",   "int",       "uint",      "long",
                          "ulong",     "float",    "half",     "bfloat",    "double",    "size_t",
                          "ptrdiff_t", "int8_t",   "int16_t",  "int32_t",   "int64_t",   "uint8_t",
                          "uint16_t",  "uint32_t", "uint64_t", "float16_t", "bfloat16_t"});
}

namespace {

// Whether the ')' at |close| ends a cast to a built-in type ("(int)", "(unsigned int)"), not a
// call's arguments ("sizeof(int)") or a declarator's parameters ("(*f)(int)", "[](int)"): what
// follows it is the cast's operand. After a '>' it is one, a comparison's ("x > (int)*p"): a
// call of a template cannot take a type.
bool closes_value_cast(const std::vector<Token>& t, size_t close) {
  const size_t open = opening(t, close);
  if (open == t.size() || index_after(t, open) == close) return false;
  for (size_t k = index_after(t, open); k != close; k = index_after(t, k)) {
    if (t[k].kind != TokenKind::Identifier || !names_builtin_type(t[k].text)) return false;
  }
  const size_t before = index_before(t, open);
  return before == t.size() || (t[before].kind == TokenKind::Identifier
                                    ? is_statement_keyword(t[before].text) &&
                                          !is_one_of(t[before].text, {"sizeof", "alignof"})
                                    : !is_one_of(t[before].text, {")", "]"}));
}

}  // namespace

bool after_prefix_operator(const std::vector<Token>& t, size_t i, std::string_view op) {
  const size_t at = index_before(t, i);
  if (at == t.size() || t[at].text != op) return false;
  const size_t operand = index_before(t, at);
  if (operand == t.size()) return true;
  const Token& o = t[operand];
  if (o.text == ")") return closes_condition(t, operand) || closes_value_cast(t, operand);
  return o.kind != TokenKind::Number && o.text != "]" &&
         (o.kind != TokenKind::Identifier || is_statement_keyword(o.text));
}

bool accessed_as_element(const std::vector<Token>& t, size_t first, size_t last) {
  const size_t after = index_after(t, last);
  return (after != t.size() && t[after].text == "[") || after_prefix_operator(t, first, "*");
}

namespace {

// Whether the ',' at |comma| separates the declarators of a declaration ("const float *a = inp,
// *b = out;", "for (int i = 0, j = 1; ...)"): the statement it stands in, at its own depth,
// starts with one. A statement longer than a scan should go back over (an initialiser list's
// thousands of names) is not taken for one, so that the scans stay linear.
bool separates_declarators(const std::vector<Token>& t, size_t comma) {
  constexpr int kLongest = 256;
  size_t first = comma;
  int steps = 0;
  for (size_t p = index_before(t, comma); p != t.size(); p = index_before(t, first)) {
    if (++steps > kLongest) return false;
    const std::string_view text = t[p].text;
    if (is_one_of(text, {";", "{", "}"})) break;
    if (text == "(") {
      const size_t keyword = index_before(t, p);
      if (keyword == t.size() || t[keyword].text != "for") return false;
      break;
    }
    if (text == "[") return false;
    if (is_one_of(text, {")", "]"})) {
      p = opening(t, p);
      if (p == t.size()) return false;
    }
    first = p;
  }
  // The first declarator's name: the last identifier of the type's words, '*' and '&'.
  size_t name = t.size();
  for (size_t j = first; j != comma && j != t.size(); j = index_after(t, j)) {
    if (t[j].kind == TokenKind::Identifier) {
      name = j;
    } else if (!is_one_of(t[j].text, {"*", "&", "&&", "::"})) {
      break;
    }
  }
  return name != t.size() && name != first && declares_name(t, name);
}

}  // namespace

bool declares_name(const std::vector<Token>& t, size_t k) {
  const size_t p = index_before(t, k);
  if (p == t.size()) return false;
  // Another declarator of a declaration ("float a = 0, b;", "float *p = x, *q = y;").
  const size_t comma = is_one_of(t[p].text, {"*", "&", "&&"}) ? index_before(t, p) : p;
  if (comma != t.size() && t[comma].text == ",") {
    const size_t after = index_after(t, k);
    return after != t.size() && is_one_of(t[after].text, {";", ",", "[", "="}) &&
           separates_declarators(t, comma);
  }
  if (t[p].kind == TokenKind::Identifier && !t[p].in_directive) {
    return !is_statement_keyword(t[p].text);
  }
  // decltype(name) names the declared type.
  const size_t q = t[p].text == "(" ? index_before(t, p) : t.size();
  if (q != t.size() && t[q].text == "decltype") return true;
  if (!is_one_of(t[p].text, {"*", "&", "&&"})) return false;
  // The type's words before the '*' or '&', then the start of a statement or parameter.
  size_t before = index_before(t, p);
  if (before == t.size() || t[before].kind != TokenKind::Identifier ||
      is_statement_keyword(t[before].text)) {
    return false;
  }
  while (before != t.size() && t[before].kind == TokenKind::Identifier &&
         !is_statement_keyword(t[before].text)) {
    before = index_before(t, before);
  }
  const size_t after = index_after(t, k);
  return (before == t.size() || is_one_of(t[before].text, {";", "{", "}", "(", ","})) &&
         after != t.size() && is_one_of(t[after].text, {";", ",", "[", "=", ")"});
}

std::string blank_keeping_lines(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') out += '\n';
  }
  return out;
}

std::vector<size_t> top_level(const std::vector<Token>& t, size_t open, size_t close,
                              std::string_view separator) {
  std::vector<size_t> found;
  for (size_t j = index_after(t, open); j < close; j = index_after(t, j)) {
    const std::string_view text = t[j].text;
    if (text == "(" || text == "[" || text == "{") {
      j = closing(t, j);
      if (j >= close) break;
    } else if (text == separator) {
      found.push_back(j);
    }
  }
  return found;
}

size_t index_before(const std::vector<Token>& t, size_t k) {
  const Token* p = prev_significant(t, k);
  return p ? size_t(p - t.data()) : t.size();
}
size_t index_after(const std::vector<Token>& t, size_t k) {
  const Token* p = next_significant(t, k);
  return p ? size_t(p - t.data()) : t.size();
}

namespace {

// Which bracket token |t| is, opening or closing: its text, or its text with parentheses a
// debug build's rewrite added outside it ("((" is '(', "])" is ']'); 0 when it is none.
char opening_bracket(const Token& t) {
  const std::string_view s = t.text;
  if (s.empty() || !is_one_of(s.substr(s.size() - 1), {"(", "[", "{", "<"})) return 0;
  return s.find_first_not_of('(') >= s.size() - 1 ? s.back() : 0;
}
char closing_bracket(const Token& t) {
  const std::string_view s = t.text;
  if (s.empty() || !is_one_of(s.substr(0, 1), {")", "]", "}", ">"})) return 0;
  return s.find_first_not_of(')', 1) == std::string_view::npos ? s.front() : 0;
}

}  // namespace

size_t closing(const std::vector<Token>& t, size_t open) {
  const char o = opening_bracket(t[open]), c = o == '(' ? ')' : o == '{' ? '}' : ']';
  if (o == 0) return t.size();
  // The partner lex found, unless the tokens were edited since: beyond the end, there is none.
  if (const int32_t p = t[open].partner; p > 0) {
    if (size_t(p) >= t.size() - open) return t.size();
    if (closing_bracket(t[open + size_t(p)]) == c) return open + size_t(p);
  }
  int depth = 0;
  for (size_t k = open; k < t.size(); ++k) {
    if (opening_bracket(t[k]) == o) ++depth;
    if (closing_bracket(t[k]) == c && --depth == 0) return k;
  }
  return t.size();
}

size_t opening(const std::vector<Token>& t, size_t close) {
  const char c = closing_bracket(t[close]), o = c == ')' ? '(' : c == ']' ? '[' : '<';
  if (c == 0) return t.size();
  if (const int32_t p = t[close].partner; p < 0) {
    if (size_t(-int64_t(p)) > close) return t.size();
    if (opening_bracket(t[close - size_t(-int64_t(p))]) == o) return close - size_t(-int64_t(p));
  }
  int depth = 0;
  for (size_t k = close; k != t.size(); k = index_before(t, k)) {
    if (closing_bracket(t[k]) == c) ++depth;
    if (opening_bracket(t[k]) == o && --depth == 0) return k;
  }
  return t.size();
}

bool opens_lambda_body(const std::vector<Token>& t, size_t open) {
  return lambda_captures_end(t, open) != t.size();
}

size_t lambda_captures_end(const std::vector<Token>& t, size_t open) {
  size_t k = index_before(t, open);
  size_t j = k;  // a trailing return type: -> T
  while (j != t.size() &&
         (t[j].kind == TokenKind::Identifier || t[j].text == "::" || t[j].text == "*" ||
          t[j].text == "&" || t[j].text == "<" || t[j].text == ">" || t[j].text == ",")) {
    j = index_before(t, j);
  }
  if (j != t.size() && t[j].text == "->") k = index_before(t, j);
  while (k != t.size() &&
         (t[k].text == "mutable" || t[k].text == "noexcept" || t[k].text == "constexpr")) {
    k = index_before(t, k);
  }
  if (k != t.size() && t[k].text == ")") {
    k = opening(t, k);
    if (k == t.size()) return t.size();
    k = index_before(t, k);
    // A template lambda's parameters: []<class T>(T v) { ... }.
    if (k != t.size() && (t[k].text == ">" || t[k].text == ">>")) {
      int depth = 0;
      for (; k != t.size(); k = index_before(t, k)) {
        if (t[k].text == ">" || t[k].text == ">>") depth += int(t[k].text.size());
        if (t[k].text == "<" && --depth == 0) break;
        if (is_one_of(t[k].text, {";", "{", "}"})) return t.size();
      }
      if (k == t.size()) return t.size();
      k = index_before(t, k);
    }
  }
  return k != t.size() && t[k].text == "]" ? k : t.size();
}

bool opens_class_body(const std::vector<Token>& t, size_t open) {
  // Back over the name and any base clause ("S : public Base<int>") to the class key.
  for (size_t k = index_before(t, open); k != t.size(); k = index_before(t, k)) {
    const std::string_view text = t[k].text;
    if (text == "struct" || text == "class" || text == "union") return true;
    if (t[k].kind != TokenKind::Identifier &&
        !(text == "::" || text == ":" || text == "," || text == "<" || text == ">")) {
      return false;
    }
  }
  return false;
}

void FunctionsWithin::step(const std::vector<Token>& t, size_t i) {
  if (t[i].text == "{") {
    ++depth_;
    if (opened_at_.empty() && (opens_lambda_body(t, i) || (classes_ && opens_class_body(t, i)))) {
      opened_at_.push_back(depth_);
    }
  } else if (t[i].text == "}") {
    if (!opened_at_.empty() && opened_at_.back() == depth_) opened_at_.pop_back();
    --depth_;
  }
}

}  // namespace kjit::codegen
