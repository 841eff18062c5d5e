/* internal.h: helpers shared by the files of train/ and used nowhere else.
 *
 * Checked through the public functions they serve, by tests/unit/test_train.c
 * and tests/unit/test_idx.c.
 */
#ifndef DCZ_TRAIN_INTERNAL_H
#define DCZ_TRAIN_INTERNAL_H

#include <stddef.h>

#include "train/train.h"

/* Writes a printf-style one-line reason to err (errlen bytes); err may be
 * NULL or errlen 0, then nothing is written. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void dcz_train_err(char *err, size_t errlen, const char *fmt, ...);

/* Grows the activation buffers (act, dact) to hold batch samples. */
dcz_status dcz_net_reserve(dcz_net *net, int batch);

/* Runs the layers on the batch already in act[0], filling act[1..nlayers].
 * infer == 0: the final softmax is the identity (act[nlayers] holds logits);
 * infer != 0: it computes probabilities. The net must be validated and
 * reserved for batch. */
void dcz_net_run_layers(dcz_net *net, int batch, int infer);


#endif /* DCZ_TRAIN_INTERNAL_H */
