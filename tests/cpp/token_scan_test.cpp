// The scans of token_scan.h follow the links lex sets (Token::run_ahead, run_behind, partner):
// they must find what walking token by token finds, in lex's tokens, in slices of them, in
// tokens turned into spaces, and in tokens made without links.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/lexer.h"
#include "codegen/token_scan.h"

namespace kjit::codegen {
namespace {

// Walking token by token, as the scans did before they had links.
size_t walk_after(const std::vector<Token>& t, size_t i) {
  for (size_t k = i + 1; k < t.size(); ++k) {
    if (is_significant(t[k])) return k;
  }
  return t.size();
}
size_t walk_before(const std::vector<Token>& t, size_t i) {
  for (size_t k = i; k-- > 0;) {
    if (is_significant(t[k])) return k;
  }
  return t.size();
}
size_t walk_closing(const std::vector<Token>& t, size_t open) {
  const std::string_view o = t[open].text, c = o == "(" ? ")" : o == "{" ? "}" : "]";
  int depth = 0;
  for (size_t k = open; k < t.size(); ++k) {
    if (t[k].text == o) ++depth;
    if (t[k].text == c && --depth == 0) return k;
  }
  return t.size();
}
size_t walk_opening(const std::vector<Token>& t, size_t close) {
  const std::string_view c = t[close].text, o = c == ")" ? "(" : c == "]" ? "[" : "<";
  int depth = 0;
  for (size_t k = close + 1; k-- > 0;) {
    if (t[k].text == c) ++depth;
    if (t[k].text == o && --depth == 0) return k;
  }
  return t.size();
}

// Every scan of |t| from every token agrees with the walk.
void expect_scans_walk(const std::vector<Token>& t, const std::string& what) {
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(index_after(t, i), walk_after(t, i)) << what << ", token " << i;
    EXPECT_EQ(index_before(t, i), walk_before(t, i)) << what << ", token " << i;
    const std::string_view text = t[i].text;
    if (text == "(" || text == "[" || text == "{") {
      EXPECT_EQ(closing(t, i), walk_closing(t, i)) << what << ", token " << i;
    }
    if (text == ")" || text == "]" || text == ">") {
      EXPECT_EQ(opening(t, i), walk_opening(t, i)) << what << ", token " << i;
    }
  }
}

const std::vector<std::string>& texts() {
  static const std::vector<std::string> kTexts = {
      "",
      "// only a comment",
      "  \n  ",
      "a = (b + c) * d[e] /* one */ /* two */\n// three\n{ f(g(h), i[j[k]]); }",
      "x = ((((y)))); /**/ z = [&](int q) { return q < 2 && r > 3; };",
      "f(a < b, c > d); vector<vector<int>> v; p->q<T, U>(1) > 2;",
      "unclosed ( [ { and stray ) ] } and > <",
      "if (a) <% b<:0:> = 1; %> // digraphs\n",
      "#define M(a) { (a) }\n#if X\n{\n#endif\nint y[2] = {1, 2};\n",
      "s = \"( { [\"; c = '('; r = R\"x(])x\"; // ( [\n",
  };
  return kTexts;
}

TEST(TokenScan, LinksFindWhatWalkingFinds) {
  for (const std::string& text : texts()) expect_scans_walk(lex(text), text);
}

TEST(TokenScan, LinksHoldInEverySlice) {
  for (const std::string& text : texts()) {
    const std::vector<Token> all = lex(text);
    for (size_t begin = 0; begin <= all.size(); ++begin) {
      for (size_t end = begin; end <= all.size(); ++end) {
        expect_scans_walk(std::vector<Token>(all.begin() + begin, all.begin() + end),
                          text + " [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
      }
    }
  }
}

// Whether every bracket of [begin, end) that pairs with another pairs with one inside.
bool pairs_within(const std::vector<Token>& t, size_t begin, size_t end) {
  for (size_t j = begin; j < end; ++j) {
    const int32_t p = t[j].partner;
    if (p == 0 || p == kNoPartner || p == -kNoPartner) continue;
    const size_t other = j + size_t(int64_t(p));
    if (other < begin || other >= end) return false;
  }
  return true;
}

TEST(TokenScan, LinksHoldWhereTokensBecomeSpaces) {
  // As region mode blanks a declaration: every stretch whose brackets pair within it.
  for (const std::string& text : texts()) {
    const std::vector<Token> all = lex(text);
    for (size_t begin = 0; begin < all.size(); ++begin) {
      for (size_t end = begin + 1; end <= all.size() && end <= begin + 6; ++end) {
        if (!pairs_within(all, begin, end)) continue;
        std::vector<Token> t = all;
        for (size_t j = begin; j < end; ++j) {
          t[j].kind = TokenKind::Space;
          t[j].text = {};
        }
        expect_scans_walk(
            t, text + " blanked in [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
      }
    }
  }
}

TEST(TokenScan, TokensWithoutLinksAreWalked) {
  for (const std::string& text : texts()) {
    std::vector<Token> t = lex(text);
    for (Token& token : t) token.run_ahead = token.run_behind = token.partner = 0;
    expect_scans_walk(t, text + " without links");
  }
}

TEST(TokenScan, LongRunsOfCommentsAreOneStep) {
  // What links are for: from inside a run, the neighbours at once.
  std::string text = "a";
  for (int k = 0; k < 1000; ++k) text += " // c\n";
  text += "b";
  const std::vector<Token> t = lex(text);
  EXPECT_EQ(t[1].run_ahead, t.size() - 2);
  EXPECT_EQ(t[t.size() - 2].run_behind, t.size() - 2);
  EXPECT_EQ(index_after(t, 500), t.size() - 1);
  EXPECT_EQ(index_before(t, 500), 0u);
}

TEST(TokenScan, BracketsARewriteWrappedInParenthesesStillPair) {
  // A debug build wraps an operand in parentheses by joining them to its first and last
  // tokens: "*(p + 1)" becomes "((p + 1))" held in the tokens "((" ... "))".
  std::vector<Token> t = lex("f(*(p + 1)) + a[*(q)];");
  ASSERT_EQ(t[2].text, "*");
  const size_t open = index_after(t, 2), close = closing(t, open);
  ASSERT_EQ(t[close].text, ")");
  t[2].kind = TokenKind::Space;
  t[2].text = {};
  std::vector<std::string> joined = {"((", "))"};
  t[open].text = joined[0];
  t[close].text = joined[1];
  for (Token& token : t) token.partner = 0;  // as though edited past lex's links
  EXPECT_EQ(closing(t, open), close);
  EXPECT_EQ(opening(t, close), open);
  EXPECT_EQ(closing(t, 1), index_after(t, close));  // f( still closes after the operand
  EXPECT_EQ(opening(t, index_after(t, close)), 1u);
  // A subscript's closing bracket with a parenthesis after it: "])".
  const size_t square = t.size() - 2;
  ASSERT_EQ(t[square].text, "]");
  std::string square_joined = "])";
  t[square].text = square_joined;
  const size_t square_open = opening(t, square);
  ASSERT_LT(square_open, t.size());
  EXPECT_EQ(t[square_open].text, "[");
  EXPECT_EQ(closing(t, square_open), square);
  // Text that only starts like a bracket is none.
  std::string not_bracket = "(x";
  t[open].text = not_bracket;
  EXPECT_EQ(closing(t, open), t.size());
}

// Whether each '{' of |text| opens a lambda's body, in order.
std::vector<bool> lambda_bodies(const std::string& text) {
  const std::vector<Token> t = lex(text);
  std::vector<bool> opens;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k].text == "{") opens.push_back(opens_lambda_body(t, k));
  }
  return opens;
}

