/* train.h: the retraining engine every compression stage builds on.
 *
 * The model is a document (model/doc.h): the toolchain's one in-memory form
 * of a network, what a .dcz file holds. A dcz_net is the training state over
 * one document: layer i of the net is layer i of the document (the graph
 * order of docs/FORMAT.md: each layer reads earlier tensors, tin: 0 the
 * input, j + 1 the output of layer j), its settings read from the
 * document's attributes, its parameters in the net's flat buffer while it
 * trains and written back into the document by dcz_net_store. A network
 * built by hand or by architecture name gets its document when it is
 * validated. A layer read by several others gets the sum of their
 * gradients. Dense layers run forward and backward through OpenBLAS
 * sgemm, convolutions by im2col and libdcz's dense product, a cache-sized
 * tile of the batch at a time;
 * the loss is softmax cross-entropy on the last layer's logits (a final
 * softmax layer, when present, is the identity for training).
 *
 * Two modes: training (dcz_net_grad, dcz_train_epoch) normalizes BATCHNORM
 * layers by the statistics of the batch, updating their running statistics,
 * and drops units in DROPOUT layers; inference (dcz_net_forward,
 * dcz_net_evaluate) uses the running statistics and no dropout.
 *
 * Compression state lives in the layers and is honoured by training:
 * - mask (when not NULL): pruned weights are exactly 0 before and after
 *   every step; their gradients and momentum are zeroed.
 * - codebook (when not NULL): weight sharing. Every kept weight equals
 *   codebook[assign[i]]; a step moves the centroids, never the assignments,
 *   by the sum of the gradients of the weights assigned to each centroid
 *   (Deep Compression, section 3.2), then rewrites the weights.
 * Both apply alike to DENSE and CONV weights (dcz_tlayer_has_weights).
 *
 * Data: dcz_data_load reads MNIST-style IDX files (gzip or plain) from a
 * directory, or Fashion-MNIST from Debian's dataset-fashion-mnist package for
 * the spec "fashion-mnist", into memory, or folders of PNG and JPEG images
 * (train/png.h), which stream: decoded from their files each time they are
 * read (dcz_dataset_samples). Images become floats in [0, 1], or what the
 * model's preprocessing makes of them; training batches may be varied at
 * random as torchvision trains ImageNet networks (dcz_augment: random
 * resized crops and flips, reproducible from the seed).
 *
 * Tested by tests/unit/test_train.c and tests/unit/test_idx.c; the IDX parser
 * is fuzzed by tests/fuzz/fuzz_idx.c. The helpers for stages (util.c) are
 * checked through tests/unit/test_prune.c and tests/unit/test_quantize.c.
 */
#ifndef DCZ_TRAIN_H
#define DCZ_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"
#include "model/doc.h"
#include "runtime/format/ops.h"

/* ---- random numbers: xoshiro256**, seeded through splitmix64 ------------ */

typedef struct dcz_rng { uint64_t s[4]; } dcz_rng;

void dcz_rng_seed(dcz_rng *r, uint64_t seed);
uint64_t dcz_rng_u64(dcz_rng *r);
float dcz_rng_uniform(dcz_rng *r);            /* [0, 1) */
float dcz_rng_normal(dcz_rng *r);             /* mean 0, sd 1 */
uint32_t dcz_rng_below(dcz_rng *r, uint32_t n); /* [0, n), unbiased; n > 0 */
uint64_t dcz_rng_mix64(uint64_t z);           /* splitmix64's finalizer: a bijection mixing every bit */

/* ---- datasets ------------------------------------------------------------ */

/* The files of a streaming dataset (an image folder, train/data_png.c):
 * opaque, shared by counted reference among the datasets that read them. */
typedef struct dcz_image_files dcz_image_files;

/* A dataset of n samples, in one of two forms:
 * - in memory (IDX files): x holds every sample as floats;
 * - streaming (image folders): x is NULL; files lists the images (paths,
 *   and the size and CRC32 of each as the load checked it) and the
 *   samples are decoded from them whenever they are read, so the memory a
 *   dataset takes does not grow with its images (a few dozen bytes a file).
 * Labels are in memory in both forms. Read samples through
 * dcz_dataset_samples, whichever the form. */
typedef struct dcz_dataset {
    size_t n;            /* samples */
    uint32_t c, h, w;    /* sample shape; a sample is c*h*w floats */
    uint32_t classes;    /* max label + 1 */
    float *x;            /* (n, c*h*w), values in [0, 1]; NULL when streaming */
    uint8_t *y;          /* (n) labels */
    uint32_t hash;       /* provenance: a CRC32 of what was read (see
                            dcz_data_load and dcz_dataset_holdout) */
    dcz_image_files *files;  /* streaming: the files (one reference); NULL in memory */
    uint32_t *pick;      /* streaming: (n) the file of each sample, or NULL
                            when sample i is file i */
} dcz_dataset;

/* The splits: an image folder may also hold ROOT/val/CLASS/NAME.png, a
 * validation split of its own (DCZ_SPLIT_VAL; IDX files have none). */
enum { DCZ_SPLIT_TRAIN = 0, DCZ_SPLIT_TEST = 1, DCZ_SPLIT_VAL = 2 };

/* Whether spec is an image folder with a validation split (ROOT/val). */
int dcz_data_has_val(const char *spec);

/* Loads one split. spec is "fashion-mnist" (Debian's package location,
 * /usr/share/datasets/fashion-mnist), a directory holding
 * {train,t10k}-{images-idx3,labels-idx1}-ubyte, each optionally ".gz", or
 * a directory of PNG images ROOT/{train,test,val}/CLASS/NAME.png (recognised by
 * its train or test folder; rules in train/png.h, dcz_png_folder_load).
 * IDX files load in memory, their hash a CRC32 over the image file's bytes
 * then the label file's (decompressed); image folders stream, their hash
 * a CRC32 over each file's name and bytes then the labels.
 * On failure writes a one-line reason to err (errlen bytes) and returns
 * DCZ_ERR_IO (missing/unreadable) or DCZ_ERR_DATA (malformed). */
