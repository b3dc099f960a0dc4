/* Checked int64 arithmetic for sizes built from file input (shapes, parameter counts, FLOPs):
 * one place for the builtins (gcc and clang), so that an overflow is reported or saturates,
 * never wraps (signed overflow is UB; a wrapped count turns negative or divides by zero). */
#ifndef KILN_CORE_CHECKED_H
#define KILN_CORE_CHECKED_H
#include <stdbool.h>
#include <stdint.h>

/* *out = a * b; false (and *out untouched) when the product does not fit an int64. */
static inline bool kiln_mul_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}
/* *out = a + b; false (and *out untouched) when the sum does not fit an int64. */
static inline bool kiln_add_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}
/* Saturating forms for totals that are only shown (counts >= 0): INT64_MAX past the range. */
static inline int64_t kiln_sat_mul_i64(int64_t a, int64_t b) { int64_t r; return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r; }
static inline int64_t kiln_sat_add_i64(int64_t a, int64_t b) { int64_t r; return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r; }

#endif
