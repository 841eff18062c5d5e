/* dist_mpi.c: dist.h over MPI (built when OpenMPI's development files are
 * found, MPI ?= auto in the Makefile).
 *
 * The process joins a job only when a launcher started it (mpirun sets
 * OMPI_COMM_WORLD_SIZE, srun and PMIx launchers PMIX_RANK or PMI_RANK): a
 * plain `dcz ...` never starts MPI and runs exactly as a build without it.
 * The sums run on a duplicate of MPI_COMM_WORLD whose errors return to
 * the caller (MPI_ERRORS_RETURN), so a failed sum is a status with MPI's
 * reason, not an abort inside MPI. A rank killed outright is handled by
 * the launcher, which stops every other rank (tests/cli/mpi.sh).
 *
 * Built with NCCL (DCZ_NCCL, NCCL ?= auto in the Makefile), ranks that
 * train on GPUs sum there (dcz_dist_use_gpus): the integers go to the
 * rank's GPU, one ncclAllReduce adds them, they come back. Integer sums
 * are exact, so NCCL's order of adding the ranks changes nothing: the
 * same bits as MPI's.
 */
#include <limits.h>
#include <mpi.h>
#ifdef DCZ_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/dist.h"

struct dcz_dist {
    dcz_comm comm;         /* comm.ctx is this struct */
    MPI_Comm world;        /* a duplicate of MPI_COMM_WORLD; MPI_COMM_NULL: no job */
    dcz_dist_stats stats;
    char err[MPI_MAX_ERROR_STRING + 64];
#ifdef DCZ_NCCL
    ncclComm_t nccl;       /* NULL: the sums are MPI's */
    cudaStream_t stream;
    int64_t *dev;          /* the integers on the GPU */
    size_t dev_n;
#endif
};

static dcz_status sum_i64(void *ctx, int64_t *v, size_t n)
{
    dcz_dist *d = ctx;
    const double t0 = MPI_Wtime();
    for (size_t at = 0; at < n;) {   /* MPI counts are int */
        const int k = n - at > (size_t)INT_MAX / 2 ? INT_MAX / 2 : (int)(n - at);
        const int rc = MPI_Allreduce(MPI_IN_PLACE, v + at, k, MPI_INT64_T, MPI_SUM, d->world);
        if (rc != MPI_SUCCESS) {
            char why[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, why, &len);
            snprintf(d->err, sizeof d->err, "summing gradients across the ranks: %s", why);
            return DCZ_ERR_IO;
        }
        at += (size_t)k;
    }
    d->stats.sums++;
    d->stats.bytes += n * sizeof *v;
    d->stats.seconds += MPI_Wtime() - t0;
    return DCZ_OK;
}

#ifdef DCZ_NCCL
/* The sum through NCCL: the integers to the GPU, one ncclAllReduce, back. */
static dcz_status sum_i64_nccl(void *ctx, int64_t *v, size_t n)
{
    dcz_dist *d = ctx;
    const double t0 = MPI_Wtime();
    const char *what = NULL;
    if (n > d->dev_n) {
        cudaFree(d->dev);
        d->dev = NULL;
        d->dev_n = 0;
        if (cudaMalloc((void **)&d->dev, n * sizeof *v) != cudaSuccess) what = "allocating the sums on the GPU";
        else d->dev_n = n;
    }
    if (!what && cudaMemcpyAsync(d->dev, v, n * sizeof *v, cudaMemcpyHostToDevice, d->stream) != cudaSuccess)
        what = "copying the sums to the GPU";
    ncclResult_t r = ncclSuccess;
    if (!what && (r = ncclAllReduce(d->dev, d->dev, n, ncclInt64, ncclSum, d->nccl, d->stream)) != ncclSuccess)
        what = ncclGetErrorString(r);
    if (!what && cudaMemcpyAsync(v, d->dev, n * sizeof *v, cudaMemcpyDeviceToHost, d->stream) != cudaSuccess)
        what = "copying the sums back";
    if (!what && cudaStreamSynchronize(d->stream) != cudaSuccess) what = "waiting for the sums";
    if (what) {
        snprintf(d->err, sizeof d->err, "summing gradients across the ranks' GPUs (NCCL): %s", what);
        return DCZ_ERR_DEVICE;
    }
    d->stats.sums++;
    d->stats.bytes += n * sizeof *v;
    d->stats.seconds += MPI_Wtime() - t0;
    return DCZ_OK;
}
#endif

