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
 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/dist.h"

struct dcz_dist {
    dcz_comm comm;         /* comm.ctx is this struct */
    MPI_Comm world;        /* a duplicate of MPI_COMM_WORLD; MPI_COMM_NULL: no job */
    dcz_dist_stats stats;
    char err[MPI_MAX_ERROR_STRING + 64];
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
    snprintf(buf, n, "MPI: %s (data-parallel retraining under mpirun or srun)", lib);
    return buf;
}
