/* util.c: helpers for the compression stages that drive the engine over a
 * whole run (prune/, quantize/): progress relayed across many epochs, the
 * argument checks on a dataset and on SGD settings, and evaluation on an
 * optional test set. The contracts are documented in train.h.
 *
 * Checked through the stages that use them, by tests/unit/test_prune.c and
 * tests/unit/test_quantize.c (progress totals, argument errors, accuracy -1
 * without a test set); the shape check of convolutional inputs by
 * tests/unit/test_train.c.
 */
#include <math.h>

#include "train/train.h"

/* The engine calls once per batch; its own units are not relied on. */
void dcz_progress_relay_fn(void *relay, size_t done, size_t total_epoch)
{
    dcz_progress_relay *r = relay;
    (void)done;
    (void)total_epoch;
    if (r->base < r->total)
        r->base++;
    r->fn(r->ctx, r->base, r->total);
}

int dcz_dataset_fits(const dcz_net *net, const dcz_dataset *d)
{
    if (d->n > 0 && !dcz_dataset_ready(d))
        return 0;
    size_t dim = (size_t)d->c * d->h * d->w;
    if (net->in_rank == 3 && (d->c != net->in_dims[0] || d->h != net->in_dims[1] ||
                              d->w != net->in_dims[2]))
        return 0;
    return dim == (size_t)net->in_dim && d->classes <= (uint32_t)net->classes;
}

int dcz_sgd_valid(const dcz_sgd *s)
{
    return s->batch >= 1 && isfinite(s->lr) && s->lr >= 0.0f &&
           s->momentum >= 0.0f && s->momentum < 1.0f &&
           isfinite(s->weight_decay) && s->weight_decay >= 0.0f && !(s->augment & ~DCZ_AUG_ALL) &&
           dcz_sgd_distill_valid(s);
}

int dcz_sgd_distill_valid(const dcz_sgd *s)
{
    return !s->teacher ||
           (s->distill > 0.0f && s->distill <= 1.0f && isfinite(s->temperature) && s->temperature > 0.0f);
}

dcz_status dcz_net_evaluate_optional(dcz_net *net, const dcz_dataset *test,
                                     double *accuracy)
{
    *accuracy = -1.0;
    if (!test)
        return DCZ_OK;
    return dcz_net_evaluate(net, test, accuracy);
}