dcz_status dcz_data_load(const char *spec, int split, dcz_dataset *out,
                         char *err, size_t errlen);

/* The memory a dataset split may take by default: 2 GiB of samples as
 * floats (Fashion-MNIST's train split takes 188 MB), or of a streaming
 * split's file list. */
#define DCZ_DATA_DEFAULT_MAX ((uint64_t)1 << 31)

/* dcz_data_load with a bound on the memory of the split: max_bytes of
 * floats for the samples of IDX files, of the file list for an image folder
 * (whose files are each read whole only when at most max_bytes);
 * dcz_data_load uses DCZ_DATA_DEFAULT_MAX. A split that would take more,
 * whatever its files claim or decompress to (a small gzip file can inflate
 * a thousandfold), gives DCZ_ERR_LIMIT before its memory is taken. */
dcz_status dcz_data_load_max(const char *spec, int split, uint64_t max_bytes, dcz_dataset *out,
                             char *err, size_t errlen);

/* dcz_data_load_max through preprocessing prep (NULL: none): an image
 * folder's images, of any size, become samples of (prep->channels, and the
 * size after its resize and crop) by dcz_prep_apply; IDX samples, which have
 * one size, are normalized, and a resize or crop that would change their
 * size gives DCZ_ERR_SHAPE. */
dcz_status dcz_data_load_prep(const char *spec, int split, uint64_t max_bytes, const dcz_preprocess *prep,
                              dcz_dataset *out, char *err, size_t errlen);

/* Parses decompressed IDX image and label buffers (ubyte images of rank 3,
 * ubyte labels of rank 1, same count). Exposed for tests and fuzzing. */
dcz_status dcz_idx_parse(const uint8_t *img, size_t img_len,
                         const uint8_t *lbl, size_t lbl_len,
                         dcz_dataset *out, char *err, size_t errlen);

/* Holds n samples of d out (0 < n < d->n): a seeded choice (the first n
 * places of a Fisher-Yates shuffle from seed) into held, the others into
 * rest (may be NULL), each part in the order of d. A part of an in-memory
 * set is a copy of its samples, its hash a CRC32 over their floats then
 * their labels; a part of a streaming set is a list of d's files (d,
 * held and rest share them, and each may be freed first), its hash a
 * CRC32 over, sample by sample, the file's name (as in d's hash) and the
 * CRC32 of its bytes (4 bytes, little-endian), then the labels: nothing is
 * decoded. The same d, n and seed give the same parts. DCZ_ERR_ARG for n
 * out of range, DCZ_ERR_NOMEM (nothing allocated is left). */
dcz_status dcz_dataset_holdout(const dcz_dataset *d, size_t n, uint64_t seed, dcz_dataset *held,
                               dcz_dataset *rest);

/* The seed of the validation split: one fixed choice of samples for every
 * verb and every --seed, so that a model trained without them (dcz train
 * --validation N) is compressed and steered on samples it never saw. */
#define DCZ_VALIDATION_SEED 0x76616cu

/* Releases the dataset's arrays and its reference to its files, and zeroes
 * it. NULL-safe. */
void dcz_dataset_free(dcz_dataset *d);

/* Nonzero when d's samples can be read: labels and either the samples in
 * memory or the files of a streaming set. */
static inline int dcz_dataset_ready(const dcz_dataset *d)
{
    return d->y && (d->x || d->files);
}

/* Reads n samples of d into x ((n, c*h*w) floats, the caller's): sample j
 * of x is sample idx[first + j] of d, or first + j when idx is NULL, so a
 * caller passes its whole (shuffled) order and the place of a batch in it.
 * In memory, a copy. Streaming, each sample's file is read, checked to be
 * the file the load checked (same size and CRC32 of its bytes), decoded and
 * converted (dcz_png_folder_load's values), the files split over the
 * trainer's threads (dcz_train_set_threads); the floats are the same
 * whatever the thread count, in the order asked. On failure a one-line
 * reason naming the file goes to err (may be NULL) and is kept with the
 * files for dcz_dataset_error: DCZ_ERR_IO for a file gone or unreadable,
 * DCZ_ERR_DATA for one that changed or no longer decodes, DCZ_ERR_NOMEM;
 * the first failing sample in x's order is the one reported, and x is then
 * undefined. DCZ_ERR_ARG for an index beyond d->n. */
dcz_status dcz_dataset_samples(const dcz_dataset *d, const size_t *idx, size_t first, size_t n, float *x,
                               char *err, size_t errlen);

/* The reason of the last failure of dcz_dataset_samples on d's files (any
 * dataset sharing them), for callers that got only its status through a
 * library call (dcz_train_epoch, ...); "" when none or in memory. */
const char *dcz_dataset_error(const dcz_dataset *d);

/* ---- training augmentation (augment.c) ------------------------------------ */

/* The variations torchvision trains ImageNet networks with, applied to
 * training samples only (the batches of dcz_train_epoch, dcz_sgd.augment;
 * never evaluation, calibration or a test split):
 * - DCZ_AUG_CROP: RandomResizedCrop. A box of the decoded image (area 8% to
 *   100% of it, width / height 3/4 to 4/3, dcz_augment_crop_box) is cut out
 *   and resized to the sample's size by PIL's bilinear filter
 *   (dcz_prep_box), then normalized by the preprocessing's mean and
 *   deviation; the record's resize and center crop are not applied (they
 *   are what evaluation does). Image folders only: in-memory (IDX) samples
 *   have lost their image, and give DCZ_ERR_UNSUPPORTED.
 * - DCZ_AUG_FLIP: RandomHorizontalFlip, p 0.5: every row of every channel
 *   of the sample reversed (after the crop); on image folders and IDX
 *   samples alike (planar (C, H, W)). */
enum { DCZ_AUG_FLIP = 1u, DCZ_AUG_CROP = 2u, DCZ_AUG_ALL = 3u };

/* One read's augmentation: what (DCZ_AUG_* bits, 0 none), and the epoch's
 * key: sample s of the dataset (its index in d, wherever it stands in the
 * order read) draws its crop box, then its flip, from
 * dcz_augment_rng(key, s), so the result depends on neither the thread
 * count nor the batch. */
