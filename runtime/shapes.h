/* shapes.h: what a kernel is given besides its data: the geometry of a
 * convolution or a pooling, and the activation a layer applies as it
 * writes its output. Shared by libdcz's kernels and the trainer, which
 * runs the runtime's dense products and Winograd's transforms
 * (runtime/tool.h names the headers the toolchain may include).
 */
#ifndef DCZ_RUNTIME_SHAPES_H
#define DCZ_RUNTIME_SHAPES_H

#include <stdint.h>

#include "dcz.h"
#include "runtime/format/ops.h"

/* The geometry of a convolution or a pooling over one sample: input
 * (in_c, in_h, in_w), output (out_c, out_h, out_w), window kh x kw, stride
 * sh, sw, zero padding ph, pw on each side (ph < kh, pw < kw, so every
 * window holds at least one input cell). Pools have out_c = in_c. */
typedef struct dcz_conv_geom {
    uint32_t in_c, in_h, in_w;
    uint32_t out_c, out_h, out_w;
    uint32_t kh, kw, sh, sw, ph, pw;
    uint32_t group;         /* CONV2D: groups (0 counts as 1); output channel oc sees the
                               in_c / group input channels of group oc / (out_c / group) */
} dcz_conv_geom;

/* Groups of a convolution, and the input channels each output channel sees. */
static inline uint32_t dcz_conv_groups(const dcz_conv_geom *g) { return g->group ? g->group : 1; }
static inline uint32_t dcz_conv_group_in(const dcz_conv_geom *g) { return g->in_c / dcz_conv_groups(g); }
/* First input channel output channel oc sees. */
static inline uint32_t dcz_conv_in0(const dcz_conv_geom *g, uint32_t oc)
{
    const uint32_t groups = dcz_conv_groups(g);
    return groups == 1 ? 0 : oc / (g->out_c / groups) * (g->in_c / groups);
}

/* Fills g for a CONV2D, MAXPOOL or AVGPOOL with checked attributes on input
 * shape in (dcz_op_shape's errors; DCZ_ERR_UNSUPPORTED for other ops). */
dcz_status dcz_conv_geom_init(dcz_conv_geom *g, uint16_t op, const int32_t *attr, uint32_t nattr,
                              const dcz_shape *in);

/* The activation a layer's output takes on its way out, the next layer's
 * run in its place (run.c): DCZ_OP_RELU, or DCZ_OP_CLIP between lo and hi;
 * op 0 for none. */
typedef struct dcz_act { uint16_t op; float lo, hi; } dcz_act;
/* act (NULL or op 0: none) on one value, the references' formulas (NaN and
 * zeros of both signs included): ReLU v > 0 ? v : 0; CLIP lo > t ? lo : t,
 * t = hi < v ? hi : v. */
static inline float dcz_act_one(const dcz_act *act, float v)
{
    if (!act || act->op == 0) return v;
    if (act->op == DCZ_OP_RELU) return v > 0.0f ? v : 0.0f;
    const float t = act->hi < v ? act->hi : v;
    return act->lo > t ? act->lo : t;
}
#endif /* DCZ_RUNTIME_SHAPES_H */
