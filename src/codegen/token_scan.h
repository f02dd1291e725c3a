// Walking a token stream by its significant tokens (no spaces or comments) and its brackets:
// shared by the dialect rewriter, the loop marks and the region splitter.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/lexer.h"

namespace kjit::codegen {

/// The significant token after or before token |i|, or null.
const Token* next_significant(const std::vector<Token>& t, size_t i);
const Token* prev_significant(const std::vector<Token>& t, size_t i);

/// The index of the significant token before or after |k|, or t.size().
size_t index_before(const std::vector<Token>& t, size_t k);
size_t index_after(const std::vector<Token>& t, size_t k);

/// The index of the bracket that closes the one at |open| ('(', '{' or '['), or t.size().
/// A bracket may carry parentheses a rewrite added outside it ("((", "])"): it is still the
/// bracket it was.
size_t closing(const std::vector<Token>& t, size_t open);

/// The index of the bracket that opens the one at |close| (')', ']' or '>'), or t.size().
size_t opening(const std::vector<Token>& t, size_t close);

/// Whether |t| is "." or "->".
bool is_member_access(const Token* t);

/// Whether |word| is one of |words|.
bool is_one_of(std::string_view word, std::initializer_list<std::string_view> words);

/// Words that start a statement declaring nothing at its own level, and operators spelled as
/// words ("and"): after one, a name is not being declared.
bool is_statement_keyword(std::string_view word);

/// Whether |word| is a built-in type's name, or a word of one ("unsigned", "const"): a scalar's
/// or a vector's of Metal or CUDA ("uint", "float4", "int64_t").
bool names_builtin_type(std::string_view word);

/// Whether the ')' at |close| ends an if's or a switch's condition or a loop's header: what
/// follows it starts a statement.
bool closes_condition(const std::vector<Token>& t, size_t close);

/// Whether token |i| follows |op| used as a prefix operator ("&tile[i]", "*name"), rather than a
/// binary one ("a & b", "a * name") or a declarator's ("float* name"): not after an operand
/// (but after a condition, "if (c) *p = 1;", or a cast to a built-in type, "(int)*p").
bool after_prefix_operator(const std::vector<Token>& t, size_t i, std::string_view op);

/// Whether the operand that tokens |first| to |last| spell is dereferenced or indexed there
/// ("*p", "p[i]", "*(p + 1)", "(p + 1)[i]").
bool accessed_as_element(const std::vector<Token>& t, size_t first, size_t last);

/// Whether the identifier at |k| is being declared there: after a type ("float name", "T
/// name"), after a type and '*' or '&' at the start of a statement or parameter ("const device
/// float* name,"), or with its type taken (decltype(name)).
bool declares_name(const std::vector<Token>& t, size_t k);

/// The line breaks of |text| alone: what replaces text that is dropped, keeping lines in place.
std::string blank_keeping_lines(std::string_view text);

/// The tokens spelled |separator| between the brackets at |open| and |close|, outside brackets
/// nested in them (the commas of a call's arguments, the semicolons of a for's header). Stops
/// at a nested bracket left open.
std::vector<size_t> top_level(const std::vector<Token>& t, size_t open, size_t close,
                              std::string_view separator);

/// Whether the '{' at |open| starts the body of a lambda: "[...] {", "[...](...) {",
/// "[...]<class T>(...) {", with optional specifiers and a trailing return type before the brace.
bool opens_lambda_body(const std::vector<Token>& t, size_t open);

/// The ']' that ends the captures of the lambda whose body the '{' at |open| starts, or
/// t.size() when it starts none.
size_t lambda_captures_end(const std::vector<Token>& t, size_t open);

/// Whether the '{' at |open| starts the body of a class, struct or union declared in the body:
/// "struct S {", "struct S : Base {", "struct {".
bool opens_class_body(const std::vector<Token>& t, size_t open);

/// Follows the braces of a body token by token, to tell whether a token lies inside the body of
/// a lambda or, with |classes|, of a class (where return leaves a function of its own, not the
/// kernel). Classes count in a body, where they are local; a header's are at namespace scope.
class FunctionsWithin {
 public:
  explicit FunctionsWithin(bool classes = true) : classes_(classes) {}
  /// Takes token |i| into account; call for every token in order.
  void step(const std::vector<Token>& t, size_t i);
  bool inside() const { return !opened_at_.empty(); }

 private:
  bool classes_;
  int depth_ = 0;
  std::vector<int> opened_at_;  // the brace depths at which such bodies opened
};

}  // namespace kjit::codegen