typedef struct dcz_augment {
    unsigned what;
    uint64_t key;
} dcz_augment;

/* dcz_dataset_samples, each sample varied as aug says (NULL or what 0:
 * exactly dcz_dataset_samples). DCZ_ERR_ARG for unknown bits,
 * DCZ_ERR_UNSUPPORTED (with a reason in err) for a crop of in-memory
 * samples. */
dcz_status dcz_dataset_samples_aug(const dcz_dataset *d, const size_t *idx, size_t first, size_t n,
                                   const dcz_augment *aug, float *x, char *err, size_t errlen);

/* The generator of sample s under key: seeded by a hash of both. */
void dcz_augment_rng(uint64_t key, size_t sample, dcz_rng *r);

/* A box of an image: columns x .. x + w - 1, rows y .. y + h - 1. */
typedef struct dcz_box { uint32_t x, y, w, h; } dcz_box;

/* torchvision's RandomResizedCrop.get_params, scale (0.08, 1), ratio
 * (3/4, 4/3), for a w x h image (w, h >= 1), drawn from r: a box inside the
 * image, of area within the scale range and width / height within the
 * ratio range up to the rounding of each side to whole pixels; after 10
 * draws that do not fit, the center box of the image's ratio clamped into
 * the range. */
dcz_box dcz_augment_crop_box(uint32_t w, uint32_t h, dcz_rng *r);

/* Nonzero with probability 1/2, drawn from r: flip this sample. */
int dcz_augment_draw_flip(dcz_rng *r);

/* Reverses every row of x, planar (c, h, w) floats. */
void dcz_augment_flip(float *x, uint32_t c, uint32_t h, uint32_t w);

/* ---- the network --------------------------------------------------------- */

/* A layer's operator is one of the table's (runtime/format/ops.h), the same codes
 * as in a file: DENSE (y = W x + b, W (out, in) row-major), RELU, SOFTMAX
 * (the identity while training: the loss is fused), CONV2D (W (out_c, in_c,
 * kh, kw), b (out_c)), MAXPOOL (padding never wins), AVGPOOL
 * (count_include_pad), GLOBAL_AVGPOOL ((C, H, W) -> (C, 1, 1)), FLATTEN
 * ((C, H, W) -> (C*H*W), data unchanged), and the training-only BATCHNORM
 * (per channel: w = gamma (c), b = beta (c); folded into the preceding
 * conv before a net is written) and DROPOUT (zeroes a fraction `rate` and
 * scales the rest by 1/(1-rate); the identity in inference). */

/* Batch norm's defaults (PyTorch's) */
#define DCZ_BN_EPS 1e-5f
#define DCZ_BN_MOMENTUM 0.1f

typedef struct dcz_tlayer {
    dcz_op op;
    char name[64];
    /* the tensors it reads: 0 the network input, j + 1 the output of layer
     * j < this one; nin 0 (a caller filling a layer by hand) stands for
     * the layer before (the input for layer 0), and dcz_net_validate writes
     * that in */
    uint32_t nin;
    uint32_t tin[DCZ_MAX_INPUTS];
    int in, out;          /* features of one sample (flattened C*H*W) of its
                             first input and of its output; in == out for
                             RELU, SOFTMAX, FLATTEN, BATCHNORM, DROPOUT, ADD,
                             MUL and the activations */

    /* spatial geometry (CONV, pools, GAP, FLATTEN, BATCHNORM): the input is
     * (in_c, in_h, in_w) and the output (out_c, out_h, out_w), C order, so
     * in == in_c * in_h * in_w and out == out_c * out_h * out_w. Unused
     * (0) for DENSE, RELU, SOFTMAX and DROPOUT. */
    int in_c, in_h, in_w;
    int out_c, out_h, out_w;
    int kh, kw;           /* CONV and pools: window */
    int sh, sw;           /* CONV and pools: stride (>= 1) */
    int ph, pw;           /* CONV and pools: zero padding each side (< window) */
    int count_include_pad;/* AVGPOOL: padded cells count in the divisor */
    int group;            /* CONV: groups (0 counts as 1), dividing in_c and out_c;
                             CHANNEL_SHUFFLE: its groups, dividing in_c */
    int start;            /* SLICE: its first channel (out_c channels from it) */
    float rate;           /* DROPOUT: fraction dropped, [0, 1) */
    float param[2];       /* CLIP min, max; LEAKY_RELU alpha; HARD_SIGMOID alpha, beta */

    /* parameters, owned (w and b by the net's flat buffer, dcz_net.param,
     * once it is laid out). Weights of DENSE and CONV (the compressible ones,
     * dcz_tlayer_has_weights) are a (rows, cols) row-major matrix:
     * DENSE (out, in), CONV (out_c, in_c * kh * kw), that is the tensor
     * (out_c, in_c, kh, kw) in C order. BATCHNORM keeps gamma in w and beta
     * in b (c each) and is never masked or shared. */
    float *w;             /* (rows, cols) */
    float *b;             /* (dcz_tlayer_nbias) */
    uint8_t *mask;        /* (rows, cols) 1 kept, 0 pruned; NULL: dense */
    int k;                /* codebook entries; 0: no weight sharing */
    float *codebook;      /* (k) */
    uint8_t *assign;      /* (rows, cols) centroid of each weight (kept ones) */

    /* BATCHNORM statistics, owned: running mean and variance (c each),
     * updated as r = (1 - bn_momentum) r + bn_momentum batch_stat */
    float *run_mean, *run_var;
    float eps, bn_momentum;   /* 0: DCZ_BN_EPS, DCZ_BN_MOMENTUM */

    /* training state, owned, allocated on demand */
    float *gw, *gb;       /* gradients */
    float *vw, *vb;       /* momentum */
    float *gcb, *vcb;     /* codebook gradient and momentum (k) */
    void *cache;          /* forward values of the last training pass, kept
                             for backward: MAXPOOL int32 argmax (batch, out);
                             BATCHNORM mean and 1/sqrt(var + eps) (2, c);
                             DROPOUT uint8 mask (batch, in). Sized with
                             net->act. */
    size_t cache_bytes;
    /* BATCHNORM whose output a RELU or a CLIP alone reads: the batch norm
     * applies it as it writes (act_after: its op, act_lo and act_hi the
     * CLIP's bounds), and the activation's output is the same buffer,
     * which it leaves as it is (dcz_net_reserve sets them; act_fused on
     * the activation) */
    uint16_t act_after;
    uint8_t act_fused;
    float act_lo, act_hi;
    /* Sparse variational dropout (prune/variational.c), while it trains a
     * DENSE layer; NULL otherwise, and never owned by the layer: the log
     * variance of each weight's Gaussian noise, log sigma^2 (rows, cols),
     * sigma^2 itself with pruned weights' 0 (kept in step by the owner
     * after each update), and the gradient of the loss with respect to
     * log sigma^2. A training pass then draws the layer's output as the
     * local reparameterization trick does (Kingma et al. 2015): y = x W^T
     * + b + sqrt((x * x) sigma^2^T) eps, eps ~ N(0, 1) per output and
     * sample, dcz_vd_noise of a key drawn from vd_rng (the owner's
     * generator, not net->rng) for each pass; cache holds eps, the
     * deviations and x * x. */
    float *vd_ls, *vd_s2, *vd_gls;
    dcz_rng *vd_rng;
} dcz_tlayer;

