#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/lexer.h"

namespace kjit::codegen {
namespace {

std::string concat(const std::vector<Token>& tokens) {
  std::string s;
  for (const Token& t : tokens) s += t.text;
  return s;
}

// The first token whose text is exactly |text|, or nullptr.
const Token* find_token(const std::vector<Token>& tokens, std::string_view text) {
  for (const Token& t : tokens) {
    if (t.text == text) return &t;
  }
  return nullptr;
}

// Every token that is neither blank nor a comment.
std::vector<Token> significant(const std::vector<Token>& tokens) {
  std::vector<Token> out;
  for (const Token& t : tokens) {
    if (t.kind != TokenKind::Space && t.kind != TokenKind::Comment) out.push_back(t);
  }
  return out;
}

TEST(Lexer, RoundTripsText) {
  const std::string text = "uint i = x[0]; // thread_position_in_grid\n/* a */ R\"(b)\" 'c'\n";
  EXPECT_EQ(concat(lex(text)), text);
}

TEST(Lexer, IdentifiersInCommentsAndStringsDoNotCount) {
  auto t = lex("// thread_position_in_grid\nconst char* s = \"inp_shape\"; /* x_ndim */");
  EXPECT_FALSE(has_identifier(t, "thread_position_in_grid"));
  EXPECT_FALSE(has_identifier(t, "inp_shape"));
  EXPECT_FALSE(has_identifier(t, "x_ndim"));
  EXPECT_TRUE(has_identifier(t, "s"));
}

TEST(Lexer, RoundTripsTrickyText) {
  const std::vector<std::string> texts = {
      "auto r = R\"xy(a )\" \"b)xy\" c)xy\";\n",
      "auto s = \"esc\\\"aped \\\\\" + 'q';\n",
      "char a = '\\''; char b = '\"'; char c = '\\\\';\n",
      "x = 1; // comment with \"quote and 'tick\n/* block\n * comment */ y = 2;\n",
      "int v = a \\\n    + b;\n",
      "#define M(a) \\\n  ((a) + 1)\n#include <metal_stdlib>\n",
      "float f = 1.5e-3f + 0x1p3 + 1'000 + .5 + 1e+5 + 0x1P-3f + 07 + 0b101 + 2.;\n",
      "u8\"utf\" u\"w\" U\"W\" L\"l\" LR\"(raw)\" u8R\"d(raw2)d\" L'c'\n",
      "a<<=b; c->*d; e...f; g::h; i##j; k>>=l;\n",
      "",
      "\r\n\t\v\f",
      "unterminated \"string\n",
      "unterminated 'c\n",
      "/* unterminated comment",
      "R\"never(closed",
      "x\\\r\ny\r\n",
      "#",
      "\\",
  };
  for (const std::string& text : texts) {
    EXPECT_EQ(concat(lex(text)), text) << text;
  }
}

// As the compiler splices lines before it sees comments, a backslash at the end of a // comment
// makes the next line part of it; lines after keep their numbers.
TEST(Lexer, ALineCommentEndingInABackslashGoesOnToTheNextLine) {
  for (const char* newline : {"\n", "\r\n"}) {
    const std::string text = std::string("a = 1; // note \\") + newline + "b = 2; }" + newline +
                             "c = 3;";
    const std::vector<Token> t = lex(text);
    EXPECT_EQ(concat(t), text);
    EXPECT_FALSE(has_identifier(t, "b"));
    EXPECT_EQ(find_token(t, "}"), nullptr);
    ASSERT_NE(find_token(t, "c"), nullptr);
    EXPECT_EQ(find_token(t, "c")->line, 3);
  }
  // A backslash before the end of the line does not continue it.
  EXPECT_TRUE(has_identifier(lex("// a \\ b\nc = 1;"), "c"));
}

TEST(Lexer, RawStringsWithDelimiters) {
  // Neither )" nor )x" closes a raw string delimited by xy.
  const std::string raw = "R\"xy(a )\" b)x\" c)xy\"";
  const std::string text = "auto r = " + raw + "; int after;";
  auto t = lex(text);
  const Token* s = find_token(t, raw);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->kind, TokenKind::String);
  // Nothing inside the raw string is an identifier; what follows it is.
  EXPECT_FALSE(has_identifier(t, "b"));
  EXPECT_FALSE(has_identifier(t, "c"));
  EXPECT_TRUE(has_identifier(t, "after"));
}

TEST(Lexer, RawStringSpanningLines) {
  auto t = lex("x = R\"(line one\nthreadgroup_barrier\n)\"; y\n");
  EXPECT_FALSE(has_identifier(t, "threadgroup_barrier"));
  const Token* y = find_token(t, "y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->line, 3);
}

TEST(Lexer, PrefixedStringsAndChars) {
  for (std::string_view lit : {"u8\"a\"", "u\"a\"", "U\"a\"", "L\"a\"", "LR\"(a)\"", "u8R\"z(a)z\"",
                               "uR\"(a)\"", "UR\"(a)\""}) {
    const std::string text = std::string(lit) + ";";
    auto t = lex(text);
    ASSERT_GE(t.size(), 2u) << lit;
    EXPECT_EQ(t[0].kind, TokenKind::String) << lit;
    EXPECT_EQ(t[0].text, lit);
  }
  auto c = lex("L'x';");
  EXPECT_EQ(c[0].kind, TokenKind::Char);
  EXPECT_EQ(c[0].text, "L'x'");
}

TEST(Lexer, EscapedQuotesStayInsideLiterals) {
  auto t = lex("s = \"a\\\"threadgroup\\\"b\"; c = '\\''; d = '\"'; e = device;");
  auto sig = significant(t);
  std::vector<std::string_view> texts;
  for (const Token& k : sig) texts.push_back(k.text);
  const std::vector<std::string_view> expected = {"s",     "=",    "\"a\\\"threadgroup\\\"b\"",
                                                  ";",     "c",    "=",
                                                  "'\\''", ";",    "d",
                                                  "=",     "'\"'", ";",
                                                  "e",     "=",    "device",
                                                  ";"};
  EXPECT_EQ(texts, expected);
  EXPECT_EQ(sig[2].kind, TokenKind::String);
  EXPECT_EQ(sig[6].kind, TokenKind::Char);
  EXPECT_EQ(sig[10].kind, TokenKind::Char);
  EXPECT_FALSE(has_identifier(t, "threadgroup"));
  EXPECT_TRUE(has_identifier(t, "device"));
}

TEST(Lexer, Comments) {
  auto t = lex("a // b \"c\n/* d\n e */ f /* g */ h // i");
  std::vector<std::string_view> comments;
  for (const Token& k : t) {
    if (k.kind == TokenKind::Comment) comments.push_back(k.text);
  }
  const std::vector<std::string_view> expected = {"// b \"c", "/* d\n e */", "/* g */", "// i"};
  EXPECT_EQ(comments, expected);
  for (std::string_view id : {"a", "f", "h"}) EXPECT_TRUE(has_identifier(t, id)) << id;
  for (std::string_view id : {"b", "c", "d", "e", "g", "i"}) EXPECT_FALSE(has_identifier(t, id));
}

TEST(Lexer, Numbers) {
  for (std::string_view num :
       {"1.5e-3f", "0x1p3", "0x1P-3f", "1'000", "1'000.5", ".5", "2.", "1e+5", "1E-5", "0x10",
        "0xffu", "7ull", "0b1010", "1.0h", "0x1.8p+1", "3.f"}) {
    auto t = lex(num);
    ASSERT_EQ(t.size(), 1u) << num;
    EXPECT_EQ(t[0].kind, TokenKind::Number) << num;
    EXPECT_EQ(t[0].text, num);
  }
  // A sign after a letter that is not an exponent is an operator.
  auto t = significant(lex("a-1 0x1f-2 1.5+x"));
  std::vector<std::string_view> texts;
  for (const Token& k : t) texts.push_back(k.text);
  const std::vector<std::string_view> expected = {"a", "-", "1", "0x1f", "-", "2", "1.5", "+", "x"};
  EXPECT_EQ(texts, expected);
  // A digit separator between digits, a char literal elsewhere.
  auto u = significant(lex("1'000 + 'a'"));
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0].text, "1'000");
  EXPECT_EQ(u[2].kind, TokenKind::Char);
}

