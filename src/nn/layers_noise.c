/* Noise layers (Keras 3's regularization layers): GaussianNoise (x + stddev n) and GaussianDropout
 * (x (1 + sqrt(rate / (1 - rate)) n)), n standard normal from the RandomNormal op (new noise every
 * step, seeded as Dropout). Training only: the identity in inference, predict and evaluate. The
 * noise is a source (no gradient), so dy/dx is 1 and 1 + s n. The level lives in l->rate. */
#include <math.h>
#include "nn/nn_layers.h"
#include "graph/graph_internal.h"

static uint64_t noise_seed(const nn_fwd *f, const kiln_layer *l) {
    return l->seed ? l->seed : kiln_mix64(f->m->seed ^ (0x6A05ull + (uint64_t)l->index));
}

/* ---- GaussianNoise ---- */
static const nn_opt_spec gnoise_opts[] = {
    { "stddev", NN_T_FLOAT, NN_CFG(rate), 0, { 0 } },       /* cfg.rate holds the stddev */
    { "seed", NN_T_SEED, NN_CFG(seed), 0, NN_DNULL },        /* None: from the model seed */
    { NULL },
};
static kiln_status gnoise_shape(kiln_layer *l, const nn_layer_cfg *c) {
    if (!(c->rate >= 0) || !isfinite(c->rate))
        return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "stddev %g must be a finite number >= 0", c->rate);
    l->rate = c->rate;
    l->seed = c->seed;
    l->out = l->in[0]->out;
    return KILN_OK;
}
static kiln_node *gnoise_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    if (!f->training || l->rate == 0) return x;
    kiln_node *n = kiln_random_normal_like(f->g, x, noise_seed(f, l));
    return kiln_add(f->g, x, kiln_mul(f->g, kiln_scalar_like(f->g, x, l->rate), n));
}
const nn_layer_def nn_def_gaussian_noise = { "GaussianNoise", "gaussian_noise", gnoise_opts, 1, 1, gnoise_shape, NULL, gnoise_forward };

/* ---- GaussianDropout ---- */
static const nn_opt_spec gdrop_opts[] = {
    { "rate", NN_T_FLOAT, NN_CFG(rate), 0, { 0 } },
    { "seed", NN_T_SEED, NN_CFG(seed), 0, NN_DNULL },
    { NULL },
};
static kiln_status gdrop_shape(kiln_layer *l, const nn_layer_cfg *c) {
    /* Keras accepts rate 1 and then divides by zero in training: refused here */
    if (!(c->rate >= 0 && c->rate < 1)) return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "rate %g must be in [0, 1)", c->rate);
    l->rate = c->rate;
    l->seed = c->seed;
    l->out = l->in[0]->out;
    return KILN_OK;
}
static kiln_node *gdrop_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    if (!f->training || l->rate == 0) return x;
    kiln_node *n = kiln_random_normal_like(f->g, x, noise_seed(f, l));
    kiln_node *m = kiln_add(f->g, kiln_scalar_like(f->g, x, 1.0),
                            kiln_mul(f->g, kiln_scalar_like(f->g, x, sqrt(l->rate / (1.0 - l->rate))), n));
    return kiln_mul(f->g, x, m);
}
const nn_layer_def nn_def_gaussian_dropout = { "GaussianDropout", "gaussian_dropout", gdrop_opts, 1, 1, gdrop_shape, NULL, gdrop_forward };
