/* Dtype-generic element access used by the ref kernels (slow, exact, simple). */
#ifndef KILN_LOAD_STORE_H
#define KILN_LOAD_STORE_H
#include <math.h>
#include "kiln/tensor.h"

static inline double kiln_load(const void *p, kiln_dtype t, int64_t i) {
    switch (t) {
    case KILN_F32: return ((const float *)p)[i];
    case KILN_F64: return ((const double *)p)[i];
    case KILN_F16: return kiln_f16_to_f32(((const uint16_t *)p)[i]);
    case KILN_BF16: return kiln_bf16_to_f32(((const uint16_t *)p)[i]);
    case KILN_I32: return ((const int32_t *)p)[i];
    case KILN_I64: return (double)((const int64_t *)p)[i];
    case KILN_U8: return ((const uint8_t *)p)[i];
    case KILN_BOOL: return ((const uint8_t *)p)[i] ? 1.0 : 0.0;
    default: return 0.0;
    }
}

static inline void kiln_store(void *p, kiln_dtype t, int64_t i, double v) {
    switch (t) {
    case KILN_F32: ((float *)p)[i] = (float)v; break;
    case KILN_F64: ((double *)p)[i] = v; break;
    case KILN_F16: ((uint16_t *)p)[i] = kiln_f32_to_f16((float)v); break;
    case KILN_BF16: ((uint16_t *)p)[i] = kiln_f32_to_bf16((float)v); break;
    /* integer stores truncate toward zero like a C cast (NaN -> 0) */
    case KILN_I32: ((int32_t *)p)[i] = isnan(v) ? 0 : (int32_t)v; break;
    case KILN_I64: ((int64_t *)p)[i] = isnan(v) ? 0 : (int64_t)v; break;
    case KILN_U8: ((uint8_t *)p)[i] = isnan(v) ? 0 : (uint8_t)(int64_t)v; break;
    case KILN_BOOL: ((uint8_t *)p)[i] = (v != 0.0); break;
    default: break;
    }
}
#endif
