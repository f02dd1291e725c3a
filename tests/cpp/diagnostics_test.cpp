#include "codegen/diagnostics.h"

#include <gtest/gtest.h>

#include <string>

#include "codegen/kernel_spec.h"

namespace kjit::codegen {
namespace {

// |log| mapped for a kernel of |source| and |header|.
MappedDiagnostics mapped(const std::string& log, const std::string& source,
                         const std::string& header = {}) {
  const auto spec = make_spec(Dialect::Metal, "k", {"inp"}, {"out"}, source, header,
                              /*ensure_row_contiguous=*/true, /*atomic_outputs=*/false,
                              /*shared_memory=*/0, {});
  return map_diagnostics(log, *spec);
}

const char kAssertion[] = "simdgroup_matrix: kjit provides 8x8 matrices only";

TEST(Diagnostics, GccLinesThatLedToAnErrorInKjitsCodeComeBeforeIt) {
  const std::string log =
      "/tmp/b/kjit_kernel.cpp: In instantiation of 'struct metal::simdgroup_matrix<float, 16, "
      "16>':\n"
      "<source>:1:33:   required from here\n"
      "/tmp/b/kjit_kernel.cpp:2961:41: error: static assertion failed: " +
      std::string(kAssertion) +
      "\n"
      " 2961 |   static_assert(Cols == 8 && Rows == 8, \"...\");\n"
      "<source>:2:8: error: 'y' was not declared in this scope\n";
  const MappedDiagnostics m = mapped(log, "simdgroup_matrix<float, 16, 16> m;\nc[0] = y;");
  EXPECT_EQ(m.count, 2);
  EXPECT_EQ(m.text, "source line 1: error: static assertion failed: " + std::string(kAssertion) +
                        "\n    1 | simdgroup_matrix<float, 16, 16> m;\n"
                        "source line 2: error: 'y' was not declared in this scope\n"
                        "    2 | c[0] = y;\n");
}

TEST(Diagnostics, ClangNotesNameTheUsersLineAfterAnErrorInKjitsCode) {
  const std::string log =
      "/tmp/b/kjit_kernel.cpp:2961:3: error: static_assert failed due to requirement '16 == 8 && "
      "16 == 8' \"" +
      std::string(kAssertion) +
      "\"\n"
      "  static_assert(Cols == 8 && Rows == 8, \"...\");\n"
      "  ^             ~~~~~~~~~~~~~~~~~~~~~~\n"
      "<source>:1:33: note: in instantiation of template class 'metal::simdgroup_matrix<float, "
      "16, 16>' requested here\n"
      "simdgroup_matrix<float, 16, 16> m;\n"
      "                                ^\n"
      "1 error generated.\n";
  const MappedDiagnostics m = mapped(log, "simdgroup_matrix<float, 16, 16> m;\nc[0] = a[0];");
  EXPECT_EQ(m.count, 1);
  EXPECT_EQ(m.text,
            "source line 1: error: static_assert failed due to requirement '16 == 8 && 16 == 8' "
            "\"" +
                std::string(kAssertion) + "\"\n    1 | simdgroup_matrix<float, 16, 16> m;\n");
}

TEST(Diagnostics, ClangErrorsInKjitsCodeNameTheInnermostLineOfTheUsers) {
  const std::string log =
      "/tmp/b/kjit_kernel.cpp:40:5: error: no matching function for call to 'kjit_helper'\n"
      "<header>:3:10: note: in instantiation of function template specialization 'twice<int>' "
      "requested here\n"
      "<source>:1:10: note: in instantiation of function template specialization 'f<int>' "
      "requested here\n";
  const MappedDiagnostics m = mapped(log, "out[0] = twice(a[0]);",
                                     "template <class T>\nT twice(T x) {\n"
                                     "  return kjit_helper(x);\n}");
  EXPECT_EQ(m.count, 1);
  EXPECT_EQ(m.text,
            "header line 3: error: no matching function for call to 'kjit_helper' (in kjit's code "
            "this line uses)\n    3 |   return kjit_helper(x);\n");
}

TEST(Diagnostics, AnAssertionInKjitsCodeAloneKeepsItsMessage) {
  const std::string log =
      "/tmp/b/kjit_kernel.cpp:9:3: error: static assertion failed: " + std::string(kAssertion) +
      "\n";
  const MappedDiagnostics m = mapped(log, "c[0] = a[0];");
  EXPECT_EQ(m.count, 1);
  EXPECT_EQ(m.text, "error: static assertion failed: " + std::string(kAssertion) + "\n");
  // Another error in kjit's code, with no line of the user's, is not the user's to read.
  EXPECT_EQ(mapped("/tmp/b/kjit_kernel.cpp:9:3: error: expected ';'\n", "c[0] = a[0];").count, 0);
}

TEST(Diagnostics, NvrtcLinesAndWarnings) {
  const std::string log =
      "<source>(1): warning #177-D: variable \"v\" was declared but never referenced\n"
      "<source>(2): error: identifier \"w\" is undefined\n";
  const MappedDiagnostics m = mapped(log, "float v = a[0];\nc[0] = w;");
  EXPECT_EQ(m.count, 1);
  EXPECT_EQ(m.text, "source line 2: error: identifier \"w\" is undefined\n    2 | c[0] = w;\n");
}

}  // namespace
}  // namespace kjit::codegen
