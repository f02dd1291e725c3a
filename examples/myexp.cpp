// The seed example from C++: exp over float16 inputs with float32 math, checked against <cmath>.
#include <kjit/kjit.h>

#include <cmath>
#include <cstdio>
#include <random>

int main() {
  const char* source = R"(
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
  )";
  kjit::Kernel kernel = kjit::metal_kernel("myexp", {"inp"}, {"out"}, source);

  const int64_t n = 4 * 16;
  kjit::Array a = kjit::Array::empty({4, 16}, kjit::Dtype::Float32);
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal;
  auto* in = static_cast<float*>(a.data());
  for (int64_t i = 0; i < n; ++i) in[i] = normal(rng);

  std::vector<kjit::Array> out = kernel({a}, {{4, 16}}, {kjit::Dtype::Float32}, {n, 1, 1},
                                        {256, 1, 1}, {{"T", kjit::Dtype::Float32}});
  const auto* result = static_cast<const float*>(out[0].data());
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double ref = std::exp(static_cast<double>(in[i]));
    worst = std::fmax(worst, std::fabs(result[i] - ref) / ref);
  }
  std::printf("myexp (C++): %lld elements, largest relative error %.2e\n",
              static_cast<long long>(n), worst);
  return worst < 1e-6 ? 0 : 1;
}