/* Nonzero for layers whose weights can be pruned and shared (DENSE, CONV). */
static inline int dcz_tlayer_has_weights(const dcz_tlayer *l)
{
    const dcz_op_info *o = dcz_op_get(l->op);
    return o && o->weighted;
}

/* Groups of a CONV layer (1 for any other). */
static inline int dcz_tlayer_groups(const dcz_tlayer *l)
{
    return l->op == DCZ_OP_CONV2D && l->group > 1 ? l->group : 1;
}

/* Columns of the weight matrix: DENSE in, CONV in_c / group * kh * kw,
 * BATCHNORM 1. */
static inline size_t dcz_tlayer_wcols(const dcz_tlayer *l)
{
    if (l->op == DCZ_OP_DENSE) return (size_t)l->in;
    if (l->op == DCZ_OP_CONV2D)
        return (size_t)(l->in_c / dcz_tlayer_groups(l)) * (size_t)l->kh * (size_t)l->kw;
    return 1;
}

/* Rows of the weight matrix (= bias entries): DENSE out, CONV out_c,
 * BATCHNORM c; 0 for layers without parameters. */
static inline size_t dcz_tlayer_nbias(const dcz_tlayer *l)
{
    if (l->op == DCZ_OP_DENSE) return (size_t)l->out;
    if (l->op == DCZ_OP_CONV2D) return (size_t)l->out_c;
    if (l->op == DCZ_OP_BATCHNORM) return (size_t)l->in_c;
    return 0;
}

/* Number of weights: rows * cols (0 for layers without parameters). */
static inline size_t dcz_tlayer_nweights(const dcz_tlayer *l)
{
    return dcz_tlayer_nbias(l) * dcz_tlayer_wcols(l);
}

/* n draws of N(0, 1) into eps from key alone: pair p of them is the Box-Muller
 * pair (cos, sin) of the uniforms in splitmix64's mix of key + p times the
 * golden ratio, so they are the same whatever the trainer's thread count
 * (the pairs are split over its threads). Variational dropout's noise. */
void dcz_vd_noise(uint64_t key, size_t n, float *eps);

typedef struct dcz_net {
    int nlayers;
    dcz_tlayer *layers;   /* the view of doc->layers, one for one */
    dcz_doc *doc;         /* the model: structure, input shape and stage
                             history; parameters as of the last
                             dcz_net_store. Owned when own_doc (a net made by
                             hand or by name), else the caller's, which must
                             outlive the net (dcz_net_open) */
    int own_doc;
    int in_dim;           /* floats per input sample */
    int classes;          /* floats per output sample */
    uint32_t in_rank;     /* shape of one input sample: (in_dim) or (C, H, W) */
    uint32_t in_dims[4];
    dcz_rng rng;          /* dropout masks; seeded by dcz_net_create_arch
                             (from its seed), by dcz_net_alloc and
                             dcz_net_open (seed 0) */
    /* tensor t (0 the input, j + 1 the output of layer j): its shape as
     * (c, h, w) (a flat vector of n: (n, 1, 1)) and elements, set by
     * dcz_net_validate; owned, nlayers + 1 */
    uint32_t (*tshape)[3];
    uint32_t *twidth;
    /* activation buffers for up to cap_batch samples, owned */
    int cap_batch;
    float **act;          /* act[t]: tensor t (nlayers + 1 buffers) */
    float **dact;         /* gradients w.r.t. act[t] */
    float *gsum;          /* scratch for the gradients of tensors read twice */
    size_t gsum_floats;
    float *work;          /* scratch of the CONV layers (im2col columns of
                             a tile, one scratch per thread), work_floats
                             floats, owned; sized with act */
    size_t work_floats;
    /* One flat buffer per kind of parameter state, owned, the layers'
     * pointers into it: per layer with parameters (DENSE, CONV, BATCHNORM),
     * in order, its weights (rows, cols) (BATCHNORM: gamma) and its bias
     * (beta); gradients and momentum then, layer after layer, the k entries
     * of each codebook (a layer with a codebook has no weight momentum: its
     * centroids move). param
     * is laid out by dcz_net_validate and dcz_net_init_params once every
     * such layer has w and b; grad and mom by training. So the parameters
     * are one vector to copy or broadcast, and the gradients one to
     * reduce (gradient j is that of parameter j). */
    float *param, *grad, *mom;
    size_t param_count, grad_count, mom_count;
} dcz_net;

