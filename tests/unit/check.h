/* Minimal test harness: CHECK(cond) records a failure with file:line and keeps going. */
#ifndef KILN_CHECK_H
#define KILN_CHECK_H
#include <stdio.h>
#include <math.h>
#include "kiln/kiln.h"
#include "kiln/data.h"

extern int check_passed, check_failed;
#define CHECK(cond) do { if (cond) check_passed++; else { check_failed++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_MSG(cond, ...) do { if (cond) check_passed++; else { check_failed++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
#define CHECK_OK(expr) do { kiln_status st_ = (expr); CHECK_MSG(st_ == KILN_OK, "%s -> %s: %s", #expr, \
    kiln_status_name(st_), kiln_last_error()); } while (0)
#define CHECK_NEAR(a, b, tol) CHECK_MSG(fabs((double)(a) - (double)(b)) <= (tol), "%s = %g, %s = %g", #a, (double)(a), #b, (double)(b))
/* Prints "<name>: N passed, N failed" and returns the process exit code. */
int check_summary(const char *name);
/* n examples [8] in three linearly separable classes (y = argmax(W x)), from seed. */
kiln_dataset *separable(int64_t n, uint64_t seed);
#endif
