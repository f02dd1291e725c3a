// Finding the group memory a body declares: what region mode moves to the group's scope and a
// debug build checks.
#include "codegen/group_memory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/lexer.h"

namespace kjit::codegen {
namespace {

// "name" or "name[]" (dynamic) for each array |source| declares.
std::vector<std::string> arrays_of(const std::string& source, Dialect dialect) {
  const std::vector<Token> tokens = lex(source);
  std::vector<std::string> found;
  for (const GroupArray& a : group_arrays(tokens, dialect)) {
    EXPECT_EQ(tokens[a.name_at].text, a.name);
    found.push_back(a.name + (a.dynamic ? "[]" : ""));
  }
  return found;
}

TEST(GroupMemory, FindsTheArraysOfEachDialectInOrder) {
  EXPECT_EQ(arrays_of("threadgroup float tile[32][33];\n"
                      "uint l = 0;\n"
                      "if (l) { threadgroup half4 v[N + 1], w[2]; }\n",
                      Dialect::Metal),
            (std::vector<std::string>{"tile", "v", "w"}));
  EXPECT_EQ(arrays_of("__shared__ float s[64];\n"
                      "extern __shared__ __align__(16) unsigned char raw[];\n"
                      "__shared__ int count;\n"
                      "extern __shared__ float dyn[];\n",
                      Dialect::Cuda),
            (std::vector<std::string>{"s", "raw[]", "dyn[]"}));
}

TEST(GroupMemory, PointersCastsAndOtherDialectsAreNotDeclarations) {
  EXPECT_TRUE(arrays_of("threadgroup float* p = (threadgroup float*)q;\n"
                        "f((threadgroup float*)q);\n"
                        "__shared__ float s[4];\n",
                        Dialect::Metal)
                  .empty());
  EXPECT_TRUE(arrays_of("threadgroup float t[4];\n"
                        "__shared__ float* p;\n"
                        "extern float e[];\n"
                        "x = y; __shared__ float z[2] = {1, 2};\n",
                        Dialect::Cuda)
                  .empty());
}

}  // namespace
}  // namespace kjit::codegen