/* Creates a network from an architecture name:
 *
 *   lenet300      784-300-100-10 perceptron: fc1 relu1 fc2 relu2 fc3 prob.
 *   mlp:W0-W1-..-Wn
 *                 perceptron of 2 to 64 widths (each 1..65536, at most 2^28
 *                 weights per layer), ReLU between fully connected layers:
 *                 fc1 relu1 fc2 ... fcN prob.
 *   lenet5        the Caffe LeNet-5 that Deep Compression uses, input
 *                 1x28x28: conv1 (20 filters 5x5) pool1 (max 2x2 stride 2)
 *                 conv2 (50 filters 5x5) pool2 (max 2x2 stride 2) flatten
 *                 fc1 (800->500) relu1 fc2 (500->10) prob; no ReLU after the
 *                 convolutions; 431,080 parameters.
 *   cnn:T1-T2-..-Tn
 *                 a convolutional network from tokens separated by '-':
 *       iCxHxW        input shape C channels of H x W (first token only;
 *                     default i1x28x28); C, H, W 1..4096, C*H*W <= 2^24
 *       cNkK[sS][pP][gG]
 *                     convolution of N filters (1..4096) K x K (1..32),
 *                     stride S (1..32, default 1), zero padding P each side
 *                     (0..K-1, default K/2: "same" size for odd K, stride 1),
 *                     G groups (default 1; dividing N and the input's
 *                     channels), fields in this order; followed by batch
 *                     norm and ReLU
 *       rN[sS]        residual block (He et al. 2016, basic block) of N
 *                     filters, stride S (default 1): resB.conv1 (3x3,
 *                     stride S) resB.bn1 resB.relu1 resB.conv2 (3x3)
 *                     resB.bn2; the shortcut is the block's input, or when
 *                     S is not 1 or the channels change a projection
 *                     resB.proj (1x1, stride S) resB.projbn; then resB.add
 *                     of the two and resB.relu
 *       mN[eE][sS][q] inverted residual block (MobileNetV2) of N outputs,
 *                     expansion E (1..8, default 6), stride S (default 1):
 *                     invB.expand (1x1 to E times the input's channels;
 *                     absent for E 1) invB.bn1 invB.relu1, invB.dw
 *                     (depthwise 3x3, stride S) invB.bn2 invB.relu2, with q
 *                     a squeeze-and-excitation gate (invB.se.pool global
 *                     average, invB.se.fc1 to a quarter of the channels but
 *                     at least 8, invB.se.relu, invB.se.fc2, invB.se.gate
 *                     hard sigmoid x/6 + 1/2, invB.se.scale multiplying
 *                     each channel by its gate), invB.project (1x1 to N, no
 *                     activation) invB.bn3, and invB.add of the block's
 *                     input when S is 1 and the channels are kept; its
 *                     ReLUs are ReLU6 (CLIP to [0, 6])
 *       pK            max pooling K x K (1..32), stride K
 *       aK            average pooling K x K (1..32), stride K
 *       gap           global average pooling: (C, H, W) -> (C, 1, 1)
 *       dR            dropout of R percent (0..99) of its input
 *       fN            fully connected layer of N outputs (1..65536)
 *     c, r, m, p, a and gap tokens must come before the first f token; the last
 *     token must be an f token; at most 64 tokens. A flatten layer is
 *     inserted before the first f token when spatial layers precede it, a
 *     ReLU between two f tokens (after the first of them, before any dropout
 *     between them), and the softmax "prob" at the end. Layers are named by
 *     kind and counted from 1 in order: convN, bnN, reluN (one count for all
 *     ReLU layers), poolN (max and average pooling share the count), gapN,
 *     dropN, flatten, fcN, prob; blocks are counted resB and invB, their
 *     layers named as above. A pooling or convolution whose output would
 *     be smaller than 1 x 1, a layer of more than 2^28 weights or an
 *     activation of more than 2^24 floats per sample is refused.
 *     Example: cnn:c32k3-c32k3-p2-c64k3-c64k3-p2-c128k3-gap-f10.
 *   resnet        a ResNet-style net for 1x28x28 inputs, DCZ_ARCH_RESNET.
 *   mobilenetv2   a MobileNetV2-style net for 1x28x28 inputs,
 *                 DCZ_ARCH_MOBILENETV2.
 *
 * Weights are drawn from the seeded rng (He-normal: N(0, 2 / fan_in), fan_in
 * = in for DENSE, in_c*kh*kw for CONV), biases are 0; batch norm starts at
 * gamma 1, beta 0, running mean 0 and variance 1, eps 1e-5, momentum 0.1.
 * net->rng (dropout) is seeded from seed too. A malformed name gives
 * DCZ_ERR_ARG and a one-line reason in err. */
dcz_status dcz_net_create_arch(const char *arch, uint64_t seed, dcz_net **out,
                               char *err, size_t errlen);

/* The epochs of linear learning-rate warmup that architecture arch (a name
 * dcz_net_create_arch takes) trains with when not told otherwise: 1 for
 * lenet5, which has no batch norm and whose first steps at the full rate
 * threw it out of its basin (dcz train --arch lenet5 --seed 1 with 10,000
 * samples held out diverged in its first epoch), 0 for the others. */
int dcz_arch_warmup_epochs(const char *arch);

/* The presets' specs. */
#define DCZ_ARCH_RESNET "cnn:c16k3-r16-r32s2-r64s2-gap-f10"
#define DCZ_ARCH_MOBILENETV2 "cnn:c16k3-m16e1-m24s2-m24-m32s2-m32-m64s2-m64-m96-c256k1-gap-f10"

/* An empty network of nlayers zeroed layers, for a caller to fill
 * (layer buffers must come from malloc: dcz_net_free frees them); in_rank 0
 * and net->rng seeded with 0. */
dcz_status dcz_net_alloc(int nlayers, dcz_net **out);

