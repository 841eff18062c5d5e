/* fold.c: batch normalization folded into the weighted layer that computes
 * its input, the one formula that the ONNX importer (an inference
 * BatchNormalization) and the trainer (dcz_net_fold_for_inference) apply.
 *
 * Checked by tests/unit/test_train.c (a folded net gives the outputs of
 * the net with batch norm) and tests/unit/test_onnx.c (an imported
 * Conv + BatchNormalization gives PyTorch's outputs).
 */
#include <math.h>

#include "model/doc.h"

void dcz_fold_batchnorm(float *w, float *b, size_t rows, size_t cols, const float *gamma,
                        const float *beta, const float *mean, const float *var, float eps)
{
    /* w' = w g, b' = (b - mean) g + beta, g = gamma / sqrt(var + eps), in double */
    for (size_t o = 0; o < rows; o++) {
        const double g = (double)gamma[o] / sqrt((double)var[o] + (double)eps);
        float *row = w + o * cols;
        for (size_t i = 0; i < cols; i++) row[i] = (float)((double)row[i] * g);
        b[o] = (float)(((double)b[o] - mean[o]) * g + beta[o]);
    }
}
