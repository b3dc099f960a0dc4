/* A zip reader for .npz archives: the end-of-central-directory record (and its ZIP64 form), the
 * central directory, local headers, stored and deflated members (zlib's raw inflate), CRC-32
 * checks. Every offset and size read from the archive is checked against the buffer before use;
 * an uncompressed size is bounded by deflate's largest ratio (1032:1) before it is allocated. */
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include "core/core.h"
#include "data/tabular.h"

#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOC64 0x07064b50u
#define SIG_CDIR 0x02014b50u
#define SIG_LOCAL 0x04034b50u
#define EOCD_LEN 22
#define CDIR_LEN 46
#define LOCAL_LEN 30

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* [off, off + len) lies in a buffer of n bytes */
static bool inside(uint64_t off, uint64_t len, size_t n) { return off <= n && len <= (uint64_t)n - off; }

static kiln_status bad(const kiln_zip *z, const char *why) {
    return kiln_set_error(KILN_IO_ERROR, "%s: not a valid .npz (zip) archive: %s", z->file, why);
}

kiln_status kiln_zip_open(kiln_zip *z, const char *file, const uint8_t *buf, size_t n) {
    memset(z, 0, sizeof *z);
    z->file = file;
    z->buf = buf;
    z->n = n;
    if (n < EOCD_LEN) return bad(z, n == 0 ? "the file is empty" : "the file is too short (truncated?)");
    /* the record ends the file, after a comment of up to 65535 bytes */
    size_t eocd = SIZE_MAX;
    size_t lo = n - EOCD_LEN > 65535 ? n - EOCD_LEN - 65535 : 0;
    for (size_t p = n - EOCD_LEN + 1; p-- > lo;)
        if (rd32(buf + p) == SIG_EOCD && p + EOCD_LEN + rd16(buf + p + 20) == n) { eocd = p; break; }
    if (eocd == SIZE_MAX) return bad(z, "no end-of-central-directory record (truncated, or not a zip file)");
    const uint8_t *e = buf + eocd;
    if (rd16(e + 4) != 0 || rd16(e + 6) != 0) return bad(z, "multi-disk archives are not supported");
    z->count = rd16(e + 10);
    z->cd_size = rd32(e + 12);
    z->cd_offset = rd32(e + 16);
    if (z->count == 0xFFFF || z->cd_size == 0xFFFFFFFFu || z->cd_offset == 0xFFFFFFFFu) {
        /* ZIP64: a locator right before the record points at the 64-bit record */
        if (eocd < 20 || rd32(buf + eocd - 20) != SIG_LOC64) return bad(z, "ZIP64 end record locator missing");
        uint64_t at = rd64(buf + eocd - 20 + 8);
        if (!inside(at, 56, eocd - 20) || rd32(buf + at) != SIG_EOCD64) return bad(z, "ZIP64 end record out of place");
        const uint8_t *e64 = buf + at;
        if (rd32(e64 + 16) != 0 || rd32(e64 + 20) != 0) return bad(z, "multi-disk archives are not supported");
        z->count = rd64(e64 + 32);
        z->cd_size = rd64(e64 + 40);
        z->cd_offset = rd64(e64 + 48);
    }
    if (!inside(z->cd_offset, z->cd_size, eocd)) return bad(z, "the central directory lies outside the file (truncated?)");
    if (z->count > z->cd_size / CDIR_LEN) return bad(z, "the central directory is shorter than its entry count");
    return KILN_OK;
}