/* Checks a filled network (shapes chain, buffers present, in_dim/classes
 * set from the layers). The input shape is net->in_rank/in_dims when in_rank
 * is not 0 (its element count must be the first layer's in); with in_rank 0
 * it is set from the first layer ((in_c, in_h, in_w) for a spatial layer,
 * else (in)). Input shapes are read as (c, h, w): rank 1 (n) as (n, 1, 1),
 * rank 2 (h, w) as (1, h, w), rank 4 (a, c, h, w) as (a*c, h, w).
 * Shape rules, each layer against the shapes of the tensors it reads (tin,
 * earlier tensors only; "its input" is the first):
 * - every layer: in, out > 0 and in equal to its input's element count;
 * - DENSE: any input shape; leaves (out, 1, 1);
 * - RELU, SOFTMAX, DROPOUT: in == out, shape kept, geometry fields unused;
 * - CONV, MAXPOOL, AVGPOOL, GAP: (in_c, in_h, in_w) equal to the shape so
 *   far; window and stride >= 1, 0 <= padding < window; out_h =
 *   floor((in_h + 2 ph - kh) / sh) + 1 >= 1 (out_w alike); out_c any for
 *   CONV, in_c for the pools; GAP has out_h = out_w = 1 (its window fields
 *   are unused); out == out_c * out_h * out_w;
 * - FLATTEN: (in_c, in_h, in_w) as for CONV, out == in, output (out, 1, 1);
 * - BATCHNORM: (in_c, in_h, in_w) as for CONV (after a DENSE: (out, 1, 1)),
 *   output geometry equal to the input's, in == out;
 * - CONV with group G: in_c and out_c multiples of G;
 * - ADD, MUL, CONCAT and the activations: the runtime's rules (dcz_op_shape:
 *   two inputs of one shape; a factor per channel or per element; equal
 *   planes), activation attributes in param; out their output's count;
 * - every layer but the last is read by a later one.
 * DCZ_ERR_SHAPE when a rule fails. DCZ_ERR_ARG for an unknown kind; a DENSE
 * or CONV layer without w or b; a BATCHNORM without w, b, run_mean or
 * run_var, with eps not > 0 or bn_momentum outside [0, 1]; a DROPOUT rate
 * outside [0, 1); a softmax that is not the last layer; a mask or codebook
 * on a layer without weights; or an inconsistent codebook (k outside
 * 1..256, codebook or assign missing, a kept weight's assignment >= k).
 * Drops the activation buffers and caches (regrown on demand). A net
 * without a document gets one here, describing its layers (op, name,
 * inputs, the attributes of their settings) with no parameters yet
 * (dcz_net_store writes them); its structure is then the document's, so a
 * caller changes a net's layers only before its first validation. Forward,
 * grad, train and evaluate need a validated net; dcz_net_create_arch
 * returns one. */
dcz_status dcz_net_validate(dcz_net *net);

/* Fills the sizes of every layer of a caller-built net from the input shape
 * net->in_rank/in_dims (read as dcz_net_validate does) and each layer's
 * kind and settings: DENSE out; CONV out_c, kh, kw, sh, sw, ph, pw; MAXPOOL
 * and AVGPOOL kh, kw, sh, sw, ph, pw; no settings for the other kinds.
 * Writes in and out of every layer, and the geometry (in_c .. out_w) of the
 * spatial kinds, FLATTEN and BATCHNORM (other kinds' fields are untouched).
 * DCZ_ERR_SHAPE when in_rank is not 1..4 or a layer cannot take its input
 * (the shape rules of dcz_net_validate), DCZ_ERR_ARG for an unknown kind.
 * Allocates nothing. */
dcz_status dcz_net_infer_shapes(dcz_net *net);

/* Allocates and initializes the parameters a layer lacks (w NULL), in layer
 * order: DENSE and CONV weights He-normal from rng (N(0, 2 / fan_in) with
 * fan_in the weight matrix's columns), biases 0; BATCHNORM gamma 1, beta 0,
 * running mean 0 and variance 1, and eps 1e-5 and bn_momentum 0.1 where
 * they are 0. Layers that have w are left as they are. Sizes must be set
 * (dcz_net_infer_shapes). DCZ_ERR_NOMEM when an allocation fails (what was
 * allocated stays with the net). */
dcz_status dcz_net_init_params(dcz_net *net, dcz_rng *rng);

/* Replaces the last weighted layer of d, which must be DENSE, by a fresh
 * one of outputs outputs: weights He-normal from seed (as
 * dcz_net_init_params), biases 0, f32; the layers after it must take the
 * new width (their shapes follow: a SOFTMAX does). A calibration table, of
 * the old weights, is dropped; *was_outputs (may be NULL) gets the old
 * width. DCZ_ERR_UNSUPPORTED (the last weighted layer
 * is no DENSE) or DCZ_ERR_SHAPE with a reason in err; d is unchanged then. */
dcz_status dcz_doc_new_head(dcz_doc *d, uint32_t outputs, uint64_t seed, uint32_t *was_outputs, char *err,
                            size_t errlen);

void dcz_net_free(dcz_net *net);

/* Frees the training state (gradients and momentum) of every layer; call it
 * after changing a layer's mask, codebook size k or shapes between stages.
 * The next step starts from zero momentum. */
void dcz_net_reset_state(dcz_net *net);

/* Number of parameters of the net: weights and biases of DENSE and CONV
 * layers, gamma and beta of BATCHNORM layers (not the running statistics). */
size_t dcz_net_param_count(const dcz_net *net);

/* Forward pass in inference mode of batch samples x (batch, in_dim) into out
 * (batch, classes): the output of the last layer (probabilities when it is a
 * softmax). */
dcz_status dcz_net_forward(dcz_net *net, const float *x, int batch, float *out);

/* Prepares a trained net for writing: stores it (dcz_net_store, enc NULL)
 * and folds its document (dcz_doc_fold: every BATCHNORM layer into the CONV
 * or DENSE layer right before it, from the running statistics, and every
 * DROPOUT layer, the identity in inference, dropped), then becomes the view
 * of the folded document. DCZ_ERR_UNSUPPORTED when a BATCHNORM follows no
 * conv or dense layer, or that layer is masked or shared, or when nothing
 * would be left; the net is then unchanged. Frees the training state (as
 * dcz_net_reset_state). */
dcz_status dcz_net_fold_for_inference(dcz_net *net);

