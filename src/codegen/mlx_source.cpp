#include "codegen/mlx_source.h"

#include <string_view>
#include <vector>

namespace kjit::codegen {
namespace {

// MLX passes Metal inputs of fewer elements than this in the constant address space.
constexpr int64_t kConstantArraySize = 8;

// The template argument lists MLX writes, in the order given: "<float, 3, 1>" for Metal (a bool
// streamed as 1 or 0), the Metal name's suffix "_float_3_1", and CUDA's suffix "_float_3_t".
struct TemplateSpellings {
  std::string metal_list, metal_suffix, cuda_suffix;
};

TemplateSpellings template_spellings(const TemplateArgs& args) {
  TemplateSpellings s;
  for (size_t k = 0; k < args.size(); ++k) {
    const TemplateValue& value = args[k].second;
    std::string metal;
    if (const bool* b = std::get_if<bool>(&value)) {
      metal.push_back(*b ? '1' : '0');
      s.cuda_suffix += *b ? "_t" : "_f";
    } else if (const int* i = std::get_if<int>(&value)) {
      metal = std::to_string(*i);
      s.cuda_suffix += '_';
      s.cuda_suffix += metal;
    } else {
      metal = msl_type_name(std::get<Dtype>(value));
      s.cuda_suffix += '_';
      s.cuda_suffix += metal;
    }
    s.metal_list += k ? ", " : "";
    s.metal_list += metal;
    s.metal_suffix += '_';
    s.metal_suffix += metal;
  }
  s.metal_list = "<" + s.metal_list + ">";
  return s;
}

// MLX's CUDA spelling of |dtype|: kjit's, but for complex64_t, which MLX qualifies.
std::string mlx_cuda_type(Dtype dtype) {
  if (dtype == Dtype::Complex64) return "mlx::core::cu::complex64_t";
  return std::string(cuda_type_name(dtype));
}

std::string_view template_parameter_kind(const TemplateValue& value) {
  if (std::holds_alternative<bool>(value)) return "bool";
  if (std::holds_alternative<int>(value)) return "int";
  return "typename";
}

std::string metal_source(const KernelSpec& spec, const CallSignature& call,
                         std::span<const int64_t> input_sizes, const std::string& name) {
  std::vector<std::string> params;
  int buffer = 0;
  auto bound = [&](std::string declaration) {
    params.push_back("  " + declaration + " [[buffer(" + std::to_string(buffer++) + ")]]");
  };
  for (size_t i = 0; i < spec.input_names.size(); ++i) {
    const std::string& in = spec.input_names[i];
    const auto [dtype, ndim] = call.inputs[i];
    const char* space = input_sizes[i] < kConstantArraySize ? "constant " : "device ";
    bound("const " + std::string(space) + std::string(msl_type_name(dtype)) +
          (ndim == 0 ? "& " : "* ") + in);
    if (ndim == 0) continue;
    const KernelSpec::InputUse& use = spec.input_uses[i];
    if (use.shape) bound("const constant int* " + in + "_shape");
    if (use.strides) bound("const constant int64_t* " + in + "_strides");
    if (use.ndim) bound("const constant int& " + in + "_ndim");
  }
  for (size_t o = 0; o < spec.output_names.size(); ++o) {
    const std::string t(msl_type_name(call.outputs[o]));
    bound("device " + (spec.atomic_outputs ? "atomic<" + t + ">" : t) + "* " +
          spec.output_names[o]);
  }
  for (const std::string& attr : spec.attributes) {
    bool vector = false;
    for (const Attribute& a : metal_attributes()) {
      if (attr == a.name) vector = a.is_vector;
    }
    params.push_back("  " + std::string(vector ? "uint3 " : "uint ") + attr + " [[" + attr + "]]");
  }
  std::string out = spec.header;
  const TemplateArgs& targs = call.template_args;
  if (!targs.empty()) {
    out += "template <";
    for (size_t k = 0; k < targs.size(); ++k) {
      out += std::string(k ? ", " : "") + std::string(template_parameter_kind(targs[k].second)) +
             " " + targs[k].first;
    }
    out += ">\n";
  }
  out += "[[kernel]] void " + name + "(\n";
  for (size_t k = 0; k < params.size(); ++k)
    out += params[k] + (k + 1 < params.size() ? ",\n" : "");
  out += ") {\n" + spec.source + "\n}\n";
  if (!targs.empty()) {
    const std::string instance = name + template_spellings(targs).metal_list;
    out += "\ntemplate [[host_name(\"" + name + "\")]] [[kernel]] decltype(" + instance + ") " +
           instance + ";\n";
  }
  return out;
}

std::string cuda_source(const KernelSpec& spec, const CallSignature& call,
                        const std::string& name) {
  std::vector<std::string> params;
  for (size_t i = 0; i < spec.input_names.size(); ++i) {
    const std::string& in = spec.input_names[i];
    const auto [dtype, ndim] = call.inputs[i];
    params.push_back("    const " + mlx_cuda_type(dtype) + "* " + in);
    if (ndim == 0) continue;
    const KernelSpec::InputUse& use = spec.input_uses[i];
    if (use.shape) params.push_back("    const __grid_constant__ Shape " + in + "_shape");
    if (use.strides) params.push_back("    const __grid_constant__ Strides " + in + "_strides");
    if (use.ndim) params.push_back("    const __grid_constant__ int " + in + "_ndim");
  }
  for (size_t o = 0; o < spec.output_names.size(); ++o) {
    params.push_back("    " + mlx_cuda_type(call.outputs[o]) + "* " + spec.output_names[o]);
  }
  std::string out =
      "\n#include \"mlx/backend/cuda/device/utils.cuh\"\n\n#include <cooperative_groups.h>\n\n" +
      spec.header + "namespace mlx::core::cu {\n\nnamespace cg = cooperative_groups;\n\n";
  out += "__global__ void " + name + "(\n";
  for (size_t k = 0; k < params.size(); ++k)
    out += params[k] + (k + 1 < params.size() ? ",\n" : "");
  out += ") {\n";
  for (const auto& [targ, value] : call.template_args) {
    if (const bool* b = std::get_if<bool>(&value)) {
      out += "  constexpr bool " + targ + " = " + (*b ? "true" : "false") + ";\n";
    } else if (const int* i = std::get_if<int>(&value)) {
      out += "  constexpr int " + targ + " = " + std::to_string(*i) + ";\n";
    } else {
      out += "  using " + targ + " = " + mlx_cuda_type(std::get<Dtype>(value)) + ";\n";
    }
  }
  if (!call.template_args.empty()) out += "\n";
  out += spec.source + "\n}\n\n} // namespace mlx::core::cu\n";
  return out;
}

}  // namespace

std::string mlx_kernel_name(const KernelSpec& spec, const CallSignature& call,
                            std::span<const int64_t> input_sizes) {
  std::string name = kernel_symbol(spec.name);
  const TemplateSpellings t = template_spellings(call.template_args);
  if (spec.dialect == Dialect::Cuda) return name + t.cuda_suffix;
  // MLX turns "<float, 3>" into "_float_3_" and drops the last character.
  if (!call.template_args.empty()) {
    name += '_';
    name += t.metal_suffix;
  }
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const auto [dtype, ndim] = call.inputs[i];
    name += '_';
    name += msl_type_name(dtype);
    if (ndim == 0) {
      name += "s";
    } else if (input_sizes[i] < kConstantArraySize) {
      name += "c";
    }
  }
  for (Dtype d : call.outputs) {
    name += '_';
    name += msl_type_name(d);
  }
  return name;
}

std::string mlx_source(const KernelSpec& spec, const CallSignature& call,
                       std::span<const int64_t> input_sizes) {
  const std::string name = mlx_kernel_name(spec, call, input_sizes);
  return spec.dialect == Dialect::Metal ? metal_source(spec, call, input_sizes, name)
                                        : cuda_source(spec, call, name);
}

}  // namespace kjit::codegen
