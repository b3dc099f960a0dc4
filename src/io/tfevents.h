/* TensorBoard event files (what tf.summary and Keras' TensorBoard callback write, what
 * `tensorboard --logdir` reads): a sequence of TFRecords, each
 *   uint64 length | uint32 masked CRC-32C of the length | data | uint32 masked CRC-32C of the data
 * (little-endian; mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8), whose data is an Event protocol
 * buffer: wall_time (1, double), step (2, int64), file_version (3, string, "brain.Event:2" in the
 * first event) or summary (5) holding values {tag (1, string), simple_value (2, float)}. These few
 * fields of a fixed schema are encoded here by hand. */
#ifndef KILN_IO_TFEVENTS_H
#define KILN_IO_TFEVENTS_H
#include <stddef.h>
#include <stdint.h>
#include "kiln/status.h"

/* CRC-32C (Castagnoli, as iSCSI / TFRecord): crc32c(0, "123456789", 9) == 0xE3069283. Pass the
 * previous result as crc to continue. */
uint32_t kiln_crc32c(uint32_t crc, const void *p, size_t n);
/* TFRecord's masked CRC of the bytes. */
uint32_t kiln_crc32c_masked(const void *p, size_t n);
/* Frames n bytes of data as one record into out (n + 16 bytes); returns n + 16. */
size_t kiln_tfrecord_frame(const uint8_t *data, size_t n, uint8_t *out);
/* An Event with one scalar summary value, encoded into out (cap bytes); returns its length, 0
 * when it does not fit (tags longer than 200 bytes are cut). */
size_t kiln_tfevent_scalar(double wall_time, int64_t step, const char *tag, float value, uint8_t *out, size_t cap);

typedef struct kiln_tfevents kiln_tfevents;
/* Creates dir (and its parents) and a new event file in it, named like TensorFlow's
 * (events.out.tfevents.<seconds>.<host>.<pid>.<n>.v2, never replacing one), and writes the
 * file_version event. Errors name the path. */
kiln_status kiln_tfevents_open(const char *dir, kiln_tfevents **out);
/* Appends a scalar event (buffered; kiln_tfevents_flush writes it out). */
kiln_status kiln_tfevents_scalar(kiln_tfevents *w, const char *tag, double value, int64_t step);
kiln_status kiln_tfevents_flush(kiln_tfevents *w);
const char *kiln_tfevents_path(const kiln_tfevents *w);
void kiln_tfevents_close(kiln_tfevents *w);   /* flushes; NULL is a no-op */

#endif