/* How the weight of one dense or conv layer is stored (dcz_net_store). */
typedef struct dcz_layer_encoding {
    uint8_t gap_bits;     /* relative-position width for sparse weights (1..8) */
    uint8_t huffman;      /* nonzero: Huffman-code index and gap streams */
    uint8_t index_bits;   /* codebook index width (0: from k) */
    uint8_t bias_f16;     /* nonzero: store the bias as fp16 */
} dcz_layer_encoding;

/* The net over document d (the caller's: it must outlive the net): its
 * layers' settings from d's attributes (by the trainer's entry of each op),
 * its parameters and compression state from d's tensors (a sparse tensor
 * gives a mask, a codebook tensor the codebook and assignments; a
 * BATCHNORM layer of a document in training form its four tensors).
 * DCZ_ERR_UNSUPPORTED for an op the trainer does not run, DCZ_ERR_SHAPE or
 * DCZ_ERR_FORMAT for a document that does not fit its layers. */
dcz_status dcz_net_open(dcz_doc *d, dcz_net **out);

/* Writes the net's parameters and compression state into its document, in
 * place: each weight's encoding from that state (codebook, then mask, else
 * dense) with the stream settings enc gives per layer (one entry per net
 * layer; those of layers without weights unused; NULL: raw streams, f32
 * biases, each weight packed as dcz_doc_tensor_pack packs it); BATCHNORM layers as their four
 * tensors (the document stays in training form until folded). The
 * document's calibration table, made for other weights, is dropped; its
 * structure, input shape and stages are kept. DCZ_ERR_ARG for a gap width
 * out of 1..8 on a sparse weight, or a document no longer of the net's
 * layers. */
dcz_status dcz_net_store(dcz_net *net, const dcz_layer_encoding *enc);

/* Re-applies masks and codebooks to the weights (w = cb[assign] * mask). */
void dcz_net_apply_constraints(dcz_net *net);

/* Ranks that train one net together (data parallel): every rank holds the
 * whole net and sums its part of each step's gradient with the others.
 * sum_i64 adds n 64-bit integers element by element across the ranks, in
 * place, the same result on every rank (integer sums do not depend on the
 * order they are taken in); it returns DCZ_OK, or an error when a rank
 * failed. The toolchain's MPI implementation is in dist/. */
typedef struct dcz_comm {
    int rank, size;       /* 0 <= rank < size */
    void *ctx;
    dcz_status (*sum_i64)(void *ctx, int64_t *v, size_t n);
} dcz_comm;

typedef struct dcz_sgd {
    float lr;             /* learning rate for this epoch */
    /* Warmup: with ramp_to > 0, dcz_train_epoch scales the lr of its steps
     * linearly from ramp_from to ramp_to (the last step's factor); the
     * first step's factor is ramp_from + (ramp_to - ramp_from) / steps.
     * 0, 0: every step at lr. */
    float ramp_from, ramp_to;
    float momentum;       /* e.g. 0.9 */
    float weight_decay;   /* L2, applied to DENSE and CONV weights only (not
                             biases, codebooks or batch-norm parameters) */
    int batch;            /* mini-batch size */
    int train_biases;     /* nonzero: biases (and batch-norm beta) are trained */
    int train_weights;    /* nonzero: weights (or centroids, and batch-norm
                             gamma) are trained */
    /* Sharded steps. With shards > 1 (or a comm) each step's batch is cut
     * into `shards` parts of (nearly) equal size, each run forward and
     * backward as a batch of its own (its own batch-norm statistics; its
     * own dropout draws, seeded from the step and the part); the parts'
     * gradients, weighted by their sizes, are summed in 64-bit fixed point
     * (2^-32), across the ranks of comm too, each rank taking `shards /
     * size` consecutive parts, and batch-norm running statistics move once
     * per step by the parts' mean statistics. Integer sums are exact, so a
     * given number of shards gives the same weights, bit for bit, for any
     * rank count that divides it and any thread count (par.c). 0 or 1
     * shards without a comm: one batch, float sums, as before. */
    int shards;
    const dcz_comm *comm; /* NULL: one process */
    /* DCZ_AUG_* bits (0: none): the training samples varied as torchvision
     * trains ImageNet networks (see dcz_augment). The epoch's key is one
     * number drawn from its rng after the shuffle (only when augmenting:
     * without, the rng moves as it always did), so every epoch, and every
     * retraining epoch of a later stage, varies its samples anew. */
    unsigned augment;
    /* The update after each step's gradients: NULL, dcz_net_step (SGD as
     * above); else update(net, step, update_ctx), step this struct with the
     * step's lr (variational dropout's Adam). Unsharded only: with shards
     * or a comm, dcz_train_epoch gives DCZ_ERR_UNSUPPORTED. */
    dcz_status (*update)(dcz_net *net, const struct dcz_sgd *step, void *ctx);
    void *update_ctx;
    /* The device the epoch runs on (train/tdev.h; NULL: the CPU): the net
     * goes there for the epoch and comes back, its parameters, running
     * statistics and momenta with it (train/dev.c). An epoch the device
     * path does not run (an update of its own, sharded steps, a layer
     * under variational dropout: dcz_dev_runs) runs on the CPU. A device
     * failure ends the epoch with DCZ_ERR_DEVICE, the reason in the
     * device's err. */
    struct dcz_tdev *device;
    /* Distillation (Hinton, Vinyals and Dean 2015): with a teacher, each
     * step's loss is (1 - distill) times the cross-entropy against the
     * labels plus distill times T^2 times the KL divergence of the net's
     * softened probabilities softmax(z / T) from the teacher's
     * softmax(t / T), T = temperature, so the gradient on the logits is
     * (1 - distill) (softmax(z) - onehot(y)) + distill T (softmax(z / T) -
     * softmax(t / T)), over the batch. The teacher (a net of the same input
     * and classes, not the net itself) runs in inference mode on each
     * step's samples as varied; its parameters never change, but its
     * activation buffers are the epoch's, so it serves one training at a
     * time. A model trained to it learns what it knows beyond the labels
     * (which wrong classes are near), and recovers more of its accuracy
     * after pruning and sharing. Such epochs run on the CPU
     * (dcz_dev_runs). NULL: the labels alone. */
    dcz_net *teacher;
    float distill;        /* in (0, 1] with a teacher */
    float temperature;    /* > 0 with a teacher */
} dcz_sgd;

