/* Models with their graph and session (tier 3 of src/nn, above the step builders): building
 * and rebuilding the graph, carrying variable values across rebuilds and checkpoint loads. */
#ifndef KILN_NN_MODEL_H
#define KILN_NN_MODEL_H
#include "nn/nn_step.h"

/* session.c */
/* metrics.c: compile's metric_list parsed (*out NULL for none); INVALID_ARGUMENT naming a bad entry */
kiln_status nn_metric_set_parse(const char *list, struct nn_metric_set **out);
void nn_metric_set_free(struct nn_metric_set *s);
void nn_graph_drop(kiln_model *m);                              /* frees graph, session, forwards */
kiln_status nn_ensure_session(kiln_model *m, int batch);        /* any graph + session */
kiln_status nn_ensure_train(kiln_model *m, int batch);          /* training step for batch */
kiln_status nn_get_infer(kiln_model *m, int batch, nn_forward **out);
kiln_status nn_set_lr(kiln_model *m, double lr);
void nn_carry_clear(kiln_model *m);
kiln_status nn_carry_add(kiln_model *m, const char *name, const kiln_tensor *t);

/* model_config.c, model_config_read.c (the architecture JSON itself: kiln_model_to_json /
 * kiln_model_from_json) */
extern const char *const nn_init_class_names[KILN_INIT_COUNT];      /* Keras initializer class names */
kiln_status nn_class_names_json(const kiln_model *m, char **out);     /* *out NULL when none are set */
/* Sets m's class names from a JSON list of strings; on error the reason in why. */
kiln_status nn_class_names_read(kiln_model *m, const char *json, char *why, size_t why_n);

/* generate_text.c: the tokenizer a checkpoint stores (metadata kiln.tokenizer) becomes m's; none
 * stored is KILN_OK, a damaged one an error naming the file. */
struct kiln_safetensors;
kiln_status nn_tokenizer_from_checkpoint(kiln_model *m, const char *path, const struct kiln_safetensors *f);

/* model.c */
void nn_class_names_clear(kiln_model *m);
bool nn_is_weight_name(const kiln_model *m, const char *name, const nn_var **var);

#endif