/* The entry at directory position *pos (advanced past it). */
static kiln_status entry_at(const kiln_zip *z, uint64_t *pos, kiln_zip_entry *e) {
    const uint64_t end = z->cd_offset + z->cd_size;
    if (!inside(*pos, CDIR_LEN, end) || rd32(z->buf + *pos) != SIG_CDIR) return bad(z, "corrupt central directory entry");
    const uint8_t *c = z->buf + *pos;
    unsigned flags = rd16(c + 8), name_len = rd16(c + 28), extra_len = rd16(c + 30), comment_len = rd16(c + 32);
    uint64_t total = (uint64_t)CDIR_LEN + name_len + extra_len + comment_len;
    if (!inside(*pos, total, end)) return bad(z, "a central directory entry runs past the directory");
    memset(e, 0, sizeof *e);
    e->name = (const char *)c + CDIR_LEN;
    e->name_len = name_len;
    e->method = rd16(c + 10);
    e->crc = rd32(c + 16);
    e->comp_size = rd32(c + 20);
    e->size = rd32(c + 24);
    uint64_t local = rd32(c + 42);
    /* ZIP64 extra field: the 64-bit values of the fields set to 0xFFFFFFFF, in this order */
    const uint8_t *x = c + CDIR_LEN + name_len, *xend = x + extra_len;
    while (xend - x >= 4) {
        unsigned id = rd16(x), len = rd16(x + 2);
        if (len > (size_t)(xend - x) - 4) return bad(z, "corrupt extra field in the central directory");
        if (id == 0x0001) {
            const uint8_t *v = x + 4, *vend = v + len;
            uint64_t *fields[3] = { &e->size, &e->comp_size, &local };
            for (int k = 0; k < 3; k++) {
                if (*fields[k] != 0xFFFFFFFFu) continue;
                if (vend - v < 8) return bad(z, "short ZIP64 extra field");
                *fields[k] = rd64(v);
                v += 8;
            }
        }
        x += 4 + len;
    }
    *pos += total;
    if (flags & 1) return kiln_set_error(KILN_UNSUPPORTED, "%s: member %.*s is encrypted", z->file, (int)name_len, e->name);
    /* the local header repeats the name and has its own extra field: the data follows both */
    if (!inside(local, LOCAL_LEN, z->n) || rd32(z->buf + local) != SIG_LOCAL)
        return kiln_set_error(KILN_IO_ERROR, "%s: member %.*s: its local header is missing or out of place (truncated?)", z->file,
                              (int)name_len, e->name);
    const uint8_t *l = z->buf + local;
    e->data_offset = local + LOCAL_LEN + rd16(l + 26) + rd16(l + 28);
    if (!inside(e->data_offset, e->comp_size, z->n))
        return kiln_set_error(KILN_IO_ERROR, "%s: member %.*s: its %llu bytes of data run past the end of the file (truncated?)",
                              z->file, (int)name_len, e->name, (unsigned long long)e->comp_size);
    return KILN_OK;
}

/* A name held twice (zip allows it; np.savez never writes it) means its last entry, as numpy's
 * zipfile reads it: the whole directory is walked. */
kiln_status kiln_zip_find(const kiln_zip *z, const char *name, kiln_zip_entry *e) {
    uint64_t pos = z->cd_offset;
    size_t len = strlen(name);
    bool found = false;
    kiln_status found_st = KILN_OK;
    char found_msg[512] = "";
    for (uint64_t i = 0; i < z->count; i++) {
        /* read the name first: a damaged entry of another member is no reason to fail */
        uint64_t at = pos;
        if (!inside(at, CDIR_LEN, z->cd_offset + z->cd_size) || rd32(z->buf + at) != SIG_CDIR) return bad(z, "corrupt central directory entry");
        unsigned nl = rd16(z->buf + at + 28);
        bool match = nl == len && inside(at + CDIR_LEN, nl, z->n) && !memcmp(z->buf + at + CDIR_LEN, name, len);
        kiln_zip_entry tmp;
        kiln_status st = entry_at(z, &pos, match ? e : &tmp);
        if (match) {
            found = true;
            found_st = st;
            if (st) snprintf(found_msg, sizeof found_msg, "%s", kiln_last_error());
        }
        if (st != KILN_OK && pos == at) {            /* could not step over it */
            if (match || !found) return st;
            break;
        }
    }
    if (found) return found_st ? kiln_set_error(found_st, "%s", found_msg) : KILN_OK;
    return kiln_set_error(KILN_NOT_FOUND, "%s: no member %s", z->file, name);
}

