#define _GNU_SOURCE
#include "dist.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef EGG_HAVE_MPI
#include <mpi.h>
#endif

void egg_dist_init(egg_dist *d, int *argc, char ***argv) {
    memset(d, 0, sizeof *d);
    d->world = d->local_size = 1;
    gethostname(d->host, sizeof d->host - 1);
#ifdef EGG_HAVE_MPI
    /* --help and --version never need MPI */
    for (int i = 1; i < *argc; i++)
        if (!strcmp((*argv)[i], "--help") || !strcmp((*argv)[i], "-h") || !strcmp((*argv)[i], "--version")) return;
    /* Started by hand (no launcher in the environment): one process, and no
     * MPI_Init, which would cost ~0.4 s for a singleton. mpirun/mpiexec set
     * OMPI_COMM_WORLD_SIZE; srun --mpi=pmix sets PMIX_RANK; PMI-1/2 set PMI_RANK. */
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_RANK") && !getenv("PMI_SIZE") &&
        !getenv("MPI_LOCALNRANKS") && !getenv("EGG_FORCE_MPI"))
        return;
    MPI_Init(argc, argv);
    d->mpi = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->world);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &d->local_rank);
    MPI_Comm_size(local, &d->local_size);
    MPI_Comm_free(&local);
#else
    (void)argc; (void)argv;
#endif
}

void egg_dist_finalize(egg_dist *d) {
#ifdef EGG_HAVE_MPI
    if (d->mpi) MPI_Finalize();
#endif
    d->mpi = 0;
}

void egg_dist_abort(egg_dist *d, int code) {
    fflush(stdout);
    fflush(stderr);
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) MPI_Abort(MPI_COMM_WORLD, code);
#else
    (void)d;
#endif
    exit(code);
}

int egg_dist_agree(egg_dist *d, int rc, egg_err *err) {
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) {
        /* lowest failing rank: min over (rank if failed else world) */
        int mine = rc ? d->rank : d->world, first;
        MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (first == d->world) return 0;
        int code = rc;
        char msg[sizeof err->msg];
        if (d->rank == first) memcpy(msg, err->msg, sizeof msg);
        MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD);
        MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, MPI_COMM_WORLD);
        if (first == 0) memcpy(err->msg, msg, sizeof msg);
        else snprintf(err->msg, sizeof err->msg, "rank %d: %s", first, msg);
        err->code = code;
        return code;
    }
#else
    (void)d;
#endif
    (void)err;
    return rc;
}

void egg_dist_allgather_i32(egg_dist *d, const int32_t *mine, int n_mine, int32_t *all, const int *counts) {
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) {
        int *displs = malloc(sizeof(int) * (size_t)d->world);
        int acc = 0;
        for (int r = 0; r < d->world; r++) { displs[r] = acc; acc += counts[r]; }
        MPI_Allgatherv(mine, n_mine, MPI_INT32_T, all, counts, displs, MPI_INT32_T, MPI_COMM_WORLD);
        free(displs);
        return;
    }
#endif
    (void)d; (void)counts;
    memcpy(all, mine, sizeof(int32_t) * (size_t)n_mine);
}

/* Sign fitness travels as 2 bits per pair: 0 -> 0, +1 -> 1, -1 -> 2. */
void egg_dist_allgather_sign(egg_dist *d, const int8_t *mine, int n_mine, int8_t *all, const int *counts) {
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) {
        int W = d->world;
        int *bc = malloc(sizeof(int) * (size_t)W), *bd = malloc(sizeof(int) * (size_t)W);
        int acc = 0;
        for (int r = 0; r < W; r++) { bc[r] = (counts[r] + 3) / 4; bd[r] = acc; acc += bc[r]; }
        uint8_t *pk = calloc((size_t)(n_mine + 3) / 4 + 1, 1), *allpk = calloc((size_t)acc + 1, 1);
        for (int i = 0; i < n_mine; i++) pk[i / 4] |= (uint8_t)((mine[i] > 0 ? 1 : mine[i] < 0 ? 2 : 0) << (2 * (i % 4)));
        MPI_Allgatherv(pk, bc[d->rank], MPI_UINT8_T, allpk, bc, bd, MPI_UINT8_T, MPI_COMM_WORLD);
        int o = 0;
        for (int r = 0; r < W; r++)
            for (int i = 0; i < counts[r]; i++) {
                int v = (allpk[bd[r] + i / 4] >> (2 * (i % 4))) & 3;
                all[o++] = (int8_t)(v == 1 ? 1 : v == 2 ? -1 : 0);
            }
        free(bc); free(bd); free(pk); free(allpk);
        return;
    }
