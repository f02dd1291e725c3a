#include <gtest/gtest.h>

#include "codegen/lexer.h"

namespace kjit::codegen {
namespace {

std::string concat(const std::vector<Token>& tokens) {
  std::string s;
  for (const Token& t : tokens) s += t.text;
  return s;
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

}  // namespace
}  // namespace kjit::codegen