TEST(TokenScan, LambdaBodiesAreFoundWithTheirTemplateParameters) {
  EXPECT_EQ(lambda_bodies("auto f = [](T v) { return v; };"), std::vector<bool>{true});
  EXPECT_EQ(lambda_bodies("auto f = []<class T>(T v) { return v; };"), std::vector<bool>{true});
  EXPECT_EQ(lambda_bodies("auto f = [&]<class T, int N = 2>(vec<T, N> v) mutable -> T { };"),
            std::vector<bool>{true});
  EXPECT_EQ(lambda_bodies("auto f = []<class T = vec<int>>(T v) { };"), std::vector<bool>{true});
  // A comparison before a call's parentheses, and a function's body, open none.
  EXPECT_EQ(lambda_bodies("if (a[i] > f(x)) { } void g(int v) { }"),
            (std::vector<bool>{false, false}));
}

// The names that declares_name says |text| declares.
std::vector<std::string> declared(const std::string& text) {
  const std::vector<Token> t = lex(text);
  std::vector<std::string> names;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k].kind == TokenKind::Identifier && declares_name(t, k)) names.emplace_back(t[k].text);
  }
  return names;
}

using Names = std::vector<std::string>;

TEST(TokenScan, EveryDeclaratorOfADeclarationIsDeclared) {
  EXPECT_EQ(declared("float a = 0, b, *p = x, &r = y, c[4];"), (Names{"a", "b", "p", "r", "c"}));
  EXPECT_EQ(declared("for (int i = 0, j = f(1, 2); i < n; ++i) {}"), (Names{"i", "j"}));
  EXPECT_EQ(declared("vec<float, 4> v = w, u;"), Names{});  // the type's comma: unsure
}

TEST(TokenScan, CommasOfExpressionsDeclareNothing) {
  // The comma operator, arguments, captures and a product's operands.
  EXPECT_EQ(declared("a = 1, b = 2; x = y, *p = z; return a, b;"), Names{});
  EXPECT_EQ(declared("f(a, *p = 3); g(x, &y); [&a, &b] {}; [x, y = 2] {};"), Names{});
  EXPECT_EQ(declared("T v(a, *p); s = a * b, *q = r;"), Names{"v"});
}

TEST(TokenScan, ALongListIsScannedInLinearTime) {
  // An initialiser list of many names: each comma's scan stops within a bound.
  std::string text = "float v[] = {x0";
  for (int k = 1; k < 20000; ++k) text += ", x" + std::to_string(k);
  text += "};";
  EXPECT_EQ(declared(text), Names{"v"});
}

}  // namespace
}  // namespace kjit::codegen
