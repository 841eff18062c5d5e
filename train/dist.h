/* dist.h: the ranks of a multi-process run: data-parallel retraining over
 * MPI (docs/CLI.md, "Sharded steps" and "Running under MPI").
 *
 * dcz_dist_open joins the job when an MPI launcher (mpirun, srun) started
 * the process; otherwise, and always when dcz was built without MPI
 * (dist_single.c), the process is a job of one rank on its own. A job of
 * several ranks hands training a dcz_comm whose sum_i64 is one
 * MPI_Allreduce (64-bit integers, MPI_SUM): integer sums do not depend on
 * the order the ranks' values are added in, so every rank gets the same
 * bits (train.h, dcz_sgd.shards). Ranks that train on GPUs sum through
 * NCCL instead (dcz_dist_use_gpus), where dcz was built with it.
 *
 * Checked by tests/cli/mpi.sh (mpirun -np 2 against -np 1, a killed rank)
 * and, for the sums themselves, by tests/unit/test_shards.c.
 */
#ifndef DCZ_DIST_H
#define DCZ_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "train/train.h"

typedef struct dcz_dist dcz_dist;

/* What the sums of this process cost so far: calls, bytes this rank sent
 * into them, and seconds spent in them (waiting for the other ranks
 * included). */
typedef struct dcz_dist_stats {
    uint64_t sums, bytes;
    double seconds;
} dcz_dist_stats;

/* Joins the MPI job this process was started in, if any: *out gets the
 * handle (a job of one rank when there is no launcher or no MPI build).
 * On failure err gets MPI's reason. argc and argv may be changed by MPI. */
dcz_status dcz_dist_open(int *argc, char ***argv, dcz_dist **out, char *err, size_t errlen);
/* The job's ranks for training steps: NULL when the job has one rank
 * (steps then are those of a single process, exactly). */
const dcz_comm *dcz_dist_comm(const dcz_dist *d);
/* This process's rank (0 with no job) and the job's size (1). */
int dcz_dist_rank(const dcz_dist *d);
int dcz_dist_size(const dcz_dist *d);
void dcz_dist_get_stats(const dcz_dist *d, dcz_dist_stats *s);
/* The reason the last sum failed ("" when none did). */
const char *dcz_dist_error(const dcz_dist *d);
/* Moves the job's sums onto the ranks' GPUs: rank 0 makes an NCCL id, MPI
 * broadcasts it, each rank joins the NCCL communicator on the GPU it
 * trains on (chosen before: cudaSetDevice), and each sum is then one
 * ncclAllReduce (64-bit integers, ncclSum) of the same integers the MPI sum
 * adds, so the files stay the same bits. A job of one rank, or a build
 * without NCCL: DCZ_ERR_UNSUPPORTED (the sums stay MPI's); a failure: the
 * reason in err, the sums stay MPI's. */
dcz_status dcz_dist_use_gpus(dcz_dist *d, char *err, size_t errlen);
/* Leaves the job and frees d (NULL is fine). A rank that ends with a
 * nonzero exit code in a job of several ranks stops the whole job
 * (MPI_Abort), so that no rank waits for it in a sum. */
void dcz_dist_close(dcz_dist *d, int exit_code);
/* One line for --version: the MPI library this dcz was built with (and
 * NCCL's version when it was built with it), or that it was built without
 * one. */
const char *dcz_dist_describe(char *buf, size_t n);

#endif
