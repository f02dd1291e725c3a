#include "codegen/lexer.h"

#include <algorithm>
#include <array>
#include <limits>

namespace kjit::codegen {
namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  std::vector<Token> run() {
    bool line_start = true;  // only blanks and comments so far on this line
    while (i_ < s_.size()) {
      size_t start = i_;
      int line = line_;
      respelled_ = {};
      TokenKind kind = next(line_start);
      std::string_view text = s_.substr(start, i_ - start);
      for (char c : text) line_ += c == '\n';
      if (kind == TokenKind::Directive) in_directive_ = true;
      tokens_.push_back({kind, respelled_.empty() ? text : respelled_, line, in_directive_});
      if (in_directive_ && ends_logical_line(kind, text)) in_directive_ = false;
      if (kind == TokenKind::Space || kind == TokenKind::Comment) {
        if (text.find('\n') != std::string_view::npos) line_start = true;
      } else {
        line_start = false;
      }
    }
    return std::move(tokens_);
  }

 private:
  // A newline ends a preprocessor line unless it is escaped by a backslash.
  static bool ends_logical_line(TokenKind kind, std::string_view text) {
    if (kind != TokenKind::Space && kind != TokenKind::Comment) return false;
    for (size_t p = 0; p < text.size(); ++p) {
      if (text[p] != '\n') continue;
      const bool escaped =
          (p >= 1 && text[p - 1] == '\\') || (p >= 2 && text[p - 1] == '\r' && text[p - 2] == '\\');
      if (!escaped) return true;
    }
    return false;
  }

  char at(size_t k) const { return k < s_.size() ? s_[k] : '\0'; }

  TokenKind next(bool line_start) {
    char c = s_[i_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
        (c == '\\' && (at(i_ + 1) == '\n' || (at(i_ + 1) == '\r' && at(i_ + 2) == '\n')))) {
      while (i_ < s_.size()) {
        char d = s_[i_];
        if (d == ' ' || d == '\t' || d == '\n' || d == '\r' || d == '\f' || d == '\v') {
          ++i_;
        } else if (d == '\\' && at(i_ + 1) == '\n') {
          i_ += 2;
        } else if (d == '\\' && at(i_ + 1) == '\r' && at(i_ + 2) == '\n') {
          i_ += 3;
        } else {
          break;
        }
      }
      return TokenKind::Space;
    }
    if (c == '/' && at(i_ + 1) == '/') {
      // A backslash at the end of the line continues the comment on the next one (the
      // compiler splices lines before it sees comments).
      while (i_ < s_.size() &&
             (s_[i_] != '\n' || at(i_ - 1) == '\\' || (at(i_ - 1) == '\r' && at(i_ - 2) == '\\'))) {
        ++i_;
      }
      return TokenKind::Comment;
    }
    if (c == '/' && at(i_ + 1) == '*') {
      size_t end = s_.find("*/", i_ + 2);
      i_ = end == std::string_view::npos ? s_.size() : end + 2;
      return TokenKind::Comment;
    }
    if (line_start && !in_directive_ && (c == '#' || (c == '%' && at(i_ + 1) == ':'))) {
      i_ += c == '#' ? 1 : 2;
      if (c == '%') respelled_ = "#";
      return TokenKind::Directive;
    }
    if (is_ident_start(c)) {
      size_t start = i_;
      while (i_ < s_.size() && is_ident_char(s_[i_])) ++i_;
      std::string_view word = s_.substr(start, i_ - start);
      if (at(i_) == '"' && is_string_prefix(word)) {
        return word.back() == 'R' ? raw_string() : quoted('"', TokenKind::String);
      }
      if (at(i_) == '\'' && (word == "u8" || word == "u" || word == "U" || word == "L")) {
        return quoted('\'', TokenKind::Char);
      }
      return TokenKind::Identifier;
    }
    if (is_digit(c) || (c == '.' && is_digit(at(i_ + 1)))) {
      number();
      return TokenKind::Number;
    }
    if (c == '"') return quoted('"', TokenKind::String);
    if (c == '\'') return quoted('\'', TokenKind::Char);
    punct();
    return TokenKind::Punct;
  }

  static bool is_string_prefix(std::string_view w) {
    static constexpr std::array<std::string_view, 9> kPrefixes = {"u8",  "u",  "U",  "L", "R",
                                                                  "u8R", "uR", "UR", "LR"};
    return std::find(kPrefixes.begin(), kPrefixes.end(), w) != kPrefixes.end();
  }

  TokenKind quoted(char q, TokenKind kind) {
    ++i_;  // opening quote
    while (i_ < s_.size() && s_[i_] != q && s_[i_] != '\n') {
      i_ += s_[i_] == '\\' ? 2 : 1;
    }
    if (i_ < s_.size() && s_[i_] == q) ++i_;
    i_ = std::min(i_, s_.size());
    return kind;
  }

  TokenKind raw_string() {
    // R"delim( ... )delim"
    size_t open = s_.find('(', i_);
    if (open == std::string_view::npos) return quoted('"', TokenKind::String);
    std::string close(1, ')');
    close.append(s_.substr(i_ + 1, open - i_ - 1));
    close.push_back('"');
    size_t end = s_.find(close, open + 1);
    i_ = end == std::string_view::npos ? s_.size() : end + close.size();
    return TokenKind::String;
  }

