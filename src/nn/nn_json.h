/* JSON for model architectures, Keras model files and class-name lists, through cJSON (Debian
 * libcjson-dev; cmake/KilnJSON.cmake): the few helpers cJSON lacks. Standalone: includes only core. */
#ifndef KILN_NN_JSON_H
#define KILN_NN_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cJSON.h>

/* Parses text; NULL with the reason and byte offset in why. Release with cJSON_Delete. */
cJSON *nn_json_parse(const char *text, char *why, size_t why_n);
/* "a string", "a number", ... for messages. */
const char *nn_json_kind(const cJSON *v);
/* A number that is a whole int64 (2 and 2.0 alike), read exactly (|v| < 2^53). */
bool nn_json_int(const cJSON *v, int64_t *out);
/* A seed: a whole number >= 0 (< 2^53), or a string of digits (any uint64; the writer uses one
 * for seeds a double cannot hold). false otherwise. */
bool nn_json_seed(const cJSON *v, uint64_t *out);
/* Writer helpers: a number as the shortest decimal that reads back exactly (null when not
 * finite); a uint64 (a seed) as a number, or from 2^53 on as a string of digits. NULL when out of
 * memory. */
cJSON *nn_json_num(double d);
cJSON *nn_json_u64(uint64_t v);
/* The printed tree in a kiln_malloc'd string (release with free()); NULL when out of memory. */
char *nn_json_print(const cJSON *root);

#endif
