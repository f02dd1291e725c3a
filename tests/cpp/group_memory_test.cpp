// Finding the group memory a body declares: what region mode moves to the group's scope and a
// debug build checks.
#include "codegen/group_memory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/lexer.h"

namespace kjit::codegen {
namespace {

// "name[N]" for each array |source| declares, "name[]" for each dynamic one, "name" for each
// variable of one value; at the top level alone with |top_level_only|.
std::vector<std::string> variables_of(const std::string& source, Dialect dialect,
                                      bool top_level_only = false) {
  const std::vector<Token> tokens = lex(source);
  std::vector<std::string> found;
  for (const GroupVariable& v : group_variables(tokens, dialect, top_level_only)) {
    EXPECT_EQ(tokens[v.name_at].text, v.name);
    EXPECT_EQ(v.in_header, top_level_only);
    found.push_back(v.name + (v.dynamic ? "[]" : v.array ? "[N]" : ""));
  }
  return found;
}

TEST(GroupMemory, FindsTheVariablesOfEachDialectInOrder) {
  EXPECT_EQ(variables_of("threadgroup float tile[32][33];\n"
                         "uint l = 0;\n"
                         "if (l) { threadgroup half4 v[N + 1], w[2]; }\n"
                         "threadgroup atomic_uint total, n[4], last;\n",
                         Dialect::Metal),
            (std::vector<std::string>{"tile[N]", "v[N]", "w[N]", "total", "n[N]", "last"}));
  EXPECT_EQ(variables_of("__shared__ float s[64];\n"
                         "extern __shared__ __align__(16) unsigned char raw[];\n"
                         "__shared__ unsigned int count;\n"
                         "extern __shared__ float dyn[];\n",
                         Dialect::Cuda),
            (std::vector<std::string>{"s[N]", "raw[]", "count", "dyn[]"}));
}

TEST(GroupMemory, AHeaderDeclaresItsTopLevelsForTheBody) {
  EXPECT_EQ(variables_of("#define N 64\n"
                         "__shared__ float cache[N];\n"
                         "__device__ float f(float x) { __shared__ float t[4]; return x; }\n"
                         "__shared__ int flag;\n",
                         Dialect::Cuda, true),
            (std::vector<std::string>{"cache[N]", "flag"}));
}

TEST(GroupMemory, PointersCastsAndOtherDialectsAreNotDeclarations) {
  EXPECT_TRUE(variables_of("threadgroup float* p = (threadgroup float*)q;\n"
                           "f((threadgroup float*)q);\n"
                           "__shared__ float s[4];\n",
                           Dialect::Metal)
                  .empty());
  EXPECT_TRUE(variables_of("threadgroup float t[4];\n"
                           "__shared__ float* p;\n"
                           "extern float e[];\n"
                           "x = y; __shared__ float z[2] = {1, 2};\n",
                           Dialect::Cuda)
                  .empty());
}

}  // namespace
}  // namespace kjit::codegen
