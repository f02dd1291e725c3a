// A C++ lexer sufficient for rewriting kernel bodies token by token: it knows comments, string
// and character literals (raw strings included), numbers and preprocessor lines, so that a scan
// or a rewrite never touches text inside them by accident.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::codegen {

enum class TokenKind {
  Identifier,
  Number,
  String,     // "...", R"(...)", u8"..." and friends
  Char,       // 'x'
  Punct,      // one operator or punctuator character sequence (a digraph: what it spells)
  Comment,    // // ... or /* ... */
  Space,      // blanks and newlines (and line continuations)
  Directive,  // the '#' that starts a preprocessor line
};

struct Token {
  TokenKind kind;
  std::string_view text;
  int line;           // 1-based line of the token's first character
  bool in_directive;  // part of a preprocessor line
  // Links that lex sets so that the scans of token_scan.h take one step where they would walk,
  // keeping every stage linear in the text (0: no link, walk). In a run of spaces and comments:
  // how many tokens from this one to the first after the run, and back to the run's first. For
  // a bracket ( [ { < or ) ] } >: the distance to the one that pairs with it by depth among
  // brackets of its kind (kNoPartner when none does). The links stay right in a slice of lex's
  // tokens and where tokens are turned into spaces; a scan checks a partner before using it.
  uint32_t run_ahead = 0, run_behind = 0;
  int32_t partner = 0;
};

/// The partner of a bracket that has none: a distance past the end of any token list.
inline constexpr int32_t kNoPartner = INT32_MAX;

/// Whether |t| is neither a space nor a comment.
inline bool is_significant(const Token& t) {
  return t.kind != TokenKind::Space && t.kind != TokenKind::Comment;
}

/// Splits |text| into tokens, with their links; concatenating every token's text gives |text|
/// back, but for digraphs, whose text is the punctuator they spell ("<%" is "{", "%:" is "#").
std::vector<Token> lex(std::string_view text);

/// True when |name| occurs in |tokens| as a whole identifier (preprocessor lines included).
bool has_identifier(const std::vector<Token>& tokens, std::string_view name);

/// True when |name| is a C++ keyword (int, class, while...).
bool is_keyword(std::string_view name);

/// Where the run of identifier characters (letters, digits, '_') starting at |at| in |text| ends.
size_t identifier_end(std::string_view text, size_t at);

/// True when |name| is a valid C identifier that is not a C++ keyword.
bool is_identifier(std::string_view name);

}  // namespace kjit::codegen
