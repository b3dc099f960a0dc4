/* Help text more than one command prints (kiln train / eval / predict / summary --help). */
#ifndef KILN_TOOLS_CLI_HELP_H
#define KILN_TOOLS_CLI_HELP_H
#include "tools/cli_args.h"     /* CLI_DEFAULT_DATA */

#define MODEL_FILE_HELP \
    "  --model-file FILE   the model as Keras model JSON (what Keras' model.to_json() writes, Keras 3\n" \
    "                      or tf.keras 2; docs/models.md, \"Keras model files\", lists its layers)\n" \
    "                      or an ONNX file (FILE.onnx: its network and weights; docs/models.md \"ONNX\")\n" \
    "                      or a Keras file with its weights (FILE.keras of Keras 3, FILE.h5 of\n" \
    "                      tf.keras 2 or Keras 3's legacy save; eval / predict need no --load then)\n" \
    "                      instead of a built-in --model\n"

#define DATA_HELP \
    "  --data SPEC         where the examples come from (default " CLI_DEFAULT_DATA "):\n" \
    "                        mnist:DIR      MNIST-layout IDX files (train-images-idx3-ubyte[.gz], ...;\n" \
    "                                       Fashion-MNIST too), 28x28x1, 10 classes\n" \
    "                        cifar10:DIR    CIFAR-10 binary batches: data_batch_1..5.bin + test_batch.bin\n" \
    "                                       (in DIR or DIR/cifar-10-batches-bin), 32x32x3, 10 classes\n" \
    "                        cifar100:DIR   CIFAR-100 train.bin + test.bin, 100 fine classes\n" \
    "                                       (cifar100-coarse:DIR for the 20 coarse ones)\n" \
    "                        images:DIR     an image folder DIR/CLASS_NAME/*.png|*.jpg, classes sorted by\n" \
    "                                       name, all images one size; DIR/train + DIR/test (or\n" \
    "                                       DIR/val) sub-folders are used as the two splits when present\n" \
    "                                       (test folders are matched to the training classes by name),\n" \
    "                                       else 10%% of the images are held out (see --validation-split)\n" \
    "                        npz:FILE.npz   a numpy archive (np.savez / np.savez_compressed, the keras.datasets\n" \
    "                                       files): x_train, y_train [, x_test, y_test]; x (N,H,W), (N,H,W,C)\n" \
    "                                       or (N,D), uint8 (scaled to [0, 1]) or float; y class ids, one-hot\n" \
    "                                       rows, or values (for --loss mse); without x_test 10%% is held out\n" \
    "                        csv:FILE.csv   numbers, one example per row, a header row optional; the label\n" \
    "                                       column is the last (or --label-column), the rest are features;\n" \
    "                                       test rows from --test-csv FILE, else 10%% held out\n" \
    "                        text:FILE      a text file for a language model (gpt_char): its bytes are the\n" \
    "                                       tokens (vocabulary 256) unless --tokenizer; needs --block-size\n" \
    "                                       (train, eval)\n" \
    "                        synthetic      random data shaped like the model's input (throughput runs)\n" \
    "                        DIR            any of the above, recognised from the files present\n" \
    "                      The test split of the same source gives val_* and the final accuracy.\n" \
    "                      The examples must have the model's input shape: fashion_cnn and mlp take\n" \
    "                      28x28x1 (grey), cifar_cnn 32x32x3 (colour); lenet5, resnet20, resnet56,\n" \
    "                      inception and fast_cifar take either (any image size they fit); mlp also\n" \
    "                      any other shape (CSV rows, npz arrays); the number of classes comes from the data.\n" \
    "  --label-column C    csv: the label column, by header name or 0-based index (-1: the last,\n" \
    "                      the default)\n" \
    "  --test-csv FILE     csv: the test rows, a file with the same columns as --data's\n"

#define TEXT_HELP \
    "  --block-size N      text: tokens in each window, the model's context (gpt_char gets it). A window\n" \
    "                      is N tokens as input and the same N shifted by one as the labels: the\n" \
    "                      model learns to predict each next token. Training takes windows at random\n" \
    "                      places in the first 90%% of the text (--seed picks them; an epoch is as many\n" \
    "                      windows as the training part has tokens / N, or --steps-per-epoch batches);\n" \
    "                      the last 10%% (--validation-split F) is held out, read in consecutive\n" \
    "                      windows. Loss, token accuracy and perplexity (exp of the loss: how many\n" \
    "                      tokens the model is choosing between, on average) are reported\n" \
    "  --tokenizer FILE    text: a tokenizer.json (Hugging Face BPE; kiln tokenizer train makes one)\n" \
    "                      whose ids are the tokens; its vocabulary must match the model's\n"

#define LOSS_HELP \
    "  --loss NAME         what training minimises (Keras' names):\n" \
    "                        sparse_categorical_crossentropy  labels are class ids (the default)\n" \
    "                        categorical_crossentropy         the same loss; class ids or one-hot npz rows\n" \
    "                        binary_crossentropy              labels 0/1, a model with one output unit\n" \
    "                                                         (the default for a one-unit model)\n" \
    "                        mse                              mean squared error on the label's value\n" \
    "                                                         (regression; the default for float labels)\n" \
    "                        mae (mean_absolute_error), huber (delta 1), log_cosh, poisson\n" \
    "                                                         regression on the label's value, as mse\n" \
    "                        hinge, squared_hinge             labels 0/1 (as -1/1) or -1/1, one output unit\n" \
    "                        kl_divergence, categorical_hinge, cosine_similarity\n" \
    "                                                         the outputs against the class id's one-hot row\n" \
    "                      built-in models get one output unit for binary_crossentropy, mse, mae, huber,\n" \
    "                      log_cosh, poisson, hinge and squared_hinge\n" \
    "  --metrics LIST      accuracy (binary accuracy for one output unit), top_k (top-5), none,\n" \
    "                      and Keras' precision, recall, auc (ROC), mae, mse, rmse,\n" \
    "                      top_k_categorical_accuracy:K (shown under these names, val_ for validation);\n" \
    "                      comma-separated (default: accuracy, none for mse and other value losses)\n"

#define PRECISION_HELP \
    "  --precision P       float32 (default); mixed_bfloat16 (bf16): convolutions and dense layers\n" \
    "                      compute in bf16 with f32 accumulation and the activations between them\n" \
    "                      (bias, relu, max pooling) are bf16: about half the activation memory;\n" \
    "                      batch norm, softmax, loss, metrics, weights and optimizer state stay f32\n" \
    "                      (a CPU without AVX512-BF16/AMX trains in f32 and says so);\n" \
    "                      mixed_float16 (fp16): the products in f16 with f32 results and dynamic\n" \
    "                      loss scaling (for GPUs; no faster on the CPU)\n"
#endif
