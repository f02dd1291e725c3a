// What the tests of the call pipeline's stages share: the kernels they run, settings kept where a
// CallSettings can view them, random data and the checks of error messages.
#pragma once

#include <gtest/gtest.h>
#include <kjit/kjit.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "core/call_settings.h"

namespace kjit::testing {

/// Memory that no test reads or writes, for arrays whose layout alone a test looks at (arrays
/// "on a GPU" described without one).
inline void* const kUntouched = reinterpret_cast<void*>(uintptr_t{0x1000});

/// A generator seeded afresh on each run; the seed is printed with every failure in its scope, so
/// that the failure can be reproduced.
struct SeededRng {
  unsigned seed = std::random_device{}();
  ::testing::ScopedTrace trace{__FILE__, __LINE__, "random seed: " + std::to_string(seed)};
  std::mt19937 rng{seed};
};

/// |shape| of float32 values uniform in [-4, 4).
inline Array random_floats(const Shape& shape, std::mt19937& rng) {
  Array a = Array::empty(shape, Dtype::Float32);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  auto* p = static_cast<float*>(a.data());
  for (int64_t i = 0; i < a.size(); ++i) p[i] = dist(rng);
  return a;
}

/// |shape| of float64 values uniform in [-4, 4).
inline Array random_doubles(const Shape& shape, std::mt19937& rng) {
  Array a = Array::empty(shape, Dtype::Float64);
  std::uniform_real_distribution<double> dist(-4.0, 4.0);
  auto* p = static_cast<double*>(a.data());
  for (int64_t i = 0; i < a.size(); ++i) p[i] = dist(rng);
  return a;
}

/// A fresh row-contiguous float32 array filled with NaN: a kernel that must write every element
/// leaves none.
inline Array poisoned_floats(const Shape& shape) {
  Array a = Array::empty(shape, Dtype::Float32);
  a.fill(std::nan(""));
  return a;
}

template <class T>
const T* elements_of(const Array& a) {
  return static_cast<const T*>(a.data());
}

/// out[i] = 2 * inp[i], one thread per element.
inline std::shared_ptr<const KernelSpec> twice_spec(bool ensure_row_contiguous = true) {
  return make_spec(Dialect::Metal, "twice", {"inp"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    out[i] = 2 * inp[i];
)",
                   "", ensure_row_contiguous, false, 0, {});
}

/// out[i] = a * x[i] and neg[i] = -x[i], with |a| a 0-d input.
inline std::shared_ptr<const KernelSpec> scale_spec() {
  return make_spec(Dialect::Metal, "scale", {"x", "a"}, {"out", "neg"}, R"(
    uint i = thread_position_in_grid.x;
    out[i] = a * x[i];
    neg[i] = -x[i];
)",
                   "", true, false, 0, {});
}

/// A call's settings, owned, for the stages that take a CallSettings (which views them).
struct Settings {
  std::vector<Shape> output_shapes;
  std::vector<Dtype> output_dtypes;
  Dim3 grid, threadgroup;
  TemplateArgs template_args;
  std::optional<double> init_value;

  CallSettings view() const {
    return {output_shapes, output_dtypes, grid, threadgroup, template_args, init_value, false};
  }
};

/// Settings for one float32 output of |n| elements per output of |spec|, one thread each.
inline Settings elementwise(const KernelSpec& spec, int64_t n) {
  Settings s;
  s.output_shapes.assign(spec.output_names.size(), Shape{n});
  s.output_dtypes.assign(spec.output_names.size(), Dtype::Float32);
  s.grid = {n, 1, 1};
  s.threadgroup = {32, 1, 1};
  return s;
}

/// The message of the ValueError that |call| throws; a failure, and an empty message, when it
/// throws none.
template <class Call>
std::string value_error_of(Call&& call) {
  try {
    call();
  } catch (const ValueError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ValueError was thrown";
  return {};
}

/// Expects |call| to throw a ValueError whose message holds each of |parts|.
template <class Call>
void expect_value_error(Call&& call, std::initializer_list<std::string> parts) {
  const std::string message = value_error_of(call);
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

}  // namespace kjit::testing