void kiln_zip_names(const kiln_zip *z, void (*fn)(void *user, const char *name, size_t len), void *user) {
    uint64_t pos = z->cd_offset, end = z->cd_offset + z->cd_size;
    for (uint64_t i = 0; i < z->count && inside(pos, CDIR_LEN, end) && rd32(z->buf + pos) == SIG_CDIR; i++) {
        const uint8_t *c = z->buf + pos;
        uint64_t total = (uint64_t)CDIR_LEN + rd16(c + 28) + rd16(c + 30) + rd16(c + 32);
        if (!inside(pos, total, end)) break;
        fn(user, (const char *)c + CDIR_LEN, rd16(c + 28));
        pos += total;
    }
}

kiln_status kiln_zip_extract(const kiln_zip *z, const kiln_zip_entry *e, uint8_t **out, size_t *n) {
    *out = NULL;
    *n = 0;
    int nl = (int)e->name_len;
    if (e->method != 0 && e->method != 8)
        return kiln_set_error(KILN_UNSUPPORTED, "%s: member %.*s uses compression method %u; only stored (0) and deflate (8) are "
                              "supported (np.savez / np.savez_compressed write those)", z->file, nl, e->name, e->method);
    if (e->method == 0 ? e->size != e->comp_size : e->size / 1032 > e->comp_size + 1)
        return kiln_set_error(KILN_IO_ERROR, "%s: member %.*s claims %llu bytes from %llu compressed bytes, more than %s allows "
                              "(corrupt archive)", z->file, nl, e->name, (unsigned long long)e->size, (unsigned long long)e->comp_size,
                              e->method == 0 ? "storing" : "deflate");
    if (e->size >= SIZE_MAX / 2) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: member %.*s is too large", z->file, nl, e->name);
    uint8_t *buf = kiln_malloc((size_t)e->size + 1);
    if (!buf) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of memory for member %.*s (%llu bytes)", z->file, nl, e->name, (unsigned long long)e->size);
    const uint8_t *src = z->buf + e->data_offset;
    if (e->method == 0) memcpy(buf, src, (size_t)e->size);
    else {
        z_stream s;
        memset(&s, 0, sizeof s);
        if (inflateInit2(&s, -MAX_WBITS) != Z_OK) { kiln_free(buf); return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: zlib: cannot start inflating", z->file); }
        uint64_t in_left = e->comp_size, out_left = e->size;
        s.next_in = (Bytef *)src;
        s.next_out = buf;
        int r = Z_OK;
        while (r == Z_OK) {
            /* zlib counts in 32-bit uInt: feed at most 1 GiB at a time */
            if (s.avail_in == 0) { s.avail_in = (uInt)(in_left < (1u << 30) ? in_left : (1u << 30)); in_left -= s.avail_in; }
            if (s.avail_out == 0) { s.avail_out = (uInt)(out_left < (1u << 30) ? out_left : (1u << 30)); out_left -= s.avail_out; }
            uInt before_in = s.avail_in, before_out = s.avail_out;
            r = inflate(&s, Z_NO_FLUSH);
            if (r == Z_BUF_ERROR || (r == Z_OK && s.avail_in == before_in && s.avail_out == before_out)) break;   /* no progress */
        }
        bool whole = r == Z_STREAM_END && s.total_out == e->size;
        const char *msg = s.msg;
        inflateEnd(&s);
        if (!whole) {
            kiln_free(buf);
            return kiln_set_error(KILN_IO_ERROR, "%s: member %.*s: the deflate data is corrupt or truncated (%s; %llu of %llu bytes "
                                  "decompressed)", z->file, nl, e->name, msg ? msg : r == Z_STREAM_END ? "wrong length" : "ends early",
                                  (unsigned long long)s.total_out, (unsigned long long)e->size);
        }
    }
    uint32_t crc = (uint32_t)crc32_z(0L, buf, (z_size_t)e->size);
    if (crc != e->crc) {
        kiln_free(buf);
        return kiln_set_error(KILN_IO_ERROR, "%s: member %.*s: CRC-32 mismatch (0x%08x, the archive says 0x%08x): the file is damaged",
                              z->file, nl, e->name, crc, e->crc);
    }
    *out = buf;
    *n = (size_t)e->size;
    return KILN_OK;
}
