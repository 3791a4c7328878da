/* backend.h — the one interface every compute backend implements.
 *
 * A backend owns a replica of the model's parameters in its own memory and
 * the recurrent state of the members this rank evaluates. The CPU backend is
 * the reference; CUDA and HIP must match it bit for bit. */
#ifndef EGG_BACKEND_H
#define EGG_BACKEND_H
#include <stdint.h>
#include "config.h"
#include "model.h"
#include "util.h"

/* What one step evaluates on this rank: members [m0, m1) (pair-aligned),
 * their token windows and state resets. Member m reads the stream of group
 * g = m / group: tokens[(g - g0) * (seq + 1) + t], t = 0..seq (inputs 0..seq-1,
 * targets 1..seq); reset[g - g0] zeroes the state before the window. */
typedef struct egg_step_ctx {
    uint64_t seed;
    uint32_t epoch;       /* noise epoch = step / noise_reuse */
    int m0, m1;           /* member range (global indices) */
    int group, g0;        /* group size; first group covered */
    int seq;
    const int32_t *tokens;
    const uint8_t *reset;
} egg_step_ctx;

typedef struct egg_update_stats {
    int64_t changed;      /* parameters whose value changed */
} egg_update_stats;

/* --update allreduce: a rank votes with its own pairs' fitness only (the others' are 0 in fit), and its int32
 * vote sums Z of every parameter go through sum() before the threshold, so that every rank applies the same
 * Z = sum over all pairs, bit for bit what a replicated update computes from all pairs. NULL: replicated. */
typedef struct egg_vote_sum {
    /* sums n values in place over the ranks (MPI_Allreduce, MPI_SUM); 0 or an error code with err set */
    int (*sum)(void *ctx, int32_t *z, size_t n, egg_err *err);
    void *ctx;
    int ranks; /* that many take part; 1: the votes are already the sum (sum is not called) */
} egg_vote_sum;

typedef struct egg_backend egg_backend;
struct egg_backend {
    const char *name;
    char device_desc[128];
    int device_id;        /* GPU index on this node; -1 for the CPU */
    void *impl;
    /* Population forward: scores[m - m0] = sum of log-likelihoods (1/16 bits)
     * of member m over its window. Carries each member's recurrent state. */
    int (*eval)(egg_backend *b, const egg_step_ctx *ctx, int32_t *scores, egg_err *err);
    /* EGGROLL update from the fitness of all pop/2 pairs (values -2..2);
     * applies it to the backend's replica and to m->params (kept equal).
     * vs != NULL (--update allreduce): the votes are summed over the ranks
     * first, through vs->sum or the backend's own NCCL communicator. */
    int (*update)(egg_backend *b, egg_model *m, uint64_t seed, uint32_t epoch, const int8_t *fit, int tau,
                  const egg_vote_sum *vs, egg_update_stats *st, egg_err *err);
    /* Unperturbed forward of n independent windows from zero state (validation):
     * tokens[w * (len + 1) + t]; scores[w] = sum of log-likelihoods. */
    int (*eval_clean)(egg_backend *b, int n, int len, const int32_t *tokens, int32_t *scores, egg_err *err);
    /* Unperturbed single-sequence stepping for sampling: feed token, get int8 logits
     * [V] (state kept inside; reset = 1 starts from zero state). */
    int (*sample_step)(egg_backend *b, int token, int reset, int8_t *logits, egg_err *err);
    /* The recurrent state of members [m0, m1): m-major, then layer, then H (int8). */
    int (*get_state)(egg_backend *b, int8_t *dst, egg_err *err);
    int (*set_state)(egg_backend *b, const int8_t *src, egg_err *err);
    /* Optional (CUDA with NCCL): fitness exchange straight from device memory.
     * nccl_init joins the communicator (uid from rank 0 through MPI);
     * nccl_allgather sends this rank's per-pair values of the last eval (sign of
     * the score difference, or the difference itself for --fitness norm), padded
     * to maxc per rank, and returns all ranks' values: all[r * maxc + k]. */
    int (*nccl_init)(egg_backend *b, int rank, int world, const unsigned char *uid, egg_err *err);
    int (*nccl_allgather)(egg_backend *b, int norm, int pairs_local, int maxc, int32_t *all, egg_err *err);
    /* Parameters changed on the host (resume): upload. */
    int (*set_params)(egg_backend *b, const egg_model *m, egg_err *err);
    /* Optional (GPUs): page-locked host memory for the buffer that eval's tokens are read from each step, so their
     * upload (34 MB a step at EGG-128x4's 65536 members) is one DMA instead of the driver's staging through the CPU;
     * NULL on failure (the caller then uses malloc). host_free releases it; call it before destroy. */
    void *(*host_alloc)(egg_backend *b, size_t bytes);
    void (*host_free)(egg_backend *b, void *p);
    /* Optional (NULL: nothing to start): begin, without waiting, the work of a coming step's eval that depends
     * only on (seed, epoch) -- the GPU backends generate its noise blob -- so it runs while the host prepares the
     * step's tokens. Called once a step's eval has returned; a backend whose update still reads that step's noise
     * holds it until its update has queued its own work. eval redoes it when the epoch or seed differ. */
    int (*prefetch)(egg_backend *b, uint64_t seed, uint32_t epoch, egg_err *err);
    void (*destroy)(egg_backend *b);
};

/* CPU backend: evaluates members [m0, m1) of a population. */
int egg_backend_cpu_create(egg_backend *b, const egg_config *c, const egg_model *m, int m0, int m1, egg_err *err);
#ifdef EGG_HAVE_CUDA
int egg_backend_cuda_create(egg_backend *b, const egg_config *c, const egg_model *m, int m0, int m1, int device, egg_err *err);
int egg_cuda_device_count(void);
int egg_cuda_nccl_uid(unsigned char *uid128); /* 0 on success, -1 without NCCL */
double egg_cuda_mma_peak_tops(int dev);        /* plain 8192^3 int8 GEMM rate, TOPS */
double egg_cuda_blas_peak_tops(int dev, const char **why); /* the same GEMM by cuBLAS (dlopen); 0 and *why without */
#endif
#ifdef EGG_HAVE_HIP /* the same kernels built by hipcc (kernels/hip/egg_hip.cpp) */
int egg_backend_hip_create(egg_backend *b, const egg_config *c, const egg_model *m, int m0, int m1, int device, egg_err *err);
int egg_hip_device_count(void);
int egg_hip_nccl_uid(unsigned char *uid128); /* RCCL; -1 without */
double egg_hip_mma_peak_tops(int dev);
double egg_hip_blas_peak_tops(int dev, const char **why); /* 0: no rocBLAS counterpart */
#endif

#endif
