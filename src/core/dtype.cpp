#include <kjit/dtype.h>
#include <kjit/errors.h>

#include <array>
#include <string>

namespace kjit {
namespace {

struct DtypeInfo {
  std::string_view name;
  size_t size;
  std::string_view msl;
  std::string_view cuda;
};

constexpr std::array<DtypeInfo, kNumDtypes> kInfo = {{
    {"bool", 1, "bool", "bool"},
    {"int8", 1, "int8_t", "int8_t"},
    {"int16", 2, "int16_t", "int16_t"},
    {"int32", 4, "int32_t", "int32_t"},
    {"int64", 8, "int64_t", "int64_t"},
    {"uint8", 1, "uint8_t", "uint8_t"},
    {"uint16", 2, "uint16_t", "uint16_t"},
    {"uint32", 4, "uint32_t", "uint32_t"},
    {"uint64", 8, "uint64_t", "uint64_t"},
    {"float16", 2, "float16_t", "__half"},
    {"bfloat16", 2, "bfloat16_t", "__nv_bfloat16"},
    {"float32", 4, "float", "float"},
    {"float64", 8, "double", "double"},
    {"complex64", 8, "complex64_t", "complex64_t"},
}};

const DtypeInfo& info(Dtype d) { return kInfo[static_cast<size_t>(d)]; }

}  // namespace

size_t itemsize(Dtype dtype) { return info(dtype).size; }
std::string_view dtype_name(Dtype dtype) { return info(dtype).name; }
std::string_view msl_type_name(Dtype dtype) { return info(dtype).msl; }
std::string_view cuda_type_name(Dtype dtype) { return info(dtype).cuda; }

bool is_floating(Dtype d) {
  return d == Dtype::Float16 || d == Dtype::BFloat16 || d == Dtype::Float32 ||
         d == Dtype::Float64;
}
bool is_integral(Dtype d) { return d >= Dtype::Int8 && d <= Dtype::UInt64; }

Dtype dtype_from_name(std::string_view name, std::string_view param) {
  for (size_t i = 0; i < kInfo.size(); ++i) {
    if (kInfo[i].name == name) return static_cast<Dtype>(i);
  }
  struct Alias {
    std::string_view alias;
    Dtype dtype;
  };
  static constexpr std::array<Alias, 9> kAliases = {{
      {"bool_", Dtype::Bool},
      {"half", Dtype::Float16},
      {"float", Dtype::Float32},
      {"double", Dtype::Float64},
      {"bfloat", Dtype::BFloat16},
      {"int", Dtype::Int32},
      {"uint", Dtype::UInt32},
      {"complex", Dtype::Complex64},
      {"cfloat", Dtype::Complex64},
  }};
  for (const Alias& a : kAliases) {
    if (a.alias == name) return a.dtype;
  }
  std::string known;
  for (const DtypeInfo& d : kInfo) known += (known.empty() ? "" : ", ") + std::string(d.name);
  throw TypeError(std::string(param) + ": unsupported dtype '" + std::string(name) +
                  "'; expected one of " + known);
}

}  // namespace kjit
