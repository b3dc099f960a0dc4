/* GPT-2's byte-level pre-tokenizer: the byte <-> symbol map, UTF-8, and the split regex
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * matched by hand (leftmost-first, as Oniguruma in `tokenizers` does). */
#include <string.h>
#include "text/text_internal.h"

extern const uint32_t kiln_uc_letter[][2];
extern const int kiln_uc_letter_n;
extern const uint32_t kiln_uc_number[][2];
extern const int kiln_uc_number_n;

/* bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 for 256, 257, ... */
static bool byte_printable(unsigned b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; }

uint32_t tk_byte_char(uint8_t b) {
    if (byte_printable(b)) return b;
    uint32_t k = 0;
    for (unsigned i = 0; i < b; i++) k += !byte_printable(i);
    return 256 + k;
}

int tk_char_byte(uint32_t cp) {
    if (cp < 256) return byte_printable(cp) ? (int)cp : -1;
    if (cp >= 256 + 68) return -1;
    uint32_t k = cp - 256;
    for (unsigned b = 0; b < 256; b++)
        if (!byte_printable(b) && k-- == 0) return (int)b;
    return -1;
}

int tk_utf8_char(const uint8_t *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    uint8_t c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    int len;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else return 0;
    if ((size_t)len > n || s[1] < lo || s[1] > hi) return 0;
    uint32_t v = c & (0xFF >> (len + 1));
    for (int k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[k] & 0x3F);
    }
    *cp = v;
    return len;
}

size_t tk_utf8_put(uint32_t cp, uint8_t *o) {
    if (cp < 0x80) { o[0] = (uint8_t)cp; return 1; }
    if (cp < 0x800) { o[0] = (uint8_t)(0xC0 | cp >> 6); o[1] = (uint8_t)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | cp >> 12); o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | cp >> 18); o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

static bool in_ranges(const uint32_t (*r)[2], int n, uint32_t cp) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < r[mid][0]) hi = mid - 1;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
}

enum { C_SPACE, C_LETTER, C_NUMBER, C_OTHER };

/* Oniguruma's Unicode \s: White_Space. */
static bool is_space(uint32_t c) {
    return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static int char_class(uint32_t c) {
    if (c < 128) {
        if ((c | 32) >= 'a' && (c | 32) <= 'z') return C_LETTER;
        if (c >= '0' && c <= '9') return C_NUMBER;
        return is_space(c) ? C_SPACE : C_OTHER;
    }
    if (is_space(c)) return C_SPACE;
    if (in_ranges(kiln_uc_letter, kiln_uc_letter_n, c)) return C_LETTER;
    if (in_ranges(kiln_uc_number, kiln_uc_number_n, c)) return C_NUMBER;
    return C_OTHER;
}

/* The class of the (valid) character at s[i], its length in *len; C_OTHER with length 1 past n. */
static int class_at(const uint8_t *s, size_t n, size_t i, int *len) {
    uint32_t cp = 0;
    int l = tk_utf8_char(s + i, n - i, &cp);
    *len = l ? l : 1;
    return l ? char_class(cp) : C_OTHER;
}

/* The end of a run of class cls (C_OTHER: neither space, letter nor number) from i. */
static size_t run_end(const uint8_t *s, size_t n, size_t i, int cls) {
    while (i < n) {
        int len, c = class_at(s, n, i, &len);
        if (c != cls) break;
        i += (size_t)len;
    }
    return i;
}

size_t tk_pretoken_end(const uint8_t *s, size_t n, size_t i) {
    if (s[i] == '\'' && i + 1 < n) {   /* 's|'t|'re|'ve|'m|'ll|'d (case-sensitive) */
        uint8_t a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
    int len, cls = class_at(s, n, i, &len);
    size_t j = i;
    if (s[i] == ' ' && i + 1 < n) {    /* " ?" before a letter, number or other run */
        int l2, c2 = class_at(s, n, i + 1, &l2);
        if (c2 != C_SPACE) { cls = c2; j = i + 1; }
    }
    if (cls != C_SPACE) return run_end(s, n, j, cls);
    size_t e = run_end(s, n, i, C_SPACE);
    /* \s+(?!\S): a run followed by a non-space gives back its last character, unless that would
     * leave it empty (then \s+ takes the run whole). */
    if (e < n) {
        size_t last = e - 1;
        while ((s[last] & 0xC0) == 0x80) last--;
        if (last > i) return last;
    }
    return e;
}
