/* dev.h: the trainer's device path (dev.c): a net trained on a device
 * (tdev.h: a GPU through CUDA and cuBLAS, or the host, which runs the
 * same path for the tests), its state kept there for a whole run.
 */
#ifndef DCZ_TRAIN_DEV_H
#define DCZ_TRAIN_DEV_H

#include "train/tdev.h"
#include "train/train.h"

typedef struct dcz_dev_net dcz_dev_net;

/* DCZ_OK when the device path runs every layer of net, else
 * DCZ_ERR_UNSUPPORTED with the layer and the reason in why. */
dcz_status dcz_dev_supports(const dcz_net *net, char *why, size_t whylen);

/* Opens net (validated; the caller's, which must outlive the result) on
 * device d for steps of up to cap samples: its parameters (masks and
 * codebooks applied, as dcz_train_epoch applies them), masks, codebooks
 * and buffers for every activation and gradient allocated and uploaded;
 * momenta start at 0, as in a fresh run. *out is set even on failure
 * (then the reason is in dcz_dev_error; close it): DCZ_ERR_UNSUPPORTED
 * (dcz_dev_supports), DCZ_ERR_NOMEM, DCZ_ERR_DEVICE. */
dcz_status dcz_dev_open(dcz_tdev *d, dcz_net *net, int cap, dcz_dev_net **out);

/* dcz_train_epoch on the device: the same order, augmentation, warmup,
 * masks, codebooks and update; at its end the parameters are copied back
 * into the host net (dcz_dev_sync) and checked finite (DCZ_ERR_DIVERGED
 * otherwise). opt->batch at most the cap the net was opened with;
 * DCZ_ERR_UNSUPPORTED for updates other than SGD. A teacher
 * (opt->teacher, of the net's input and classes, else DCZ_ERR_SHAPE; not
 * the net itself, DCZ_ERR_ARG) is opened on the same device for its
 * forward passes in inference, its parameters uploaded then: it is kept
 * open while later epochs name the same net, whose parameters must not
 * change meanwhile, and closed when an epoch names another or none, or
 * with dn. */
dcz_status dcz_dev_train_epoch(dcz_dev_net *dn, const dcz_dataset *data, const dcz_sgd *opt, dcz_rng *rng,
                               dcz_progress_fn progress, void *ctx, float *loss);

/* Whether the device path runs an epoch of net under opt: not with an
 * update of its own (variational dropout's) or a layer under variational
 * dropout (why says which, when not NULL). */
int dcz_dev_runs(const dcz_net *net, const dcz_sgd *opt, char *why, size_t whylen);

/* One epoch of net on device d, as dcz_train_epoch (which calls it for
 * opt->device): the net opened on d, its momenta with it, the epoch run,
 * the parameters, running statistics and momenta copied back, the device
 * state freed. A failure's reason goes into d->err. */
dcz_status dcz_dev_epoch(dcz_tdev *d, dcz_net *net, const dcz_dataset *data, const dcz_sgd *opt, dcz_rng *rng,
                         dcz_progress_fn progress, void *ctx, float *loss);

/* Copies the parameters and codebooks into the host net. */
dcz_status dcz_dev_sync(dcz_dev_net *dn);

/* Why the last call on dn failed ("" when none did). */
const char *dcz_dev_error(const dcz_dev_net *dn);

/* Frees dn's device buffers (NULL-safe); the net and device stay. */
void dcz_dev_close(dcz_dev_net *dn);

#endif /* DCZ_TRAIN_DEV_H */
