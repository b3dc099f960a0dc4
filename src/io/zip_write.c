/* Zip files written for .keras models (kiln_model_save_keras): stored entries, CRC-32 from zlib,
 * fixed timestamps (the same model gives the same bytes). No zip64: over 4 GiB is refused. The
 * reader is src/data/zip.c (kiln_zip_open / _find / _extract). */
#include <string.h>
#include <zlib.h>
#include "core/core.h"
#include "io/zip_write.h"

static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, v); wr16(p + 2, v >> 16); }

#define CDIR_SIG 0x02014b50u
#define LOCAL_SIG 0x04034b50u
#define EOCD_SIG 0x06054b50u

kiln_status kiln_zip_write(FILE *f, const kiln_zip_member *e, int n_entries, const char *what) {
    uint64_t off = 0, cd_size = 0;
    uint32_t *crcs = kiln_calloc((size_t)n_entries + 1, sizeof *crcs);
    uint64_t *offs = kiln_calloc((size_t)n_entries + 1, sizeof *offs);
    kiln_status st = crcs && offs ? KILN_OK : kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of host memory", what);
    for (int i = 0; i < n_entries && !st; i++) {
        size_t nl = strlen(e[i].name);
        if (e[i].n >= 0xffffffffu || off + e[i].n + 30 + nl >= 0xffffffffu) {
            st = kiln_set_error(KILN_UNSUPPORTED, "%s: over 4 GiB; zip64 is not written", what);
            break;
        }
        uLong crc = crc32(0, e[i].data, (uInt)e[i].n);
        uint8_t h[30] = { 0 };
        wr32(h, LOCAL_SIG); wr16(h + 4, 20); wr16(h + 6, 1u << 11);   /* UTF-8 names; stored (method 0) */
        wr16(h + 12, 0x21);                                           /* 1980-01-01 00:00: reproducible bytes */
        wr32(h + 14, (uint32_t)crc); wr32(h + 18, (uint32_t)e[i].n); wr32(h + 22, (uint32_t)e[i].n); wr16(h + 26, (uint32_t)nl);
        crcs[i] = (uint32_t)crc;
        offs[i] = off;
        if (fwrite(h, 1, 30, f) != 30 || fwrite(e[i].name, 1, nl, f) != nl || (e[i].n && fwrite(e[i].data, 1, e[i].n, f) != e[i].n))
            st = kiln_set_error(KILN_IO_ERROR, "%s: write failed", what);
        off += 30 + nl + e[i].n;
    }
    for (int i = 0; i < n_entries && !st; i++) {
        size_t nl = strlen(e[i].name);
        uint8_t h[46] = { 0 };
        wr32(h, CDIR_SIG); wr16(h + 4, 20); wr16(h + 6, 20); wr16(h + 8, 1u << 11);
        wr16(h + 12, 0); wr16(h + 14, 0x21);
        wr32(h + 16, crcs[i]); wr32(h + 20, (uint32_t)e[i].n); wr32(h + 24, (uint32_t)e[i].n); wr16(h + 28, (uint32_t)nl);
        wr32(h + 38, 0644u << 16); wr32(h + 42, (uint32_t)offs[i]);
        if (fwrite(h, 1, 46, f) != 46 || fwrite(e[i].name, 1, nl, f) != nl) st = kiln_set_error(KILN_IO_ERROR, "%s: write failed", what);
        cd_size += 46 + nl;
    }
    if (!st) {
        uint8_t h[22] = { 0 };
        wr32(h, EOCD_SIG); wr16(h + 8, (uint32_t)n_entries); wr16(h + 10, (uint32_t)n_entries);
        wr32(h + 12, (uint32_t)cd_size); wr32(h + 16, (uint32_t)off);
        if (fwrite(h, 1, 22, f) != 22) st = kiln_set_error(KILN_IO_ERROR, "%s: write failed", what);
    }
    kiln_free(crcs);
    kiln_free(offs);
    return st;
}