#endif
    (void)d; (void)counts;
    memcpy(all, mine, (size_t)n_mine);
}

void egg_dist_gather_bytes(egg_dist *d, const void *mine, size_t n_mine, void *all, const size_t *counts) {
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) {
        /* point-to-point in chunks: no int overflow for big states */
        if (d->rank == 0) {
            size_t off = counts[0];
            memcpy(all, mine, n_mine);
            for (int r = 1; r < d->world; r++) {
                for (size_t done = 0; done < counts[r];) {
                    int chunk = (int)(counts[r] - done > (1u << 30) ? (1u << 30) : counts[r] - done);
                    MPI_Recv((char *)all + off + done, chunk, MPI_BYTE, r, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    done += (size_t)chunk;
                }
                off += counts[r];
            }
        } else {
            for (size_t done = 0; done < n_mine;) {
                int chunk = (int)(n_mine - done > (1u << 30) ? (1u << 30) : n_mine - done);
                MPI_Send((const char *)mine + done, chunk, MPI_BYTE, 0, 77, MPI_COMM_WORLD);
                done += (size_t)chunk;
            }
        }
        return;
    }
#endif
    (void)d; (void)counts;
    memcpy(all, mine, n_mine);
}

void egg_dist_bcast(egg_dist *d, void *buf, size_t n, int root) {
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) {
        for (size_t done = 0; done < n;) {
            int chunk = (int)(n - done > (1u << 30) ? (1u << 30) : n - done);
            MPI_Bcast((char *)buf + done, chunk, MPI_BYTE, root, MPI_COMM_WORLD);
            done += (size_t)chunk;
        }
    }
#else
    (void)d; (void)buf; (void)n; (void)root;
#endif
}

int64_t egg_dist_sum_i64(egg_dist *d, int64_t v) {
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) { int64_t o; MPI_Allreduce(&v, &o, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD); return o; }
#endif
    (void)d;
    return v;
}
void egg_dist_sum_i32(egg_dist *d, int32_t *v, size_t n) {
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1)
        for (size_t i = 0; i < n; i += (size_t)1 << 30) { /* MPI counts are int */
            const size_t k = n - i < ((size_t)1 << 30) ? n - i : ((size_t)1 << 30);
            MPI_Allreduce(MPI_IN_PLACE, v + i, (int)k, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        }
#endif
    (void)d; (void)v; (void)n;
}
double egg_dist_max_dbl(egg_dist *d, double v) {
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) { double o; MPI_Allreduce(&v, &o, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); return o; }
#endif
    (void)d;
    return v;
}
double egg_dist_min_dbl(egg_dist *d, double v) {
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) { double o; MPI_Allreduce(&v, &o, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD); return o; }
#endif
    (void)d;
    return v;
}
int egg_dist_any(egg_dist *d, int flag) {
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) { int o; MPI_Allreduce(&flag, &o, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD); return o; }
#endif
    (void)d;
    return flag != 0;
}
void egg_dist_minmax_u64(egg_dist *d, uint64_t v, uint64_t *mn, uint64_t *mx, int *rmn, int *rmx) {
    *mn = *mx = v;
    *rmn = *rmx = d->rank;
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) {
        uint64_t *all = malloc(sizeof(uint64_t) * (size_t)d->world);
        MPI_Allgather(&v, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
        for (int r = 0; r < d->world; r++) {
            if (all[r] < *mn) { *mn = all[r]; *rmn = r; }
            if (all[r] > *mx) { *mx = all[r]; *rmx = r; }
        }
        /* report the first rank that differs from rank 0 */
        *rmn = 0; *mn = all[0];
        for (int r = 1; r < d->world; r++) if (all[r] != all[0]) { *rmx = r; *mx = all[r]; break; }
        free(all);
    }
#endif
}
void egg_dist_barrier(egg_dist *d) {
#ifdef EGG_HAVE_MPI
    if (d->mpi && d->world > 1) MPI_Barrier(MPI_COMM_WORLD);
#endif
    (void)d;
}
