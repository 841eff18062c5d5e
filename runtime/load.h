/* load.h: what the loader's two files share: the walk's state (the
 * arena, the decoding scratch, what the sizing pass learns), the cursor on
 * the calibration table, and the reading of one layer (load_layer.c),
 * which the model-level walk (load.c) calls for each. Not for the rest of
 * libdcz: the loader's entry points are dcz.h's.
 */
#ifndef DCZ_RUNTIME_LOAD_H
#define DCZ_RUNTIME_LOAD_H

#include <stdint.h>

#include "runtime/format/format.h"
#include "runtime/model.h"
#include "runtime/plan.h"

typedef struct scratch {
    uint8_t *gaps;   /* positions of one tensor: gap symbols or a mask's column counts */
    uint8_t *idx;    /* index symbols of one tensor, in stream order */
    uint8_t *dense;  /* one layer's dense weights as floats, read only by the form built from them */
    uint64_t gaps_cap, idx_cap, dense_cap;
} scratch;

/* What the walk needs beside the graph: the arena it takes from (base NULL
 * while sizing), the decoding scratch, whether fp32 tensors may stay in the
 * file buffer, and what the sizing pass learns about activations. */
typedef struct loader {
    dcz_arena a;
    scratch sc;
    dcz_tensor *tscratch;/* the tensors while sizing (the block holds them after) */
    int in_place;
    int forms_only;      /* a convolution whose kernel reads only the form built from its
                            dense weights (shift, Winograd) keeps no copy of them: the
                            weights go through the decoding scratch (not for a model a GPU
                            may take: the upload reads the copy) */
    uint64_t max_width;  /* elements of the largest activation of one sample */
    uint64_t act_width;  /* floats a sample of the activation block */
    uint64_t chunk_width;/* floats a sample of the chunk block */
    uint32_t chunk_max;  /* the largest chunk of a segment */
    int quant;           /* the model runs on integers */
    uint32_t cblocks;    /* row blocks of the column forms: the threads that run them */
    int forms;           /* DCZ_FORM_ bits: the extra forms to build (this CPU runs their kernels) */
    int reference;       /* the options force the scalar references */
    int stream;          /* the options ask for the stream form (dcz_options.stream_weights) */
    uint64_t stream_floats;/* scratch the stream form's readers take at run time */
    uint64_t lane_floats;/* scratch the largest lane form's panels of the input take */
    const uint8_t *choice;/* per layer, the candidate it takes (plan.h; one past the
                             last: the rules'); NULL: the rules' */
    dcz_measured *ran;   /* per layer (NULL: none), the candidates and the one taken
                            (pick), as the filling pass builds them */
} loader;

/* What the walk knows of the calibration table: the scheme, and a cursor
 * on the next entry. NULL when the model runs in float. */
typedef struct calib_walk {
    uint32_t scheme;
    dcz_cur cur;
    uint32_t count, read;
} calib_walk;

/* Everything of one exec layer but its name, given the tensors it reads
 * (load_layer.c). */
dcz_status dcz_load_layer(const dcz_container *c, const dcz_graph_layer *g, uint32_t index,
                          const dcz_tensor *tensors, loader *ld, calib_walk *cw, dcz_exec_layer *l);

#endif /* DCZ_RUNTIME_LOAD_H */
