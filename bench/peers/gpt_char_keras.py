"""nanoGPT's shakespeare-char model in Keras 3 on TensorFlow, the same as gpt_char_torch.py and Kiln's
gpt_char preset (6 layers, 6 heads, 384 wide, context 256, vocab 65, dropout 0.2 on the embedding,
the attention probabilities and both residual branches, biases, pre-LayerNorm blocks, exact GELU,
head tied to the token embedding; 10,770,816 parameters), keras.layers.MultiHeadAttention with
use_causal_mask=True, trained on random token batches with nanoGPT's recipe (AdamW lr 1e-3, betas
0.9/0.99, eps 1e-8, weight decay 0.1 on every weight as torch.optim.AdamW(model.parameters()),
global clip norm 1.0): tokens/s over --steps steps after 2 warm-up steps (tracing, XLA compile).
Steps go through model.train_on_batch (Keras' own compiled train step, no per-step data pipeline;
it returns the loss as a number, so each step is finished when timed, as torch's loss.item()).
--precision mixed_bfloat16 sets Keras' global policy (bf16 compute, f32 weights; the loss in f32);
--jit 1 compiles with jit_compile=True (XLA). Threads: intra-op = --threads, inter-op = 1.
usage: gpt_char_keras.py --threads 2 --precision float32|mixed_bfloat16 --jit 0|1 --batch 8 --steps 10"""
import argparse, os, time

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=2)
p.add_argument("--precision", default="float32")
p.add_argument("--jit", type=int, default=0)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--context", type=int, default=256)
a = p.parse_args()

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["KERAS_BACKEND"] = "tensorflow"
import numpy as np
import tensorflow as tf
import keras
from keras import layers, ops

tf.config.threading.set_intra_op_parallelism_threads(a.threads)
tf.config.threading.set_inter_op_parallelism_threads(1)
keras.utils.set_random_seed(1)
prec = "mixed_bfloat16" if a.precision in ("bfloat16", "mixed_bfloat16") else a.precision
keras.mixed_precision.set_global_policy(prec)
L, H, D, V, T, DROP = 6, 6, 384, 65, a.context, 0.2
PROJ_STD = 0.02 / (2 * L) ** 0.5       # nanoGPT's residual projections


def init(std=0.02):     # a fresh one per weight: an unseeded Keras initializer repeats its values
    return keras.initializers.RandomNormal(0.0, std)


class PositionEmbedding(layers.Layer):
    """Adds a learned (T, D) position embedding (nanoGPT's wpe)."""
    def build(self, shape):
        self.wpe = self.add_weight(shape=(shape[1], shape[2]), initializer=init(), name="wpe")

    def call(self, x):
        return x + ops.cast(self.wpe, x.dtype)


class TiedHead(layers.Layer):
    """Logits through the token embedding's transpose (weight tying): no weights of its own. The
    Embedding layer is kept outside Keras' attribute tracking so its matrix is counted and
    updated once."""
    def __init__(self, embedding, **kw):
        super().__init__(**kw)
        object.__setattr__(self, "_tied", embedding)

    def call(self, x):
        return ops.matmul(x, ops.transpose(ops.cast(self._tied.embeddings, x.dtype)))


def block(x, i):
    h = layers.LayerNormalization(epsilon=1e-5, name=f"h{i}_ln_1")(x)
    h = layers.MultiHeadAttention(H, D // H, dropout=DROP, kernel_initializer=init(), name=f"h{i}_attn")(h, h, use_causal_mask=True)
    x = layers.Add()([x, layers.Dropout(DROP)(h)])
    h = layers.LayerNormalization(epsilon=1e-5, name=f"h{i}_ln_2")(x)
    h = layers.Dense(4 * D, activation="gelu", kernel_initializer=init(), name=f"h{i}_fc")(h)      # exact GELU
    h = layers.Dense(D, kernel_initializer=init(PROJ_STD), name=f"h{i}_proj")(h)
    return layers.Add()([x, layers.Dropout(DROP)(h)])


idx = keras.Input((T,), dtype="int32")
wte = layers.Embedding(V, D, embeddings_initializer=init(), name="wte")
x = layers.Dropout(DROP)(PositionEmbedding(name="wpe")(wte(idx)))
for i in range(L):
    x = block(x, i)
x = layers.LayerNormalization(epsilon=1e-5, name="ln_f")(x)
model = keras.Model(idx, TiedHead(wte, name="lm_head")(x))
for i in range(L):      # nanoGPT scales the attention's output projection too (MHA takes one initializer)
    out = model.get_layer(f"h{i}_attn")._output_dense.kernel
    out.assign(init(PROJ_STD)(out.shape))
model.compile(optimizer=keras.optimizers.AdamW(1e-3, weight_decay=0.1, beta_1=0.9, beta_2=0.99, epsilon=1e-8, global_clipnorm=1.0),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=bool(a.jit))
rng = np.random.default_rng(1)
xb = tf.constant(rng.integers(0, V, (a.batch, T), dtype=np.int32))
yb = tf.constant(rng.integers(0, V, (a.batch, T), dtype=np.int32))
for _ in range(2):
    model.train_on_batch(xb, yb)
t0 = time.perf_counter()
for _ in range(a.steps):
    loss = float(model.train_on_batch(xb, yb))
dt = time.perf_counter() - t0
params = sum(int(np.prod(v.shape)) for v in model.trainable_weights)
print(f"keras {keras.__version__} (tensorflow {tf.__version__}) gpt_char {prec} jit={a.jit} threads={a.threads} batch={a.batch} "
      f"context={T} loss={loss:.4f} params={params} tokens_per_sec={a.steps * a.batch * T / dt:.1f}")