TEST(Lexer, WholeIdentifierMatching) {
  auto t = lex("threadgroup_barrier(mem_flags::mem_threadgroup); x = inp_shapes[0];");
  EXPECT_FALSE(has_identifier(t, "threadgroup"));
  EXPECT_TRUE(has_identifier(t, "threadgroup_barrier"));
  EXPECT_TRUE(has_identifier(t, "mem_threadgroup"));
  EXPECT_FALSE(has_identifier(t, "inp_shape"));
  EXPECT_TRUE(has_identifier(t, "inp_shapes"));
  EXPECT_FALSE(has_identifier(t, "mem"));
  EXPECT_FALSE(has_identifier(t, "shapes"));

  auto u = lex("threadgroup float buf[4]; int n = inp_shape[0];");
  EXPECT_TRUE(has_identifier(u, "threadgroup"));
  EXPECT_FALSE(has_identifier(u, "threadgroup_barrier"));
  EXPECT_TRUE(has_identifier(u, "inp_shape"));
  EXPECT_FALSE(has_identifier(u, "inp_shapes"));
  EXPECT_FALSE(has_identifier(u, "inp"));
}

TEST(Lexer, IdentifiersInPreprocessorLinesCount) {
  auto t = lex("#define N inp_shape[0]\nint x = N;\n");
  EXPECT_TRUE(has_identifier(t, "inp_shape"));
}

