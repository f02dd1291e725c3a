// CUDA names that NVRTC lacks without the toolkit's headers and that the CPU lacks too: __half
// and __nv_bfloat16 (kjit's half and bfloat, with Metal's promotion rules) and their functions.
namespace kjit::cuda_dialect {

typedef ::kjit::half_t __half;
typedef ::kjit::bfloat_t __nv_bfloat16;

KJIT_INLINE float __half2float(__half h) { return float(h); }
KJIT_INLINE __half __float2half(float f) { return __half(f); }
KJIT_INLINE __half __float2half_rn(float f) { return __half(f); }
KJIT_INLINE float __bfloat162float(__nv_bfloat16 h) { return float(h); }
KJIT_INLINE __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
KJIT_INLINE __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
template <class H>
KJIT_INLINE H hexp(H x) {
  return ::kjit::exp(x);
}
template <class H>
KJIT_INLINE H hsqrt(H x) {
  return ::kjit::sqrt(x);
}

}  // namespace kjit::cuda_dialect
