// A C++ lexer sufficient for rewriting kernel bodies token by token: it knows comments, string
// and character literals (raw strings included), numbers and preprocessor lines, so that a scan
// or a rewrite never touches text inside them by accident.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kjit::codegen {

enum class TokenKind {
  Identifier,
  Number,
  String,     // "...", R"(...)", u8"..." and friends
  Char,       // 'x'
  Punct,      // one operator or punctuator character sequence
  Comment,    // // ... or /* ... */
  Space,      // blanks and newlines (and line continuations)
  Directive,  // the '#' that starts a preprocessor line
};

struct Token {
  TokenKind kind;
  std::string_view text;
  int line;           // 1-based line of the token's first character
  bool in_directive;  // part of a preprocessor line
};

/// Splits |text| into tokens; concatenating every token's text gives |text| back.
std::vector<Token> lex(std::string_view text);

/// True when |name| occurs in |tokens| as a whole identifier (preprocessor lines included).
bool has_identifier(const std::vector<Token>& tokens, std::string_view name);

/// True when |name| is a C++ keyword (int, class, while...).
bool is_keyword(std::string_view name);

/// True when |name| is a valid C identifier that is not a C++ keyword.
bool is_identifier(std::string_view name);

}  // namespace kjit::codegen
