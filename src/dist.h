/* dist.h — ranks and the little that crosses them: start-up agreement on
 * errors, the fitness all-gather, replica checksums, checkpoint state.
 *
 * Built with MPI (EGG_HAVE_MPI) the same binary runs as a singleton, under
 * mpirun, or under srun --mpi=pmix; built without, it is one process. */
#ifndef EGG_DIST_H
#define EGG_DIST_H
#include <stddef.h>
#include <stdint.h>
#include "util.h"

typedef struct egg_dist {
    int rank, world;
    int local_rank, local_size;   /* on this node (MPI_COMM_TYPE_SHARED) */
    int mpi;                      /* 1 when MPI is initialised */
    char host[64];
} egg_dist;

void egg_dist_init(egg_dist *d, int *argc, char ***argv);
void egg_dist_finalize(egg_dist *d);
/* End the whole job now (MPI_Abort under MPI). */
void egg_dist_abort(egg_dist *d, int code) __attribute__((noreturn));

/* Collective: every rank passes its local result (0 or an error). If any rank
 * failed, returns the lowest failing rank's code on every rank, and rank 0
 * holds that rank's message (prefixed "rank N: " when world > 1) in *err. */
int egg_dist_agree(egg_dist *d, int rc, egg_err *err);

/* All-gather int32 values: rank r contributes counts[r] values (displs derived). */
void egg_dist_allgather_i32(egg_dist *d, const int32_t *mine, int n_mine, int32_t *all, const int *counts);
/* All-gather 2-bit packed sign fitness: values in -1..1. */
void egg_dist_allgather_sign(egg_dist *d, const int8_t *mine, int n_mine, int8_t *all, const int *counts);
/* Gather bytes to rank 0 (counts per rank, in bytes; all may be NULL on others). */
void egg_dist_gather_bytes(egg_dist *d, const void *mine, size_t n_mine, void *all, const size_t *counts);
void egg_dist_bcast(egg_dist *d, void *buf, size_t n, int root);
int64_t egg_dist_sum_i64(egg_dist *d, int64_t v);
/* Sum n int32 values in place over the ranks (the votes of --update allreduce). */
void egg_dist_sum_i32(egg_dist *d, int32_t *v, size_t n);
double egg_dist_max_dbl(egg_dist *d, double v);
double egg_dist_min_dbl(egg_dist *d, double v);
int egg_dist_any(egg_dist *d, int flag); /* logical OR over ranks */
/* min and max of a value and the ranks holding them. */
void egg_dist_minmax_u64(egg_dist *d, uint64_t v, uint64_t *mn, uint64_t *mx, int *rmn, int *rmx);
void egg_dist_barrier(egg_dist *d);

#endif
