// Runs a small kernel on the CPU and checks it against a closed form: thread i sums 0..i, which
// is i * (i + 1) / 2.
#include <kjit/kjit.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

int main() {
  const char* source = R"(
    uint i = thread_position_in_grid.x;
    ulong sum = 0;
    for (uint k = 0; k <= i; ++k) sum += k;
    out[i] = sum;
  )";
  const kjit::Kernel kernel = kjit::metal_kernel("triangular", {}, {"out"}, source);
  const int64_t n = 1000;
  // On the CPU, where a kernel with no inputs runs on a GPU when there is one.
  kjit::LaunchOptions on_cpu;
  on_cpu.device = kjit::Device::cpu();
  const std::vector<kjit::Array> out = kernel({}, {{n}}, {kjit::Dtype::UInt64}, {n, 1, 1},
                                              {64, 1, 1}, {}, std::nullopt, false, on_cpu);
  const auto* result = static_cast<const uint64_t*>(out.at(0).data());
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto expected = static_cast<uint64_t>(i) * static_cast<uint64_t>(i + 1) / 2;
    if (result[i] != expected) ++wrong;
  }
  std::printf("kjit %s: %lld of %lld sums wrong\n", kjit::version(), static_cast<long long>(wrong),
              static_cast<long long>(n));
  bool cuda_as_expected = true;
#if KJIT_CONSUMER_EXPECTS_NO_CUDA
  // Without the CUDA backend there are no CUDA devices, and asking for one says why.
  cuda_as_expected = kjit::devices().size() == 1;
  kjit::LaunchOptions on_gpu;
  on_gpu.device = kjit::Device::cuda(0);
  try {
    kernel({}, {{n}}, {kjit::Dtype::UInt64}, {n, 1, 1}, {64, 1, 1}, {}, std::nullopt, false,
           on_gpu);
    cuda_as_expected = false;
  } catch (const kjit::ValueError& e) {
    const std::string message = e.what();
    std::printf("on cuda:0: %s\n", message.c_str());
    cuda_as_expected =
        cuda_as_expected && message.find("without CUDA support") != std::string::npos;
  }
#endif
  return wrong == 0 && out.at(0).device() == kjit::Device::cpu() && cuda_as_expected ? 0 : 1;
}