  void number() {
    // A preprocessing number: digits, letters, '.', and signs after an exponent letter.
    ++i_;
    while (i_ < s_.size()) {
      char d = s_[i_];
      char prev = s_[i_ - 1];
      if (is_ident_char(d) || d == '.' || (d == '\'' && is_ident_char(at(i_ + 1)))) {
        ++i_;
      } else if ((d == '+' || d == '-') &&
                 (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P')) {
        ++i_;
      } else {
        break;
      }
    }
  }

  // A digraph is the punctuator it spells ("<%" is "{"), so that every scan sees the braces and
  // brackets the compiler sees. As in C++, "<::" not followed by ':' or '>' is '<' then "::"
  // (std::vector<::T>).
  bool digraph() {
    struct Digraph {
      std::string_view spelling, meaning;
    };
    static constexpr Digraph kDigraphs[] = {{"%:%:", "##"}, {"<%", "{"}, {"%>", "}"},
                                            {"<:", "["},    {":>", "]"}, {"%:", "#"}};
    if (s_.substr(i_, 3) == "<::" && at(i_ + 3) != ':' && at(i_ + 3) != '>') return false;
    for (const Digraph& d : kDigraphs) {
      if (s_.substr(i_, d.spelling.size()) == d.spelling) {
        i_ += d.spelling.size();
        respelled_ = d.meaning;
        return true;
      }
    }
    return false;
  }

  void punct() {
    if (digraph()) return;
    static constexpr std::array<std::string_view, 22> kMulti = {
        "<<=", ">>=", "...", "->*", "::", "->", "++", "--", "<<", ">>", "<=",
        ">=",  "==",  "!=",  "&&",  "||", "+=", "-=", "*=", "/=", "%=", "##"};
    for (std::string_view m : kMulti) {
      if (s_.substr(i_, m.size()) == m) {
        i_ += m.size();
        return;
      }
    }
    ++i_;
  }

  std::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
  bool in_directive_ = false;
  std::string_view respelled_;  // the text of the token just read, when it is not its spelling
  std::vector<Token> tokens_;
};

constexpr std::array<std::string_view, 84> kKeywords = {
    "alignas",       "alignof",     "and",
    "and_eq",        "asm",         "auto",
    "bitand",        "bitor",       "bool",
    "break",         "case",        "catch",
    "char",          "char8_t",     "char16_t",
    "char32_t",      "class",       "compl",
    "concept",       "const",       "consteval",
    "constexpr",     "constinit",   "const_cast",
    "continue",      "co_await",    "co_return",
    "co_yield",      "decltype",    "default",
    "delete",        "do",          "double",
    "dynamic_cast",  "else",        "enum",
    "explicit",      "export",      "extern",
    "false",         "float",       "for",
    "friend",        "goto",        "if",
    "inline",        "int",         "long",
    "mutable",       "namespace",   "new",
    "noexcept",      "not",         "not_eq",
    "nullptr",       "operator",    "or",
    "or_eq",         "private",     "protected",
    "public",        "register",    "reinterpret_cast",
    "requires",      "return",      "short",
    "signed",        "sizeof",      "static",
    "static_assert", "static_cast", "struct",
    "switch",        "template",    "this",
    "thread_local",  "throw",       "true",
    "try",           "typedef",     "typeid",
    "typename",      "union",       "unsigned"};
constexpr std::array<std::string_view, 8> kMoreKeywords = {"using",   "virtual", "void", "volatile",
                                                           "wchar_t", "while",   "xor",  "xor_eq"};

// Sets the links of |t| (Token::run_ahead, run_behind, partner) in one pass each way. A text
// of more tokens than the links can count gets none: its scans walk.
void link(std::vector<Token>& t) {
  if (t.size() >= size_t(std::numeric_limits<int32_t>::max())) return;
  for (size_t k = t.size(), after = t.size(); k-- > 0;) {
    if (is_significant(t[k])) {
      after = k;
    } else {
      t[k].run_ahead = static_cast<uint32_t>(after - k);
    }
  }
  for (size_t k = 0, first = 0; k < t.size(); ++k) {
    if (is_significant(t[k])) {
      first = k + 1;
    } else {
      t[k].run_behind = static_cast<uint32_t>(k - first + 1);
    }
  }
  // One stack of open brackets per kind: a closing bracket pairs with the innermost one open.
  static constexpr std::string_view kOpen[] = {"(", "[", "{", "<"};
  static constexpr std::string_view kClose[] = {")", "]", "}", ">"};
  std::array<std::vector<size_t>, 4> open;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k].kind != TokenKind::Punct) continue;
    for (size_t b = 0; b < 4; ++b) {
      if (t[k].text == kOpen[b]) {
        t[k].partner = kNoPartner;
        open[b].push_back(k);
      } else if (t[k].text == kClose[b]) {
        t[k].partner = -kNoPartner;
        if (open[b].empty()) continue;
        const size_t o = open[b].back();
        open[b].pop_back();
        t[o].partner = static_cast<int32_t>(k - o);
        t[k].partner = -static_cast<int32_t>(k - o);
      }
    }
  }
}

}  // namespace

std::vector<Token> lex(std::string_view text) {
  std::vector<Token> tokens = Lexer(text).run();
  link(tokens);
  return tokens;
}

bool has_identifier(const std::vector<Token>& tokens, std::string_view name) {
  return std::any_of(tokens.begin(), tokens.end(), [&](const Token& t) {
    return t.kind == TokenKind::Identifier && t.text == name;
  });
}

bool is_keyword(std::string_view name) {
  auto is = [&](auto& list) { return std::find(list.begin(), list.end(), name) != list.end(); };
  return is(kKeywords) || is(kMoreKeywords);
}

size_t identifier_end(std::string_view text, size_t at) {
  while (at < text.size() && is_ident_char(text[at])) ++at;
  return at;
}

bool is_identifier(std::string_view name) {
  if (name.empty() || !is_ident_start(name[0])) return false;
  return std::all_of(name.begin(), name.end(), is_ident_char) && !is_keyword(name);
}

}  // namespace kjit::codegen
