/* status.c: the one place that turns a dcz_status into words. */
#include "dcz.h"

const char *dcz_status_str(dcz_status s)
{
    switch (s) {
    case DCZ_OK: return "success";
    case DCZ_ERR_ARG: return "invalid argument";
    case DCZ_ERR_IO: return "input/output error";
    case DCZ_ERR_NOMEM: return "out of memory";
    case DCZ_ERR_FORMAT: return "not a valid .dcz file (malformed or truncated)";
    case DCZ_ERR_CRC: return "checksum mismatch: the file is damaged";
    case DCZ_ERR_VERSION: return "unsupported .dcz major version";
    case DCZ_ERR_UNSUPPORTED: return "uses a feature this build does not support";
    case DCZ_ERR_SHAPE: return "tensor shapes do not agree";
    case DCZ_ERR_DATA: return "malformed data";
    case DCZ_ERR_DEVICE: return "device unavailable (no GPU backend in this build, no CUDA device, or the device failed)";
    case DCZ_ERR_INTERNAL: return "internal error";
    case DCZ_ERR_DIVERGED: return "training diverged: a loss or weight is no longer finite";
    case DCZ_ERR_LIMIT: return "over a resource limit (work per sample or memory)";
    }
    return "unknown status";
}
