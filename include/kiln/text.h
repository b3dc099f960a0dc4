/* Text: byte-level BPE tokenizers in Hugging Face's tokenizer.json format (GPT-2 style), and
 * token streams as training data for causal language models. */
#ifndef KILN_TEXT_H
#define KILN_TEXT_H
#include <stddef.h>
#include <stdint.h>
#include "status.h"
#include "tensor.h"
#include "pipeline.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_tokenizer kiln_tokenizer;

/* Reads a tokenizer.json: model BPE (vocab, merges as "a b" strings or [a, b] pairs), the
 * ByteLevel pre-tokenizer (GPT-2's regex split, add_prefix_space), no normalizer, the ByteLevel
 * decoder, added_tokens (e.g. <|endoftext|>). Anything else is KILN_UNSUPPORTED naming it;
 * a damaged file is KILN_INVALID_ARGUMENT naming what is wrong. */
kiln_status kiln_tokenizer_load(const char *path, kiln_tokenizer **out);
/* The same from the JSON text in memory (n bytes, need not be NUL-terminated). */
kiln_status kiln_tokenizer_from_json(const char *json, size_t n, kiln_tokenizer **out);
/* Writes it as a tokenizer.json that the `tokenizers` package loads with the same ids. */
kiln_status kiln_tokenizer_save(const kiln_tokenizer *t, const char *path);
/* The same tokenizer.json as a NUL-terminated string in *json (free() it): what checkpoints
 * store (metadata kiln.tokenizer). */
kiln_status kiln_tokenizer_to_json(const kiln_tokenizer *t, char **json);
/* Trains a byte-level BPE on n bytes of UTF-8 text, as `tokenizers`' BpeTrainer does with the
 * ByteLevel pre-tokenizer and its 256-symbol initial alphabet: the text is read line by line
 * (each line keeps its "\n"), merges taken by pair frequency, ties to the pair of smaller ids.
 * Ids: the special tokens first (special may be NULL; n_special of them, e.g. "<|endoftext|>"),
 * then the 256 byte symbols, then one per merge, until vocab_size. */
kiln_status kiln_tokenizer_train(const char *text, size_t n, int vocab_size, const char *const *special,
                                 int n_special, kiln_tokenizer **out);
void kiln_tokenizer_free(kiln_tokenizer *t);

/* Number of ids (the largest id + 1, added tokens included). */
int kiln_tokenizer_vocab_size(const kiln_tokenizer *t);
/* The id of a token given by its string in the vocabulary (e.g. "<|endoftext|>"); -1 if none. */
int32_t kiln_tokenizer_token_id(const kiln_tokenizer *t, const char *token);

/* Encodes n bytes of UTF-8 text (invalid UTF-8 is KILN_INVALID_ARGUMENT naming the byte offset)
 * into *ids (a kiln_malloc'd array of *n_ids ids; release with kiln_text_free), exactly as
 * `tokenizers`' Tokenizer.encode(text).ids does (no post-processor tokens are added). */
kiln_status kiln_tokenizer_encode(const kiln_tokenizer *t, const char *text, size_t n, int32_t **ids,
                                  size_t *n_ids);
/* Decodes ids into *text (kiln_malloc'd, NUL-terminated, *len bytes without the NUL; release with
 * kiln_text_free), as `tokenizers`' decode(ids, skip_special_tokens=False): byte sequences that
 * are not valid UTF-8 become U+FFFD. An id out of range is KILN_INVALID_ARGUMENT naming it. */
kiln_status kiln_tokenizer_decode(const kiln_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len);
/* The raw bytes of one token (for streaming generation, where a character may span tokens):
 * *bytes is borrowed from t; NULL and KILN_INVALID_ARGUMENT for an id out of range. */
kiln_status kiln_tokenizer_token_bytes(const kiln_tokenizer *t, int32_t id, const uint8_t **bytes, size_t *n);
/* Releases what encode / decode / kiln_text_encode_bytes returned. */
void kiln_text_free(void *p);

/* ---- text data for causal language models ---- */
/* The token ids of a text file into *ids (release with kiln_text_free), *n of them: its bytes
 * (vocabulary 256: any file, UTF-8 or not) when t is NULL, else t's encoding of it (UTF-8). */
kiln_status kiln_text_read_ids(const char *path, const kiln_tokenizer *t, int32_t **ids, size_t *n);
/* Where the held-out tail starts: the last val_fraction of n ids validate (e.g. 0.1). */
size_t kiln_text_split(size_t n, double val_fraction);
/* Windows of block_size + 1 consecutive ids: *x i32 [rows, block_size] their first block_size,
 * *y i32 [rows, block_size] the next-token labels (x shifted by one). count > 0: count windows at
 * random starts drawn from seed (training); count 0: the consecutive windows from the start,
 * stride block_size, as many as fit (evaluation). New tensors; the caller frees them. */
kiln_status kiln_text_windows(const int32_t *ids, size_t n, int block_size, int64_t count, uint64_t seed,
                              kiln_tensor **x, kiln_tensor **y);

/* A text file as input pipelines for kiln_fit_data / kiln_evaluate_data (what `kiln train --data
 * text:FILE --block-size N` reads). Examples are f32 [block_size] token ids (what an Embedding
 * takes), labels i32 [block_size] the next ids (kiln_data_label_shape); num_classes is the
 * vocabulary: 256 for bytes, the tokenizer's size otherwise. The first 1 - validation_split of
 * the ids train: *train holds a window at every start (n - block_size of them, in order: shuffle
 * it and take kiln_text_epoch_windows of it for an epoch of random windows); the rest (the
 * held-out tail) validates: *val holds its consecutive windows, stride block_size. A text too short
 * for a window in either part is KILN_INVALID_ARGUMENT naming the counts. */
typedef struct kiln_text_data_opts {
    int block_size;                    /* tokens per window (the model's context); required */
    const kiln_tokenizer *tokenizer;   /* NULL: the file's bytes (vocabulary 256); borrowed */
    double validation_split;           /* the held-out tail; 0: 0.1 */
} kiln_text_data_opts;
kiln_status kiln_data_from_text(const char *path, const kiln_text_data_opts *o, kiln_data **train, kiln_data **val);
/* Windows in an epoch of text training: the training part's tokens / block_size. */
int64_t kiln_text_epoch_windows(const kiln_data *train);

#ifdef __cplusplus
}
#endif
#endif
