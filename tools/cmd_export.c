/* kiln export: a saved model as an ONNX file (kiln_model_export_onnx) or a Keras 3 .keras file
 * (kiln_model_save_keras). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "kiln/kiln.h"
#include "kiln/onnx.h"
#include "core/core.h"
#include "io/read_file.h"
#include "io/path_guard.h"
#include "tools/commands.h"
#include "tools/cli_model.h"

static void export_usage(FILE *f) {
    fprintf(f,
        "usage: kiln export --load PATH [--model NAME | --model-file F.json|F.keras|F.h5] --output FILE.onnx|FILE.keras\n"
        "                   [--probabilities]\n"
        "       kiln export --model-file F.keras|F.h5 --output FILE.onnx|FILE.keras\n"
        "       kiln export --model-file HF_DIR [--load CKPT] --output FILE.onnx|DIR/ [--tokenizer tokenizer.json]\n\n"
        "Writes the model a checkpoint holds, with its weights, as an ONNX file (opset 17) that\n"
        "onnxruntime, TensorRT, OpenVINO or PyTorch can run, or as a Keras 3 .keras file that\n"
        "keras.models.load_model reads (config.json, model.weights.h5, metadata.json), chosen by the\n"
        "output's name. Both take the same input as Kiln, NHWC [N, height, width, channels] with any\n"
        "batch size N. The ONNX model outputs what the Kiln model outputs: logits for the built-in\n"
        "models (see --probabilities); Dropout is left out and batch normalization uses its moving\n"
        "statistics (inference). The .keras file is the model as Kiln holds it, layer for layer.\n\n"
        "options:\n"
        "  --load PATH         the checkpoint (from kiln train --save PATH)\n"
        "  --model NAME        the built-in model to load it into (default: the model the\n"
        "                      checkpoint describes; models: %s)\n"
        "  --model-file F      the model a Keras file describes: architecture JSON (Keras's or\n"
        "                      kiln_model_to_json's), or a .keras / .h5 file, whose own weights are\n"
        "                      exported when --load is not given; or a Hugging Face GPT-2 folder\n"
        "                      (config.json, model.safetensors, tokenizer.json if any)\n"
        "  --output, -o FILE   the file to write (replaced atomically): FILE.onnx or FILE.keras; or DIR/\n"
        "                      (a directory): a GPT as a Hugging Face GPT-2 folder, with its tokenizer.json\n"
        "  --tokenizer FILE    the tokenizer.json a Hugging Face folder output gets (default: the input folder's)\n"
        "  --probabilities     ONNX: end with a Softmax, so the outputs are class probabilities\n\n"
        "examples:\n"
        "  kiln train --epochs 2 --save model.safetensors\n"
        "  kiln export --load model.safetensors -o model.onnx\n"
        "  python3 -c \"import onnxruntime as ort; s = ort.InferenceSession('model.onnx'); print(s.get_inputs()[0].shape)\"\n"
        "  kiln export --load model.safetensors -o model.keras\n"
        "  python3 -c \"import keras; keras.models.load_model('model.keras').summary()\"\n",
        kiln_model_preset_names());
}

static bool is_dir(const char *p) {
    struct stat sb;
    return !stat(p, &sb) && S_ISDIR(sb.st_mode);
}

/* The whole file as a string (NULL after a message); a FIFO or a device is refused, not waited on. */
static char *read_text(const char *path) {
    uint8_t *s;
    size_t n;
    if (kiln_file_read_all(path, "model file", (uint64_t)256 << 20, &s, &n) != KILN_OK) {
        fprintf(stderr, "kiln export: %s\n", kiln_last_error());
        return NULL;
    }
    if (strlen((char *)s) != n) {
        fprintf(stderr, "kiln export: model file '%s': not a JSON text (it holds a NUL byte)\n", path);
        kiln_free(s);
        return NULL;
    }
    return (char *)s;
}

static int fail(int rc) { fprintf(stderr, "kiln export: %s\n", kiln_last_error()); return rc; }

