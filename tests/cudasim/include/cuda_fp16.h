/* __half for the simulator: the storage type and the conversions Kiln uses, rounding to nearest
 * even and bit-exact with the CUDA intrinsics (NaN -> canonical 0x7fff, overflow -> Inf). */
#ifndef CUSIM_CUDA_FP16_H
#define CUSIM_CUDA_FP16_H
#include <cstdint>
#include <cstring>

struct __half { unsigned short __x; };
typedef struct __half_raw { unsigned short x; } __half_raw;

inline float __half2float(__half h) {
    uint32_t sign = (uint32_t)(h.__x & 0x8000u) << 16, exp = (h.__x >> 10) & 0x1fu, man = h.__x & 0x3ffu, bits;
    if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);               /* Inf / NaN */
    else if (exp != 0) bits = sign | ((exp + 112u) << 23) | (man << 13);     /* normal */
    else if (man == 0) bits = sign;                                           /* zero */
    else {                                                                    /* subnormal: normalise */
        int e = -1;
        do { man <<= 1; e++; } while (!(man & 0x400u));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline __half __float2half_rn(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t u = x & 0x7fffffffu, sign = (x >> 16) & 0x8000u, r, rem;
    if (u >= 0x7f800000u) { r = u == 0x7f800000u ? (sign | 0x7c00u) : 0x7fffu; rem = 0; }
    else if (u > 0x477fefffu) { r = sign | 0x7bffu; rem = 0x80000000u; }     /* rounds up to Inf */
    else if (u >= 0x38800000u) { r = sign | ((u - 0x38000000u) >> 13); rem = u << 19; }
    else if (u < 0x33000001u) { r = sign; rem = u; }                         /* to +-0 */
    else {                                                                    /* subnormal half */
        uint32_t shift = 0x7eu - (u >> 23), man = (u & 0x7fffffu) | 0x800000u;
        rem = man << (32u - shift);
        r = sign | (man >> shift);
    }
    if (rem > 0x80000000u || (rem == 0x80000000u && (r & 1u))) r++;
    __half h;
    h.__x = (unsigned short)r;
    return h;
}
inline __half __float2half(float f) { return __float2half_rn(f); }
#endif
