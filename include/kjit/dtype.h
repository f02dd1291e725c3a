// Element types of kjit arrays and kernel parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kjit {

enum class Dtype : uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Complex64,
};

inline constexpr int kNumDtypes = 14;

/// Size of one element in bytes.
size_t itemsize(Dtype dtype);

/// Canonical name ("float32", "bfloat16", ...), as NumPy spells it where NumPy has the type.
std::string_view dtype_name(Dtype dtype);

/// Parses a canonical name or a common alias ("float", "half", "bool_", "f4"...). Throws
/// kjit::TypeError naming |param| when the name is unknown.
Dtype dtype_from_name(std::string_view name, std::string_view param = "dtype");

/// The type name a kernel body sees for |dtype| in each dialect (MLX's spellings).
std::string_view msl_type_name(Dtype dtype);
std::string_view cuda_type_name(Dtype dtype);

bool is_floating(Dtype dtype);
bool is_integral(Dtype dtype);  // bool excluded

}  // namespace kjit