TEST(Lexer, LineNumbers) {
  const std::string text =
      "a\n"                // 1
      "b /* c\n"           // 2
      "d */ e\n"           // 3
      "R\"(\n"             // 4
      ")\" f // g\n"       // 5
      "h \\\n"             // 6
      "i\n"                // 7
      "\"s\" 'c' 1.5f\n";  // 8
  auto t = lex(text);
  auto line_of = [&](std::string_view text) {
    const Token* k = find_token(t, text);
    return k ? k->line : -1;
  };
  EXPECT_EQ(line_of("a"), 1);
  EXPECT_EQ(line_of("b"), 2);
  EXPECT_EQ(line_of("/* c\nd */"), 2);
  EXPECT_EQ(line_of("e"), 3);
  EXPECT_EQ(line_of("R\"(\n)\""), 4);
  EXPECT_EQ(line_of("f"), 5);
  EXPECT_EQ(line_of("// g"), 5);
  EXPECT_EQ(line_of("h"), 6);
  EXPECT_EQ(line_of("i"), 7);  // physical line, after a line continuation
  EXPECT_EQ(line_of("\"s\""), 8);
  EXPECT_EQ(line_of("'c'"), 8);
  EXPECT_EQ(line_of("1.5f"), 8);
}

TEST(Lexer, PreprocessorLines) {
  auto t =
      lex("#define M(a) \\\n"
          "  ((a) + 1)\n"
          "int z = M(2);\n"
          "  # pragma once\n"
          "/* lead */ #if 1\n"
          "x # y\n");
  auto in_directive = [&](std::string_view text, int line) {
    for (const Token& k : t) {
      if (k.text == text && k.line == line) return static_cast<int>(k.in_directive);
    }
    return -1;
  };
  EXPECT_EQ(t[0].kind, TokenKind::Directive);
  EXPECT_EQ(in_directive("define", 1), 1);
  EXPECT_EQ(in_directive("a", 2), 1);  // continued line
  EXPECT_EQ(in_directive("1", 2), 1);
  EXPECT_EQ(in_directive("int", 3), 0);
  EXPECT_EQ(in_directive("z", 3), 0);
  EXPECT_EQ(in_directive("pragma", 4), 1);
  EXPECT_EQ(in_directive("if", 5), 1);
  EXPECT_EQ(in_directive("x", 6), 0);
  EXPECT_EQ(in_directive("y", 6), 0);
  int directives = 0;
  for (const Token& k : t) directives += k.kind == TokenKind::Directive;
  EXPECT_EQ(directives, 3);  // '#' in the middle of a line is punctuation
}

