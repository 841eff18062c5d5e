/* dist_single.c: dist.h for a dcz built without MPI (MPI=0, or OpenMPI's
 * development files not found): every process is a job of one rank.
 * tests/cli/mpi.sh checks that --version says so and that the MPI tests
 * SKIP with the reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/dist.h"

struct dcz_dist { int unused; };

dcz_status dcz_dist_open(int *argc, char ***argv, dcz_dist **out, char *err, size_t errlen)
{
    (void)argc;
    (void)argv;
    if (errlen) err[0] = '\0';
    *out = calloc(1, sizeof **out);
    return *out ? DCZ_OK : DCZ_ERR_NOMEM;
}

const dcz_comm *dcz_dist_comm(const dcz_dist *d) { (void)d; return NULL; }
int dcz_dist_rank(const dcz_dist *d) { (void)d; return 0; }
int dcz_dist_size(const dcz_dist *d) { (void)d; return 1; }
void dcz_dist_get_stats(const dcz_dist *d, dcz_dist_stats *s) { (void)d; memset(s, 0, sizeof *s); }
const char *dcz_dist_error(const dcz_dist *d) { (void)d; return ""; }
void dcz_dist_close(dcz_dist *d, int exit_code) { (void)exit_code; free(d); }

dcz_status dcz_dist_use_gpus(dcz_dist *d, char *err, size_t errlen)
{
    (void)d;
    snprintf(err, errlen, "a job of one process");
    return DCZ_ERR_UNSUPPORTED;
}

const char *dcz_dist_describe(char *buf, size_t n)
{
    snprintf(buf, n, "MPI: not built (one process; install libopenmpi-dev and rebuild for mpirun)");
    return buf;
}