/* a GPT as a Hugging Face folder, with tok (a tokenizer.json) or the model's own tokenizer */
static int save_hf(kiln_model *m, const char *dir, const char *tok) {
    kiln_tokenizer *t = NULL;
    if (tok && (kiln_tokenizer_load(tok, &t) != KILN_OK || kiln_model_set_tokenizer(m, t) != KILN_OK)) return fail(1);
    if (kiln_model_save_hf_gpt2(m, dir) != KILN_OK) return fail(1);
    printf("Exported %s to %s: a Hugging Face GPT-2 folder (config.json, model.safetensors%s)\n", kiln_model_name(m), dir,
           kiln_model_tokenizer(m) ? ", tokenizer.json" : "");
    return 0;
}

int cmd_export(int argc, char **argv) {
    const char *load = NULL, *model = NULL, *file = NULL, *out = NULL, *tok = NULL;
    bool probs = false;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        const char **dst = !strcmp(o, "--load") ? &load : !strcmp(o, "--model") ? &model : !strcmp(o, "--model-file") ? &file
                         : !strcmp(o, "--output") || !strcmp(o, "-o") ? &out : !strcmp(o, "--tokenizer") ? &tok : NULL;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { export_usage(stdout); return 0; }
        if (!strcmp(o, "--probabilities")) { probs = true; continue; }
        if (!dst) { fprintf(stderr, "kiln export: unexpected argument '%s' (see kiln export --help)\n", o); return 2; }
        if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2)) { fprintf(stderr, "kiln export: option %s needs a value (see kiln export --help)\n", o); return 2; }
        *dst = argv[++i];
    }
    bool hf_in = file && kiln_is_hf_folder(file);
    bool own = file && (cli_is_keras(file) || hf_in) && !load;      /* a .keras / .h5 file's own weights */
    size_t on = out ? strlen(out) : 0;
    bool keras = on > 6 && !strcmp(out + on - 6, ".keras"), hf_out = out && (out[on - 1] == '/' || is_dir(out));
    if (!load && !own) { fprintf(stderr, "kiln export: --load PATH is required (a checkpoint from kiln train --save PATH), or --model-file F.keras|F.h5|HF_DIR (a Hugging Face GPT-2 folder)\n"); return 2; }
    if (!out) { fprintf(stderr, "kiln export: --output FILE.onnx is required (or FILE.keras for Keras 3)\n"); return 2; }
    /* the output must not be an input: writing it would destroy the file being read */
    const char *same = load && kiln_same_file(out, load) ? "--load" : file && kiln_same_file(out, file) ? "--model-file" : NULL;
    if (same) {
        fprintf(stderr, "kiln export: --output %s is the same file as %s %s: writing it would destroy the input; give the output "
                "file another name\n", out, same, !strcmp(same, "--load") ? load : file);
        return 2;
    }
    if (!keras && !hf_out && !cli_is_onnx(out)) { fprintf(stderr, "kiln export: --output %s: name it FILE.onnx (ONNX), FILE.keras (Keras 3) or DIR/ (a Hugging Face folder)\n", out); return 2; }
    if (tok && !hf_out) { fprintf(stderr, "kiln export: --tokenizer is for a Hugging Face folder output (--output DIR/)\n"); return 2; }
    if (keras && probs) { fprintf(stderr, "kiln export: --probabilities is for ONNX files; a .keras file keeps the model's own output\n"); return 2; }
    if (model && file) { fprintf(stderr, "kiln export: --model and --model-file both name a model; give one\n"); return 2; }
    bool onnx_in = file && cli_is_onnx(file);
    if (onnx_in && (!load || keras)) {
        fprintf(stderr, "kiln export: --model-file %s is already an ONNX file%s\n", file,
                keras ? "; Kiln writes an imported ONNX graph back as ONNX only" : " (with --load CKPT: that file with the checkpoint's fine-tuned weights)");
        return 2;
    }
    if (keras && !kiln_keras_files_available()) {
        fprintf(stderr, "kiln export: this kiln was built without HDF5, which .keras files need (apt-get install libhdf5-dev and rebuild)\n");
        return 1;
    }
    if (!keras && !hf_out && !kiln_onnx_available()) {
        fprintf(stderr, "kiln export: this kiln was built without ONNX support; install protobuf-c and ONNX's headers "
                "(apt-get install libprotobuf-c-dev protobuf-c-compiler libonnx-dev) and rebuild\n");
        return 1;
    }
    kiln_safetensors *f = NULL;
    kiln_model *m = NULL, *ck = NULL;
    int rc = 0;
    if (load && kiln_safetensors_load(load, &f) != KILN_OK) return fail(1);
    if (onnx_in) {          /* the imported graph with the weights of its fine-tuning (kiln train --model-file F.onnx --save) */
        if (kiln_model_from_onnx(file, NULL, &m) != KILN_OK) rc = fail(1);
        else if (kiln_model_load_opts(m, load, &(kiln_load_opts){ .file = f }) != KILN_OK) {   /* trained on NHWC images? */
            kiln_model_free(m);
            m = NULL;
            if (kiln_model_from_onnx(file, &(kiln_onnx_model_opts){ .nhwc_input = true }, &m) != KILN_OK) rc = fail(1);
        }
    } else if (hf_in) {
        if (kiln_model_from_hf_gpt2(file, &m) != KILN_OK) rc = fail(1);
    } else if (file && cli_is_keras(file)) {
        if (kiln_model_from_keras_file(file, &m) != KILN_OK) rc = fail(1);
    } else if (file) {
        char *json = read_text(file);
        if (!json) rc = 1;
        else if (kiln_model_from_json(json, &m) != KILN_OK) rc = fail(1);
        kiln_free(json);
    } else if (kiln_model_build_from_checkpoint(f, load, &ck) != KILN_OK) rc = fail(1);
    else if (model) {        /* the built-in model, shaped as the checkpoint's */
        kiln_shape o = kiln_model_output_shape(ck);
        m = kiln_model_preset(model, kiln_model_input_shape(ck), o.rank == 1 ? (int)o.dim[0] : 0);
        if (!m) rc = fail(2);
    } else { m = ck; ck = NULL; }
    if (!rc && load && kiln_model_load_opts(m, load, &(kiln_load_opts){ .file = f }) != KILN_OK) rc = fail(1);
    if (!rc && keras && kiln_model_save_keras(m, out) != KILN_OK) rc = fail(1);
    if (!rc && hf_out) rc = save_hf(m, out, tok);
    else if (!rc && !keras && kiln_model_export_onnx(m, out, &(kiln_onnx_export_opts){ .probabilities = probs }) != KILN_OK) rc = fail(1);
    if (rc || hf_out) { /* said */ }
    else if (keras) {
        char in[64], o[64];
        printf("Exported %s (epoch %d) to %s: input %s NHWC, output %s, Keras 3 (keras.models.load_model)\n", kiln_model_name(m),
               kiln_model_epoch(m), out, kiln_shape_str(kiln_model_input_shape(m), in, sizeof in),
               kiln_shape_str(kiln_model_output_shape(m), o, sizeof o));
    } else if (onnx_in) {
        printf("Exported %s (epoch %d) to %s: the graph of %s with the weights of %s\n", kiln_model_name(m), kiln_model_epoch(m), out, file, load);
    } else {
        char in[64], o[64];
        printf("Exported %s (epoch %d) to %s: input %s NHWC, output %s%s, ONNX opset 17\n", kiln_model_name(m), kiln_model_epoch(m), out,
               kiln_shape_str(kiln_model_input_shape(m), in, sizeof in), kiln_shape_str(kiln_model_output_shape(m), o, sizeof o),
               probs ? " (probabilities)" : "");
    }
    kiln_model_free(m);
    kiln_model_free(ck);
    kiln_safetensors_free(f);
    return rc;
}
