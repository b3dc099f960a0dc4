#include <string.h>
#include <stdio.h>
#include "core/core.h"

size_t kiln_dtype_size(kiln_dtype t) {
    static const size_t sz[KILN_DTYPE_COUNT] = { 4, 8, 2, 2, 4, 8, 1, 1 };
    return (unsigned)t < KILN_DTYPE_COUNT ? sz[t] : 0;
}

const char *kiln_dtype_name(kiln_dtype t) {
    static const char *nm[KILN_DTYPE_COUNT] = { "f32", "f64", "f16", "bf16", "i32", "i64", "u8", "bool" };
    return (unsigned)t < KILN_DTYPE_COUNT ? nm[t] : "?";
}

bool kiln_dtype_is_float(kiln_dtype t) {
    return t == KILN_F32 || t == KILN_F64 || t == KILN_F16 || t == KILN_BF16;
}

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t kiln_f32_to_bf16(float f) {
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                                            /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float kiln_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t kiln_f32_to_f16(float f) {
    uint32_t u = f2u(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);          /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);         /* overflow -> inf (>= 65520) */
    if (a < 0x38800000u) {                                           /* subnormal or zero */
        if (a < 0x33000000u) return (uint16_t)sign;                  /* < 2^-25 rounds to 0 */
        uint32_t m = (a & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(a >> 23);                            /* 14..24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((a >> 13) - (112u << 10));
    uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (uint16_t)(sign | r);
}

float kiln_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        if (m == 0) return u2f(sign);
        float v = (float)m * (1.0f / 16777216.0f);                   /* m * 2^-24 */
        return sign ? -v : v;
    }
    if (e == 31) return u2f(sign | 0x7f800000u | (m << 13));
    return u2f(sign | ((e + 112u) << 23) | (m << 13));
}

kiln_shape kiln_shape_make(const int64_t *dims, int rank) {
    kiln_shape s = { 0, { 0 } };
    if (rank > KILN_MAX_DIMS) rank = KILN_MAX_DIMS;
    s.rank = rank;
    for (int i = 0; i < rank; i++) s.dim[i] = dims[i];
    return s;
}

/* A zero dimension gives 0 whatever the others are; a product past int64 saturates at INT64_MAX
 * (never signed-overflow UB), which no allocation can satisfy. */
int64_t kiln_shape_numel(kiln_shape s) {
    for (int i = 0; i < s.rank; i++) if (s.dim[i] == 0) return 0;
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++)
        if (__builtin_mul_overflow(n, s.dim[i], &n)) return INT64_MAX;
    return n;
}

bool kiln_shape_equal(kiln_shape a, kiln_shape b) {
    if (a.rank != b.rank) return false;
    for (int i = 0; i < a.rank; i++) if (a.dim[i] != b.dim[i]) return false;
    return true;
}

char *kiln_shape_str(kiln_shape s, char *buf, size_t n) {
    size_t k = 0;
    if (n == 0) return buf;
    buf[0] = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < s.rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)s.dim[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}
