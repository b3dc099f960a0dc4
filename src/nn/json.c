/* cJSON helpers (nn_json.h): parse errors with their byte offset, exact integers and seeds,
 * numbers written so that they read back bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "nn/nn_json.h"

#define EXACT_INT_MAX 9007199254740992.0     /* 2^53: larger doubles skip integers */

cJSON *nn_json_parse(const char *text, char *why, size_t why_n) {
    if (!text) { snprintf(why, why_n, "no text"); return NULL; }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, true);
    if (!root) {
        size_t at = end && end >= text ? (size_t)(end - text) : 0;
        if (at >= strlen(text)) snprintf(why, why_n, "unexpected end of text at byte %zu", at);
        else snprintf(why, why_n, "syntax error at byte %zu (near '%.12s')", at, text + at);
    }
    return root;
}

const char *nn_json_kind(const cJSON *v) {
    if (!v) return "nothing";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsBool(v)) return "a bool";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsArray(v)) return "a list";
    if (cJSON_IsObject(v)) return "an object";
    return "?";
}

bool nn_json_int(const cJSON *v, int64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(fabs(d) < EXACT_INT_MAX) || d != floor(d)) return false;
    *out = (int64_t)d;
    return true;
}

bool nn_json_seed(const cJSON *v, uint64_t *out) {
    int64_t i;
    if (nn_json_int(v, &i)) {
        if (i < 0) return false;
        *out = (uint64_t)i;
        return true;
    }
    if (!cJSON_IsString(v) || !*v->valuestring || strspn(v->valuestring, "0123456789") != strlen(v->valuestring) || strlen(v->valuestring) > 20)
        return false;
    char *e;
    unsigned long long x = strtoull(v->valuestring, &e, 10);
    if (*e || (x == ~0ull && strcmp(v->valuestring, "18446744073709551615"))) return false;   /* out of range */
    *out = x;
    return true;
}

cJSON *nn_json_num(double d) {
    if (!isfinite(d)) return cJSON_CreateNull();
    char s[40];
    for (int p = 15; p <= 17; p++) {
        snprintf(s, sizeof s, "%.*g", p, d);
        if (strtod(s, NULL) == d) break;
    }
    return cJSON_CreateRaw(s);
}

cJSON *nn_json_u64(uint64_t v) {
    char s[24];
    snprintf(s, sizeof s, "%llu", (unsigned long long)v);
    return v < (1ull << 53) ? cJSON_CreateRaw(s) : cJSON_CreateString(s);
}

char *nn_json_print(const cJSON *root) {
    char *p = cJSON_PrintUnformatted(root);
    if (!p) return NULL;
    char *out = kiln_strdup(p);
    cJSON_free(p);
    return out;
}
