/* A small JSON writer (a growing string) and reader (a tree of nodes), for the model
 * architecture and class names a checkpoint's metadata holds (model_config.c). Standalone:
 * includes only core. */
#ifndef KILN_NN_JSON_H
#define KILN_NN_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- writer: appends; the first allocation failure sticks (oom) and later appends do nothing */
typedef struct nn_sb { char *s; size_t len, cap; bool oom; } nn_sb;
void nn_sb_printf(nn_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void nn_sb_str(nn_sb *b, const char *s);         /* a JSON string literal, escaped */
void nn_sb_free(nn_sb *b);

/* ---- reader ---- */
typedef enum nn_json_kind { NN_J_NULL, NN_J_BOOL, NN_J_NUM, NN_J_STR, NN_J_ARR, NN_J_OBJ } nn_json_kind;
typedef struct nn_json nn_json;
struct nn_json {
    nn_json_kind kind;
    bool b;
    bool is_int;           /* a number written without '.', 'e' or 'E' that fits int64 */
    int64_t i;
    double num;
    const char *s;         /* string (unescaped, NUL-terminated) */
    const char *key;       /* member of an object: its key */
    nn_json *child;        /* array / object: first element */
    nn_json *next;         /* next element of the parent */
    int n;                 /* array / object: elements */
};
typedef struct nn_json_doc nn_json_doc;
/* Parses text (at most 64 levels deep). NULL on error with the reason and byte offset in why. */
nn_json_doc *nn_json_parse(const char *text, char *why, size_t why_n);
const nn_json *nn_json_root(const nn_json_doc *d);
void nn_json_free(nn_json_doc *d);
const nn_json *nn_json_get(const nn_json *obj, const char *key);   /* NULL if absent or not an object */
const nn_json *nn_json_at(const nn_json *arr, int i);
const char *nn_json_kind_name(nn_json_kind k);   /* "a string", ... */

#endif
