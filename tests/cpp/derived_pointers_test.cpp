// Finding the pointers a body derives from its arrays, whose accesses a debug build checks.
#include "codegen/derived_pointers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/lexer.h"

namespace kjit::codegen {
namespace {

// "pointer:array" for each pointer |source| derives from the arrays "inp" (0) and "out" (1).
std::vector<std::string> derived_in(const std::string& source) {
  const std::vector<Token> tokens = lex(source);
  std::vector<std::string> found;
  auto array_named = [](std::string_view name) -> std::optional<size_t> {
    if (name == "inp") return 0;
    if (name == "out") return 1;
    return std::nullopt;
  };
  for (const auto& [name, array] : derived_pointers(tokens, array_named)) {
    found.push_back(std::string(name) + ":" + std::to_string(array));
  }
  std::sort(found.begin(), found.end());
  return found;
}

using Names = std::vector<std::string>;

// "how:first token:array" for each pointer |source| makes in place from "inp" (0), "out" (1)
// and the derived pointer "row" (of inp).
std::vector<std::string> made_in_place(const std::string& source) {
  const std::vector<Token> tokens = lex(source);
  auto array_named = [](std::string_view name) -> std::optional<size_t> {
    if (name == "inp" || name == "row") return 0;
    if (name == "out") return 1;
    return std::nullopt;
  };
  std::vector<std::string> found;
  for (const PointerInPlace& p : pointers_made_in_place(tokens, array_named)) {
    const char* how = p.how == PointerInPlace::How::Cast          ? "cast"
                      : p.how == PointerInPlace::How::Reinterpret ? "reinterpret"
                      : p.how == PointerInPlace::How::Moved       ? "moved"
                                                                  : "atomic";
    std::string item =
        std::string(how) + ":" + std::string(tokens[p.at].text) + ":" + std::to_string(p.array);
    if (p.how == PointerInPlace::How::Cast) {
      item += ' ';
      if (p.operand == tokens.size()) {
        item += "(operand)";
      } else {
        for (size_t k = p.operand; k <= p.operand_last; ++k) item += tokens[k].text;
      }
    }
    found.push_back(item);
  }
  return found;
}

TEST(DerivedPointers, DeclarationsFromAnArrayMovedOrNot) {
  EXPECT_EQ(derived_in("const device float* row = inp + i * 4; row[j];"), Names{"row:0"});
  EXPECT_EQ(derived_in("float* dst = &out[i]; auto q = out; auto r = inp - 1;"),
            (Names{"dst:1", "q:1", "r:0"}));
  // The other declarators of a declaration too.
  EXPECT_EQ(derived_in("const float *a = inp, *b = out + 2;"), (Names{"a:0", "b:1"}));
  EXPECT_EQ(derived_in("float s = 0.0f, *p = out + i;"), Names{"p:1"});
}

TEST(DerivedPointers, PointersCastToAnotherElementType) {
  EXPECT_EQ(derived_in("const device float4* v = (const device float4*)(inp + 4 * i);"),
            Names{"v:0"});
  EXPECT_EQ(derived_in("auto w = reinterpret_cast<float4*>(out) + i; float* p = (float*)out;"),
            (Names{"p:1", "w:1"}));
  EXPECT_EQ(derived_in("auto h = reinterpret_cast<const vec<half, 4>*>(&inp[k]);"), Names{"h:0"});
}

TEST(DerivedPointers, DeclaredWithoutAValueAndAssignedLater) {
  EXPECT_EQ(derived_in("float* p; p = inp + 1; if (c) p = &inp[4];"), Names{"p:0"});
  EXPECT_EQ(derived_in("device float *p; { p = (device float*)out; } p[0] = 1;"), Names{"p:1"});
  // Never assigned an array, or assigned two.
  EXPECT_EQ(derived_in("float* p; float* q; q = inp; q = out; x = a * b;"), Names{});
}

TEST(DerivedPointers, PointersCastInPlaceAndIndexedOrDereferenced) {
  EXPECT_EQ(made_in_place("v = ((const device float4*)inp)[i];"), Names{"cast:(:0 inp"});
  EXPECT_EQ(made_in_place("*(device float4*)(out + 4 * i) = v; x = *((float2*)row);"),
            (Names{"cast:(:1 (operand)", "cast:(:0 row"}));
  EXPECT_EQ(made_in_place("*(float4*)&out[i] = v; w = ((float2*)&row[2 * k])[1];"),
            (Names{"cast:(:1 &out[i]", "cast:(:0 &row[2 * k]"}));
  EXPECT_EQ(made_in_place("v = reinterpret_cast<const float4*>(&inp[k])[0];"),
            Names{"reinterpret:reinterpret_cast:0"});
  EXPECT_EQ(made_in_place("v = (int)*(inp + i) + (unsigned int)*(row + 1);"),
            (Names{"moved:inp:0", "moved:row:0"}));
  EXPECT_EQ(made_in_place("c = x > (int)*(inp + i);"), Names{"moved:inp:0"});
  EXPECT_EQ(made_in_place("*(out + i) = (row + 1)[j]; for (;;) *(out + 2) = 0;"),
            (Names{"moved:out:1", "moved:row:0", "moved:out:1"}));
}

TEST(DerivedPointers, OtherParenthesesAndCastsAreNotMadeInPlace) {
  // Calls, conditions, casts not accessed there, and addresses of more than an element.
  EXPECT_EQ(made_in_place("v = f(out)[i]; if (inp) [&] { g(); }(); y = a * (inp + 1)[0];"),
            Names{"moved:inp:0"});
  EXPECT_EQ(made_in_place("float4* p = (float4*)out; q = (float*)(inp[0]); (float4*)&out[i];"),
            Names{});
  EXPECT_EQ(made_in_place("v = *(float*)&out[i].x; w = *(int*)&inp[i][j];"), Names{});
  EXPECT_EQ(made_in_place("v = ((float4*)other)[i]; w = (float)*inp;"), Names{});
  // Products: of a value in parentheses, and of sizeof's.
  EXPECT_EQ(made_in_place("v = (n) * (inp + 1); w = sizeof(int) * (row + k);"), Names{});
  // A cast of a cast (its operand's parentheses are the inner cast's), a type with a comma, a
  // step of the name cast, a condition in the parentheses.
  EXPECT_EQ(made_in_place("v = ((float2*)(const float*)inp)[i];"), Names{});
  EXPECT_EQ(made_in_place("v = *(const vec<half, 4>*)(inp + i); w = *(const float*)row++;"),
            Names{});
  EXPECT_EQ(made_in_place("v = *(inp + i < end ? inp + i : end);"), Names{});
}

TEST(DerivedPointers, PointersGivenToAtomicOperations) {
  EXPECT_EQ(made_in_place("atomicAdd(out + i, 1); atomicCAS_block(row, 0, 1);"),
            (Names{"atomic:out:1", "atomic:row:0"}));
  EXPECT_EQ(made_in_place("atomic_fetch_add_explicit(out + 2 * k, v, memory_order_relaxed);"),
            Names{"atomic:out:1"});
  // An element's address (checked as an access), another array, a condition, other calls.
  EXPECT_EQ(made_in_place("atomicAdd(&out[i], 1); atomicAdd(other + i, 1); f(out + i, 1);"),
            Names{});
  EXPECT_EQ(made_in_place("atomicMax(i < n ? out + i : out, 1); s.atomicAdd(out, 1);"), Names{});
}

TEST(DerivedPointers, AccessesNestedInAnothersOperandAreFoundToo) {
  EXPECT_EQ(made_in_place("v = *(out + 2 * *(row + 100));"), (Names{"moved:out:1", "moved:row:0"}));
  EXPECT_EQ(made_in_place("v = *(out + static_cast<int>(k) * 2);"), Names{"moved:out:1"});
}

TEST(DerivedPointers, ValuesAssignmentsAndOtherInitialisersAreNot) {
  EXPECT_EQ(derived_in("auto v = inp[i]; float x = *inp;"), Names{});  // values
  EXPECT_EQ(derived_in("float* q = cond ? inp : out; float* v = (float*)(inp[0]);"), Names{});
  EXPECT_EQ(derived_in("float* inp2 = other + 1;"), Names{});
}

TEST(DerivedPointers, ANameDeclaredTwiceIsLeftOut) {
  EXPECT_EQ(derived_in("{ float* r = out; } { float r = 1; }"), Names{});
  EXPECT_EQ(derived_in("{ float* r = out; } { float* r = inp; }"), Names{});
  // A dereference is no declaration.
  EXPECT_EQ(derived_in("float* p = out + i; *p = 1; y = x * p[0];"), Names{"p:1"});
}

TEST(DerivedPointers, APointerAssignedAnotherArrayIsLeftOut) {
  // Moved within its array: still that array's.
  EXPECT_EQ(derived_in("const float* p = inp; p = inp + 4; p += 2; p = &inp[j];"), Names{"p:0"});
  EXPECT_EQ(derived_in("const float* p = inp; if (c) p = out;"), Names{});
  EXPECT_EQ(derived_in("float* p = out; p = q;"), Names{});
  // Writes through it, or to a member of that name, leave it as it was.
  EXPECT_EQ(derived_in("float* p = out; *p = 2; s.p = inp; return *p = 1;"), Names{"p:1"});
}

}  // namespace
}  // namespace kjit::codegen
