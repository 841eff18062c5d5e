/* convert.h: networks to and from .dcz documents.
 *
 * dcz_net_from_doc turns the layers of a document into a trainable network,
 * keeping its compression state: a sparse tensor gives a mask, a codebook
 * tensor gives the codebook and assignments. dcz_net_to_doc does the
 * reverse, choosing each weight's encoding from that state (codebook, then
 * mask, else dense) with the stream settings given per layer.
 *
 * Checked by tests/unit/test_convert.c.
 */
#ifndef DCZ_TRAIN_CONVERT_H
#define DCZ_TRAIN_CONVERT_H

#include "model/doc.h"
#include "train/train.h"

/* How the weight of one dense or conv layer is written. */
typedef struct dcz_layer_encoding {
    uint8_t gap_bits;     /* relative-position width for sparse weights (1..8) */
    uint8_t huffman;      /* nonzero: Huffman-code index and gap streams */
    uint8_t index_bits;   /* codebook index width (0: from k) */
    uint8_t bias_f16;     /* nonzero: store the bias as fp16 */
} dcz_layer_encoding;

dcz_status dcz_net_from_doc(const dcz_doc *d, dcz_net **out);

/* enc has one entry per net layer (entries of layers without weights are
 * unused). A net holding a batch-norm or dropout layer gives
 * DCZ_ERR_UNSUPPORTED: call dcz_net_fold_for_inference first. Stages are
 * not copied: the caller moves them over. */
dcz_status dcz_net_to_doc(const dcz_net *net, const dcz_layer_encoding *enc, dcz_doc **out);

#endif /* DCZ_TRAIN_CONVERT_H */