dcz_status dcz_dist_use_gpus(dcz_dist *d, char *err, size_t errlen)
{
    if (!dcz_dist_comm(d)) {
        snprintf(err, errlen, "a job of one rank");
        return DCZ_ERR_UNSUPPORTED;
    }
#ifdef DCZ_NCCL
    if (d->nccl) return DCZ_OK;
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    if (d->comm.rank == 0 && (r = ncclGetUniqueId(&id)) != ncclSuccess) {
        snprintf(err, errlen, "NCCL: %s", ncclGetErrorString(r));
        memset(&id, 0, sizeof id);   /* the others wait in the broadcast all the same */
    }
    if (MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, d->world) != MPI_SUCCESS) {
        snprintf(err, errlen, "broadcasting NCCL's id over MPI failed");
        return DCZ_ERR_IO;
    }
    if (r != ncclSuccess) return DCZ_ERR_DEVICE;
    if (cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking) != cudaSuccess) {
        snprintf(err, errlen, "cannot make a stream on the GPU for NCCL");
        return DCZ_ERR_DEVICE;
    }
    if ((r = ncclCommInitRank(&d->nccl, d->comm.size, id, d->comm.rank)) != ncclSuccess) {
        snprintf(err, errlen, "NCCL: joining %d ranks: %s", d->comm.size, ncclGetErrorString(r));
        d->nccl = NULL;
        return DCZ_ERR_DEVICE;
    }
    d->comm.sum_i64 = sum_i64_nccl;
    return DCZ_OK;
#else
    snprintf(err, errlen, "this dcz was built without NCCL (make NCCL=1 where nccl.h is)");
    return DCZ_ERR_UNSUPPORTED;
#endif
}

static int launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

dcz_status dcz_dist_open(int *argc, char ***argv, dcz_dist **out, char *err, size_t errlen)
{
    if (errlen) err[0] = '\0';
    dcz_dist *d = calloc(1, sizeof *d);
    *out = d;
    if (!d) return DCZ_ERR_NOMEM;
    d->world = MPI_COMM_NULL;
    d->comm.size = 1;
    if (!launched()) return DCZ_OK;
    int rc = MPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(MPI_COMM_WORLD, &d->world);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(d->world, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(d->world, &d->comm.rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(d->world, &d->comm.size);
    if (rc != MPI_SUCCESS) {
        char why[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, why, &len);
        snprintf(err, errlen, "%s", why);
        return DCZ_ERR_IO;
    }
    d->comm.ctx = d;
    d->comm.sum_i64 = sum_i64;
    return DCZ_OK;
}

const dcz_comm *dcz_dist_comm(const dcz_dist *d)
{
    return d && d->world != MPI_COMM_NULL && d->comm.size > 1 ? &d->comm : NULL;
}

int dcz_dist_rank(const dcz_dist *d) { return d ? d->comm.rank : 0; }
int dcz_dist_size(const dcz_dist *d) { return d ? d->comm.size : 1; }
void dcz_dist_get_stats(const dcz_dist *d, dcz_dist_stats *s) { *s = d->stats; }
const char *dcz_dist_error(const dcz_dist *d) { return d->err; }

void dcz_dist_close(dcz_dist *d, int exit_code)
{
    if (!d) return;
#ifdef DCZ_NCCL
    if (d->nccl) ncclCommDestroy(d->nccl);
    if (d->dev) cudaFree(d->dev);
    if (d->stream) cudaStreamDestroy(d->stream);
#endif
    if (d->world != MPI_COMM_NULL) {
        if (exit_code != 0 && d->comm.size > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
        MPI_Comm_free(&d->world);
        MPI_Finalize();
    }
    free(d);
}

const char *dcz_dist_describe(char *buf, size_t n)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS) snprintf(lib, sizeof lib, "unknown version");
    lib[strcspn(lib, ",\n")] = '\0';   /* "Open MPI v4.1.4, package: ..." */
#ifdef DCZ_NCCL
    int v = 0;
    ncclGetVersion(&v);
    snprintf(buf, n, "MPI: %s (data-parallel retraining under mpirun or srun); NCCL %d.%d.%d between GPUs", lib,
             v / 10000, v / 100 % 100, v % 100);
#else
    snprintf(buf, n, "MPI: %s (data-parallel retraining under mpirun or srun); NCCL: not built", lib);
#endif
    return buf;
}