TEST(Lexer, PreprocessorLineContinuedWithCrLf) {
  auto t = lex("#define M \\\r\n  value\r\nint z;\r\n");
  const Token* v = find_token(t, "value");
  const Token* z = find_token(t, "z");
  ASSERT_NE(v, nullptr);
  ASSERT_NE(z, nullptr);
  EXPECT_TRUE(v->in_directive);
  EXPECT_FALSE(z->in_directive);
  EXPECT_EQ(v->line, 2);
}

// The texts of the tokens that are neither blank nor comments, joined by spaces.
std::string significant_texts(std::string_view text) {
  std::string out;
  for (const Token& t : significant(lex(text))) {
    if (!out.empty()) out += ' ';
    out += t.text;
  }
  return out;
}

TEST(Lexer, DigraphsAreThePunctuatorsTheySpell) {
  EXPECT_EQ(significant_texts("if (a) <% b<:0:> = 1; %>"), "if ( a ) { b [ 0 ] = 1 ; }");
  EXPECT_EQ(significant_texts("x%>y"), "x } y");
  // Tokens that only share characters with a digraph stay what they are.
  EXPECT_EQ(significant_texts("a %= b; c <= d; e :: f; g << h; i % > j"),
            "a %= b ; c <= d ; e :: f ; g << h ; i % > j");
  EXPECT_EQ(significant_texts("a::>b"), "a :: > b");
  // A digraph '#' starts a preprocessor line, and "%:%:" pastes as "##" does.
  const std::vector<Token> t = lex("%:define CAT(a, b) a %:%: b\nint x;\n");
  EXPECT_EQ(t[0].kind, TokenKind::Directive);
  EXPECT_EQ(t[0].text, "#");
  const Token* paste = find_token(t, "##");
  ASSERT_NE(paste, nullptr);
  EXPECT_TRUE(paste->in_directive);
  EXPECT_FALSE(find_token(t, "int")->in_directive);
  EXPECT_EQ(significant_texts("#define S(a) %:a\n"), "# define S ( a ) # a");
}

TEST(Lexer, LessThanBeforeTwoColonsIsNotADigraph) {
  // C++ reads "<::" as '<' then "::" unless ':' or '>' follows ([lex.pptoken]/3.2).
  EXPECT_EQ(significant_texts("std::vector<::std::string> v;"),
            "std :: vector < :: std :: string > v ;");
  EXPECT_EQ(significant_texts("a<:::b:>"), "a [ :: b ]");
  EXPECT_EQ(significant_texts("a<::>"), "a [ ]");
  EXPECT_EQ(significant_texts("a<:b:>"), "a [ b ]");
}

TEST(Lexer, IsIdentifier) {
  for (std::string_view ok : {"x", "_x1", "inp_shape", "T", "kernel", "device", "uint",
                              "thread_position_in_grid", "main", "half"}) {
    EXPECT_TRUE(is_identifier(ok)) << ok;
  }
  for (std::string_view bad :
       {"",      "1x",  "a-b",    "a b",       "a.b",     "x!",    "caf\xc3\xa9",
        "for",   "int", "class",  "constexpr", "return",  "float", "while",
        "using", "and", "not_eq", "co_await",  "nullptr", "this",  "template"}) {
    EXPECT_FALSE(is_identifier(bad)) << bad;
  }
}

TEST(Lexer, IsKeyword) {
  for (std::string_view word : {"int", "while", "xor_eq", "co_await", "template", "using"}) {
    EXPECT_TRUE(is_keyword(word)) << word;
  }
  for (std::string_view word : {"", "x", "uint", "half", "kernel", "Int", "1D_conv", "whiles"}) {
    EXPECT_FALSE(is_keyword(word)) << word;
  }
}

TEST(Lexer, IsIdentifierRejectsEveryAlternativeOperatorSpelling) {
  // C++ spells these operators as words; none can name a variable.
  for (std::string_view bad : {"and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or",
                               "or_eq", "xor", "xor_eq"}) {
    EXPECT_FALSE(is_identifier(bad)) << bad;
  }
}

}  // namespace
}  // namespace kjit::codegen
