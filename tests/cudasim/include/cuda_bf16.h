/* __nv_bfloat16 for the simulator: storage plus round-to-nearest-even conversions, bit-exact
 * with the CUDA intrinsics (NaN -> canonical 0x7fff). */
#ifndef CUSIM_CUDA_BF16_H
#define CUSIM_CUDA_BF16_H
#include <cstdint>
#include <cstring>

struct __nv_bfloat16 { unsigned short __x; };

inline float __bfloat162float(__nv_bfloat16 h) {
    uint32_t bits = (uint32_t)h.__x << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    __nv_bfloat16 h;
    if ((x & 0x7fffffffu) > 0x7f800000u) { h.__x = 0x7fffu; return h; }
    uint32_t r = x >> 16, rem = x << 16;
    if (rem > 0x80000000u || (rem == 0x80000000u && (r & 1u))) r++;
    h.__x = (unsigned short)r;
    return h;
}
inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }
#endif
