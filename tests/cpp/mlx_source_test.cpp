// The kernel as MLX generates it (what verbose prints first), against listings written from
// MLX's generators: mlx/backend/common/metal_kernel.cpp and mlx/backend/cuda/custom_kernel.cpp.
#include "codegen/mlx_source.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace kjit::codegen {
namespace {

std::shared_ptr<const KernelSpec> spec(Dialect dialect, const std::string& name,
                                       std::vector<std::string> inputs,
                                       std::vector<std::string> outputs, const std::string& source,
                                       const std::string& header = "", bool atomic = false) {
  return make_spec(dialect, name, inputs, outputs, source, header,
                   /*ensure_row_contiguous=*/true, atomic, /*shared_memory=*/0, {});
}

const std::string kMyexp =
    "\n"
    "    uint elem = thread_position_in_grid.x;\n"
    "    T tmp = inp[elem];\n"
    "    out[elem] = metal::exp(tmp);\n";

TEST(MlxSource, MetalMyexpAsInTheProposalWithTodaysNames) {
  auto s = spec(Dialect::Metal, "myexp", {"inp"}, {"out"}, kMyexp);
  const CallSignature call{{{Dtype::Float16, 2}}, {Dtype::Float16}, {{"T", Dtype::Float32}}};
  const std::vector<int64_t> sizes = {64};
  // The proposal named the function custom_kernel_myexp and the instance
  // custom_kernel_myexp_float_; MLX now names both after the template arguments and the
  // inputs' and outputs' types.
  const std::string name = "custom_kernel_myexp__float_float16_t_float16_t";
  EXPECT_EQ(mlx_kernel_name(*s, call, sizes), name);
  EXPECT_EQ(mlx_source(*s, call, sizes),
            "template <typename T>\n"
            "[[kernel]] void " +
                name +
                "(\n"
                "  const device float16_t* inp [[buffer(0)]],\n"
                "  device float16_t* out [[buffer(1)]],\n"
                "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n"
                "\n"
                "    uint elem = thread_position_in_grid.x;\n"
                "    T tmp = inp[elem];\n"
                "    out[elem] = metal::exp(tmp);\n"
                "\n"
                "}\n"
                "\n"
                "template [[host_name(\"" +
                name + "\")]] [[kernel]] decltype(" + name + "<float>) " + name + "<float>;\n");
}

TEST(MlxSource, MetalBuffersInOrderWithShapesScalarsAndConstantInputs) {
  auto s = spec(Dialect::Metal, "mix", {"a", "k", "small"}, {"o"},
                "uint i = thread_index_in_simdgroup + simdgroup_index_in_threadgroup;\n"
                "o[i] = a[elem_to_loc(i, a_shape, a_strides, a_ndim)] * k + small[0] + N;",
                "#define ONE 1\n", /*atomic=*/true);
  const CallSignature call{{{Dtype::Float32, 3}, {Dtype::Int32, 0}, {Dtype::BFloat16, 1}},
                           {Dtype::Float32},
                           {{"N", 3}, {"B", true}, {"U", Dtype::UInt8}}};
  const std::vector<int64_t> sizes = {60, 1, 4};
  const std::string name = "custom_kernel_mix__3_1_uint8_t_float_int32_ts_bfloat16_tc_float";
  EXPECT_EQ(mlx_kernel_name(*s, call, sizes), name);
  EXPECT_EQ(mlx_source(*s, call, sizes),
            "#define ONE 1\n"
            "template <int N, bool B, typename U>\n"
            "[[kernel]] void " +
                name +
                "(\n"
                "  const device float* a [[buffer(0)]],\n"
                "  const constant int* a_shape [[buffer(1)]],\n"
                "  const constant int64_t* a_strides [[buffer(2)]],\n"
                "  const constant int& a_ndim [[buffer(3)]],\n"
                "  const constant int32_t& k [[buffer(4)]],\n"
                "  const constant bfloat16_t* small [[buffer(5)]],\n"
                "  device atomic<float>* o [[buffer(6)]],\n"
                "  uint simdgroup_index_in_threadgroup [[simdgroup_index_in_threadgroup]],\n"
                "  uint thread_index_in_simdgroup [[thread_index_in_simdgroup]]) {\n"
                "uint i = thread_index_in_simdgroup + simdgroup_index_in_threadgroup;\n"
                "o[i] = a[elem_to_loc(i, a_shape, a_strides, a_ndim)] * k + small[0] + N;\n"
                "}\n"
                "\n"
                "template [[host_name(\"" +
                name + "\")]] [[kernel]] decltype(" + name + "<3, 1, uint8_t>) " + name +
                "<3, 1, uint8_t>;\n");
}

TEST(MlxSource, MetalWithoutTemplateArgumentsHasNoInstance) {
  auto s = spec(Dialect::Metal, "copy", {"x"}, {"y"}, "y[thread_position_in_grid.x] = x[0];");
  const CallSignature call{{{Dtype::Int64, 1}}, {Dtype::Int64}, {}};
  EXPECT_EQ(mlx_source(*s, call, std::vector<int64_t>{8}),
            "[[kernel]] void custom_kernel_copy_int64_t_int64_t(\n"
            "  const device int64_t* x [[buffer(0)]],\n"
            "  device int64_t* y [[buffer(1)]],\n"
            "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n"
            "y[thread_position_in_grid.x] = x[0];\n"
            "}\n");
}

TEST(MlxSource, CudaMyexpAsMlxsCudaGeneratorWritesIt) {
  auto s = spec(Dialect::Cuda, "myexp", {"inp"}, {"out"},
                "\n"
                "    auto elem = cg::this_grid().thread_rank();\n"
                "    T tmp = inp[elem] * F * (B ? 1 : 2);\n"
                "    out[elem] = exp(tmp) + inp_shape[0] + inp_strides[0] + inp_ndim;\n",
                "__device__ float twice(float x) { return 2 * x; }\n");
  const CallSignature call{
      {{Dtype::Float16, 2}}, {Dtype::Complex64}, {{"T", Dtype::Float16}, {"F", 3}, {"B", false}}};
  const std::vector<int64_t> sizes = {4};
  // The CUDA name carries the template arguments only (types spelled as in Metal).
  EXPECT_EQ(mlx_kernel_name(*s, call, sizes), "custom_kernel_myexp_float16_t_3_f");
  EXPECT_EQ(mlx_source(*s, call, sizes),
            "\n"
            "#include \"mlx/backend/cuda/device/utils.cuh\"\n"
            "\n"
            "#include <cooperative_groups.h>\n"
            "\n"
            "__device__ float twice(float x) { return 2 * x; }\n"
            "namespace mlx::core::cu {\n"
            "\n"
            "namespace cg = cooperative_groups;\n"
            "\n"
            "__global__ void custom_kernel_myexp_float16_t_3_f(\n"
            "    const __half* inp,\n"
            "    const __grid_constant__ Shape inp_shape,\n"
            "    const __grid_constant__ Strides inp_strides,\n"
            "    const __grid_constant__ int inp_ndim,\n"
            "    mlx::core::cu::complex64_t* out) {\n"
            "  using T = __half;\n"
            "  constexpr int F = 3;\n"
            "  constexpr bool B = false;\n"
            "\n"
            "\n"
            "    auto elem = cg::this_grid().thread_rank();\n"
            "    T tmp = inp[elem] * F * (B ? 1 : 2);\n"
            "    out[elem] = exp(tmp) + inp_shape[0] + inp_strides[0] + inp_ndim;\n"
            "\n"
            "}\n"
            "\n"
            "} // namespace mlx::core::cu\n");
}

TEST(MlxSource, CudaScalarInputsArePointersWithoutShapes) {
  // MLX passes a 0-d input as a pointer, and gives it no shape even where the body names one.
  auto s = spec(Dialect::Cuda, "scale", {"x", "k"}, {"y"},
                "y[threadIdx.x] = x[threadIdx.x] * k[0] + k_shape[0];");
  const CallSignature call{{{Dtype::Float32, 1}, {Dtype::Float32, 0}}, {Dtype::Float32}, {}};
  const std::string text = mlx_source(*s, call, std::vector<int64_t>{32, 1});
  EXPECT_NE(text.find("__global__ void custom_kernel_scale(\n"
                      "    const float* x,\n"
                      "    const float* k,\n"
                      "    float* y) {\n"
                      "y[threadIdx.x]"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace kjit::codegen