typedef void (*dcz_progress_fn)(void *ctx, size_t done, size_t total);

/* Forward and backward pass in training mode of batch samples x (batch,
 * in_dim) with labels y (batch): fills gw, gb (and gcb for codebook layers;
 * masked entries of gw are 0) of every layer with parameters (DENSE, CONV,
 * BATCHNORM: gw gamma, gb beta) with the gradients of the mean softmax
 * cross-entropy, allocating them on first use, and writes that mean to *loss
 * (may be NULL). Changes no parameter; updates the running statistics of
 * BATCHNORM layers and draws dropout masks from net->rng, as a training
 * forward pass does. DCZ_ERR_DATA when a label is >= classes. */
dcz_status dcz_net_grad(dcz_net *net, const float *x, const uint8_t *y, int batch,
                        float *loss);

/* One SGD update from the gradients of the last dcz_net_grad, as
 * dcz_train_epoch does after each batch (opt->batch is not used). */
dcz_status dcz_net_step(dcz_net *net, const dcz_sgd *opt);

/* One epoch of SGD over data in an order shuffled by rng, honouring masks and
 * codebooks, its samples varied as opt->augment says (the key drawn from
 * rng after the shuffle). progress (may be NULL) is called after each
 * batch. *loss gets the mean training loss. DCZ_ERR_SHAPE when the samples
 * are not of net->in_dim floats (of shape (C, H, W) for a net whose in_rank
 * is 3) or a label is >= classes; DCZ_ERR_UNSUPPORTED for DCZ_AUG_CROP on
 * in-memory samples; a streaming set's failure to read a batch
 * (dcz_dataset_samples: DCZ_ERR_IO, DCZ_ERR_DATA, ...) ends the epoch with
 * its status, the reason in dcz_dataset_error. */
dcz_status dcz_train_epoch(dcz_net *net, const dcz_dataset *data, const dcz_sgd *opt,
                           dcz_rng *rng, dcz_progress_fn progress, void *ctx,
                           float *loss);

/* Top-1 accuracy of net on data (fraction correct, in [0, 1]), in inference
 * mode. Fails as dcz_train_epoch when a streaming set cannot be read. */
dcz_status dcz_net_evaluate(dcz_net *net, const dcz_dataset *data, double *accuracy);

/* Learning rate of epoch e (0-based) of n under a schedule: "const",
 * "step" (x0.1 at 50% and 75% of n) or "cosine". NULL means "const". */
float dcz_lr_at(const char *schedule, float base, int e, int n);

/* DCZ_OK when dcz_lr_at knows schedule (NULL included), else DCZ_ERR_ARG;
 * dcz_lr_at treats an unknown name as "const". */
dcz_status dcz_lr_check(const char *schedule);

/* Threads of training and inference in the engine: its own pool (par.c)
 * for the products and the loops around them, OpenBLAS on one thread; 0
 * leaves it at every online core. */
void dcz_train_set_threads(int threads);
/* OpenBLAS on one thread from now on, as the engine's pool sets it when it
 * starts: a program that calls it first keeps OpenBLAS's own threads,
 * which it starts as it loads and which spin awhile, off the cores a
 * model's threads run on (cli/main.c). */
void dcz_train_blas_one_thread(void);

/* fn(ctx, lo, hi) over contiguous parts that cover [0, n), one per thread
 * of the trainer's pool and each of at least grain items (one part when n
 * is under 2 grain); returns when all are done. The items must be
 * independent: a result never depends on the thread count. */
typedef void (*dcz_range_fn)(void *ctx, size_t lo, size_t hi);
void dcz_train_par(size_t n, size_t grain, dcz_range_fn fn, void *ctx);

/* ---- helpers for stages that train over a whole run (util.c) ------------- */

/* Relays the engine's per-batch progress as progress over a whole run of
 * many epochs. Set fn, ctx and total (batches of the whole run) and base = 0;
 * pass dcz_progress_relay_fn with the relay as ctx to dcz_train_epoch (only
 * when fn is not NULL). Each call advances base by one batch, never past
 * total, and reports (base, total) to fn. The engine's own counts are not
 * used: after an epoch, a caller may set base to where the epoch should end. */
typedef struct dcz_progress_relay {
    dcz_progress_fn fn;
    void *ctx;
    size_t base;      /* batches done so far */
    size_t total;     /* batches of the whole run */
} dcz_progress_relay;

/* A dcz_progress_fn: relay is a dcz_progress_relay. */
void dcz_progress_relay_fn(void *relay, size_t done, size_t total_epoch);

/* Nonzero when d (not NULL) can feed net: samples of net->in_dim floats
 * (for a net with a (C, H, W) input, in_rank 3, samples of that shape), no
 * more classes than the net's outputs, and ready (dcz_dataset_ready)
 * unless d->n is 0.
 * Labels are not scanned (the engine checks them). */
int dcz_dataset_fits(const dcz_net *net, const dcz_dataset *d);

/* Nonzero when s (not NULL) holds usable settings: batch >= 1, finite lr and
 * weight_decay >= 0, 0 <= momentum < 1, known augment bits, and with a
 * teacher distill in (0, 1] and a finite temperature > 0. Stricter than
 * the engine, which accepts any momentum >= 0. */
int dcz_sgd_valid(const dcz_sgd *s);
/* Nonzero when s has no teacher, or one with distill in (0, 1] and a
 * finite temperature > 0 (dcz_sgd_valid and the engine both ask it). */
int dcz_sgd_distill_valid(const dcz_sgd *s);

/* dcz_net_evaluate when test is not NULL; with test NULL, DCZ_OK. Either way
 * *accuracy is -1 unless an evaluation wrote it. */
dcz_status dcz_net_evaluate_optional(dcz_net *net, const dcz_dataset *test,
                                     double *accuracy);

#endif /* DCZ_TRAIN_H */
