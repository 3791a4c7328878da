/* egg_cuda.cu — the CUDA backend: population forward on int8 tensor cores
 * (wgmma m64nNk32 on sm_90a, mma.sync m16n8k32 elsewhere; s8 -> s32) with the
 * rank-r perturbation, biases, gates and residuals fused into each GEMM's
 * epilogue, the minGRU recurrence of a chunk of timesteps fused into one kernel
 * on sm_90a, and the EGGROLL update as a tensor-core GEMM over the pair
 * dimension with a threshold epilogue. Also compiled by hipcc for AMD
 * (kernels/hip/egg_hip.cpp), without the sm_90a kernels.
 *
 * Every integer operation is the one in src/egg_math.h, so per-member scores
 * and updated weights equal the CPU reference bit for bit (make test-gpu).
 *
 * Layout on the device: activations [members][width] int8; recurrent state
 * [layer][members][H]; per-step noise [pair][blob] in the CPU's blob layout
 * (matrices: A [r][out] then B [r][in]; vectors n1[n] then n2[n]).
 *
 * One translation unit: this file includes the kernel headers of this folder
 * in order, each named by its concern (as llm.c's train_gpt2.cu includes its
 * llmc/ headers), then holds the host side (memory, streams, graphs, the
 * backend interface of src/backend.h):
 *   egg_mm.cuh      GEMM arguments, epilogue, mm_kernel (every GPU, HIP too)
 *   egg_ln_div.cuh  EGG-LN's division as a multiply-shift (+ egg_ln.cuh)
 *   egg_sm90.cuh    sm_90a building blocks: mbarriers, TMA, packed epilogues
 *                   (+ egg_epi.cuh, egg_wgmma.cuh, egg_lanes.cuh)
 *   egg_mmp.cuh     mmp_kernel: the persistent GEMM
 *   egg_mmw.cuh     mmw / mmx / mmd_kernel: warp-specialised TMA GEMMs, the
 *                   update's vote GEMM
 *   egg_mlp.cuh     mlp_kernel: a layer's MLP in one launch
 *   egg_recur.cuh   rchunk / rreg_kernel: a chunk's recurrence in one launch
 *   egg_rows.cuh    LN, embedding, loss, state reset, the per-timestep
 *                   recurrence's gate and mix passes
 *   egg_noise.cuh   the step's noise blobs from the counter hash
 *   egg_update.cuh  the update's operands, vector votes and weight steps
 *   egg_forward.cuh (host) which kernel runs each MM; forward() of a chunk */
#include <cuda_runtime.h>
#if !defined(__HIPCC__)
#include <cuda.h>         /* CUtensorMap: the persistent GEMM's TMA descriptors */
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled (from the runtime's driver entry point: no -lcuda) */
#include <dlfcn.h>        /* cuBLAS for --bench's reference GEMM, loaded at run time (egg_cuda_blas_peak_tops) */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits> /* std::integral_constant: rank_go */
#include <vector>

#include "egg_gpu.h"
#ifdef EGG_HAVE_NCCL
#include <nccl.h>
#endif

extern "C" {
#include "backend.h"
#include "config.h"
#include "es.h"
#include "model.h"
#include "util.h"
}
#include "egg_math.h"

#define CK(call)                                                                                                   \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        if (e_ != cudaSuccess)                                                                                     \
            return egg_fail(err, EGG_ERUNTIME, EGG_GPU_API " error %s at %s:%d (%s)", cudaGetErrorString(e_), __FILE__, \
                            __LINE__, #call);                                                                      \
    } while (0)
#define CKL() CK(cudaGetLastError())

enum { GPU_RMAX = 4 };
/* Within a matrix's noise blob, B starts after A ([r][N]) rounded up to 64
 * bytes, so every B row is 16-byte aligned for cp.async whatever N is. */
__host__ __device__ __forceinline__ size_t a_span(int r, int N) { return ((size_t)r * N + 63) & ~(size_t)63; }
enum { MODE_PLAIN = 0, MODE_BIAS = 1, MODE_BIAS_GATE = 2, MODE_RESID = 3, MODE_UPDATE = 4, MODE_BIAS_MIX = 5 };

#include "cuda/egg_mm.cuh"
#include "cuda/egg_ln_div.cuh"

/* the sm_90a kernels (TMA, wgmma); not on HIP, nor with the AMD shared-memory plan */
#if !defined(__HIPCC__) && !defined(EGG_GEMM_AMD_PLAN)
#define EGG_MMP 1
#include "cuda/egg_sm90.cuh"
#include "cuda/egg_mmp.cuh"
#include "cuda/egg_mmw.cuh"
#include "cuda/egg_mlp.cuh"
#include "cuda/egg_recur.cuh"
/* 1 where this binary has the sm_90a (wgmma) kernels for the running GPU */
__global__ void wgmma_probe(int *out) {
#ifdef MMP_WGMMA
    *out = 1;
#else
    *out = 0;
#endif
}
#endif /* EGG_MMP */

#include "cuda/egg_rows.cuh"
#include "cuda/egg_noise.cuh"
#include "cuda/egg_update.cuh"

/* ------------------------------------------------------------ host side */

/* Activations of n members for a chunk of tc timesteps, rows [time][member]:
 * the forward runs layer by layer over the whole chunk, so every GEMM except
 * the recurrent Uf.h and Uh.g has n * tc rows; those two run per timestep. */
struct Ctx {
    int n, tc;
    int8_t *X, *XN, *TF, *TH, *R, *U, *logits; /* [tc][n][width] */
    int8_t *F, *G, *Hs;                         /* [n][H]; state [L][n][H] */
    uint8_t *rz, *rz0;                          /* [tc][n]: token == 0; rz0: n zeros after them */
    int32_t *scores, *tokens;
    uint8_t *reset;
    int tok_cap;
    /* a part of the train Ctx (cuda_eval runs the parts' forwards on their own streams): its first member in the
     * whole, the members per layer of the state Hs (the whole's; 0: n), its offset in the members' perturbed vectors */
    int mb, hsn;
    size_t lnp_at;
};
/* a path's A/B switch: on unless the variable is set to 0 (EGG_CUDA_X=0 turns path X off) */
static bool env_on(const char *name) {
    const char *e = getenv(name);
    return !(e && atoi(e) == 0);
}
/* bytes of one timestep of a chunk for n members */
static size_t ctx_step_bytes(int n, int H, int V) { return (size_t)n * (9 * (size_t)H + (size_t)V + 1); }
/* timesteps per chunk: as many as fit in `budget` bytes (at least one), balanced over the chunks.
 * EGG_CUDA_TCHUNK=k caps it (tests use it to cross chunk boundaries). */
static int ctx_chunk(int n, int H, int V, int T, size_t budget) {
    size_t per = ctx_step_bytes(n > 0 ? n : 1, H, V);
    long cap = (long)(budget / per);
    const char *e = getenv("EGG_CUDA_TCHUNK");
    if (e && atoi(e) > 0 && atoi(e) < cap) cap = atoi(e);
    if (cap < 1) cap = 1;
    if (T < 1) T = 1;
    long nch = (T + cap - 1) / cap;
    return (int)((T + nch - 1) / nch);
}

#define EGG_PARTS_MAX 8 /* the train forward's member parts at most (EGG_CUDA_PARTS) */
struct CudaImpl {
    const egg_model *m;
    int V, H, L, r, pshift, pop, group, m0, m1, dev;
    int8_t *params;           /* device copy of every parameter */
    int8_t *wperm;            /* sm_90a with TMA: the matrices with 128-row blocks, rows permuted (wperm_row) for the mmw
                                 kernel's direct epilogue, same offsets as params (NULL: none; EGG_CUDA_WPERM=0) */
    std::vector<char> wp_ok;  /* per tensor: its permuted copy is kept in wperm */
    int8_t *wpu;              /* H = 256 and 128 with the fused MLP: each layer's W_up permuted by wpermu_row, same offsets as
                                 params (NULL: none) */
    int8_t *noise;            /* [local pairs][pstride] */
    std::vector<size_t> noff; /* per tensor */
    size_t pstride;
    Ctx train, val, samp;
    int8_t *Lm, *Rm;
    size_t upd_cap;
    int *ek; int8_t *es; int ecap;
    uint64_t *ukeys; size_t ukcap; /* [tensors][E]: the update's noise keys of the step (upd_keys_kernel) */
    unsigned long long *changed;
    int *hek; int8_t *hes; int hecap; /* the update's entries on the host, page-locked */
    unsigned long long *hch;  /* the changed count's host copy, page-locked (its copy does not block the host) */
    int32_t *Z;               /* update votes of the largest tensor */
    /* the grouped update (one GEMM launch for every matrix; EGG_CUDA_UGROUP=0: a launch per matrix): each matrix's
     * first operand rows in the stacked Lm / Rm (gA, gB), its votes' offset in Zg; gsumA/B their rows in all */
    int ugroup;
    std::vector<int> gA, gB;
    std::vector<long long> gZ;
    int gsumA, gsumB;
    int8_t *Lg; size_t gcap;  /* [gsumA + gsumB][Kp] */
    int32_t *Zg;              /* every matrix's votes */
    int4 *gitems; int gicap;  /* the GEMM's work list */
    int4 *gtab; long long *gzoff;
    UpdOpTab *otab; int onmat, oyb; /* upd_operands_all_kernel's table (built at the first grouped update), its matrices and row
                                       blocks (-1: more than grid y takes) */
    int4 *mtab; long long *mzoff; int nmat, mblocks; /* upd_mapply_kernel's table (built at the first update), its votes'
                                                        offsets in Zg and, after them, in Zall (the parameters') */
    int mapply4;              /* the threshold steps four parameters a thread (upd_mapply4_kernel) where every matrix's columns
                               * and offsets allow (EGG_CUDA_MAPPLY4=0: upd_mapply_kernel; set when the table is built) */
    /* --update allreduce: every parameter's votes, indexed as the parameters (summed over the ranks before the
     * threshold); the matrices' offsets in it for the grouped GEMM (gzoffp); a host copy where no NCCL sums them */
    int32_t *Zall; long long *gzoffp; int32_t *zhost; /* zhost page-locked (NULL until needed) */
    int smem, nsm;
    int rchunk;               /* H = 128/256 on sm_90a: a chunk's recurrence in one launch (EGG_CUDA_RCHUNK=0: two GEMMs per timestep) */
    int rchunk_ctas[2];       /* its CTAs per launch at H = 128, 256 (resident CTAs on all SMs) */
    int rreg;                 /* the chunk recurrence in rreg_kernel (EGG_CUDA_RREG=0: rchunk_kernel) */
    int rreg_ctas[2];         /* its CTAs per launch at H = 128, 256 */
    int l2pf;                 /* rreg_kernel, rclus_kernel prefetch the next timestep's inputs into L2 (EGG_CUDA_L2PF=0: not) */
    int rclus;                /* H = 384 / 512 (640: rclus640) on sm_90a: a chunk's recurrence in rclus_kernel, Uf and Uh split over a cluster's
                               * CTAs (EGG_CUDA_RCLUS=0: per timestep; =n >= 2: n clusters, each walking many row blocks) */
    int rclus_ncl[3];         /* its clusters per launch at H = 384, 512, 640 (those that fit the GPU at once; 0 at 640: none) */
    int rclus640;             /* H = 640 in rclus_kernel: 1 at rank 2-4 (the default), 2 at every rank, 0 never (EGG_CUDA_RCLUS640) */
    int rsplit;               /* sm_90a, the recurrence per timestep (H not 128 / 256): its two GEMMs as PLAIN GEMMs and the
                               * bias, gate, mix and residual as rec_gate_kernel / rec_mix_kernel; 1 (default) at H >= 768
                               * (every rank since v126), 2 at every H (tests), 0 never (EGG_CUDA_RSPLIT): MODE_BIAS_GATE /
                               * MODE_BIAS_MIX GEMMs */
    int ln_vec;               /* EGG-LN, embedding, loss with wide accesses where H / V allow (EGG_CUDA_LNVEC=0: byte kernels) */
    int mmp_ctas;             /* persistent forward GEMM: CTAs per launch (0: mm_kernel only, EGG_CUDA_MMP=0; =n caps it) */
    uint64_t *ekeys;          /* [pairs]: the embedding noise's keys of the step */
    int ln2_fuse;             /* H = 256: the fused recurrence applies ln2 too (EGG_CUDA_LN2FUSE=0: the LN kernel) */
    int8_t *lnp;              /* [4L+1][members][H]: the members' perturbed LN weights of the step (LN1, LN2 of each layer, the
                                 output LN), then each layer's bf, bh (NULL: the kernels perturb them from the noise) */
#ifdef EGG_MMP
    PFN_cuTensorMapEncodeTiled_v12000 tmap_encode; /* sm_90a: its X and W tiles by TMA (NULL: cp.async; EGG_CUDA_TMA=0) */
    int mmw_ctas;             /* sm_90a with TMA: PLAIN/RESID in the warp-specialised mmw_kernel, CTAs per launch (0: mmp; EGG_CUDA_WS=0) */
    int mmd;                  /* the RESID GEMMs (down) with N a multiple of 256 and W's permuted copy in mmd_kernel (128 x 256 tiles;
                               * EGG_CUDA_WIDE=0: mmw_kernel; =1: mmd_kernel at N = 256 only) */
    bool mmd1p;               /* and the PLAIN GEMMs with K > 512 and N an odd multiple of 128 (hidden 640) in its 128 x 128 tiles
                               * (EGG_CUDA_MMD1P=0: mmw_kernel) */
    bool mmdodd;              /* N an odd multiple of 128 from 640 in 128 x 256 tiles, the last one's second half past N (mmd_odd2;
                               * EGG_CUDA_MMDODD=0: 128 x 128 tiles) */
    bool mmx;                 /* the K <= 256 PLAIN GEMMs with W's permuted copy in mmx_kernel (whole row blocks; EGG_CUDA_XRES=0: mmw_kernel) */
    bool mmx512;              /* and the K = 384 and 512 ones (one X buffer a CTA; EGG_CUDA_MMX512=0: mmw_kernel) */
    bool rgemm;               /* rank 2-4 in mmx_kernel and mmd_kernel, x . B_j from xb_kernel (EGG_CUDA_RGEMM=0: mm_kernel) */
    bool fmlpr;               /* and the fused MLP at hidden 256 (rank 2-4) and 128 (rank 2) (EGG_CUDA_FMLPR=0: up and down in those GEMMs) */
    bool lnxb;                /* rank 2-4 at hidden 128, 256 and 512: EGG-LN1 and the output LN in lnxb_kernel, with the T rows of Wf.x, Wh.x and the
                               * head (EGG_CUDA_LNXB=0: xb_kernel's pass) */
    bool ln2xb;               /* rank 2-4 at hidden 256 (and 128 at rank 2) where the fused MLP runs, and at 512: the chunk (or
                               * cluster) recurrence without EGG-LN2, then lnxb_kernel's LN2 with up's T rows
                               * (EGG_CUDA_LN2XB=0: LN2 in the recurrence, up's T rows from xb_kernel) */
    bool resw;                /* mmx_kernel keeps W resident where its tiles fit the stages (EGG_CUDA_RESW=0: streamed) */
    bool fmlp;                /* H = 128/256: a layer's up and down in one mlp_kernel launch, U never in DRAM (EGG_CUDA_FMLP=0: two GEMMs) */
#endif
    bool dual;                /* Wf.x and Wh.x in one mmx_kernel launch (DUAL; EGG_CUDA_DUAL=0: a launch each) */
    bool tord;                /* the fused MLP's row blocks walk a member group's timesteps first (blk_m0; EGG_CUDA_TORD=0: row order) */
    uint64_t *seedep;         /* device: {seed, epoch} of the step being evaluated */
    cudaGraph_t graph;        /* the training forward (all timesteps), captured once */
    cudaGraphExec_t gexec;
    int have_graph;
    cudaStream_t st;
    cudaStream_t cs;          /* the step's token upload, beside the prefetched noise kernels on st */
    cudaEvent_t up;           /* that upload done: st waits for it */
    int parts_env;            /* EGG_CUDA_PARTS (-1: unset) */
    int noisew;               /* the noise 16 values a thread where shapes allow (EGG_CUDA_NOISEW=0: 4 at rank 1, 1 at rank 2-4) */
    int ops4;                 /* the update operands: 2 (default) 128 x 128 tiles, four columns a thread (upd_operands_t_kernel);
                               * EGG_CUDA_OPS4=1: 16-row blocks, four columns a thread (at rank 2-4 since v121); 0: one */
    int oyt;                  /* upd_operands_t_kernel's tile rows of all matrices (grid y) */
    int embln;                /* layer 0's EGG-LN1 inside the embedding kernel at hidden 128-512 (EGG_CUDA_EMBLN=0: an LN launch) */
    int lnwalk;               /* EGG-LN with the members' perturbed weights walking their timesteps (ln_walks; EGG_CUDA_LNWALK=0: off) */
    int embwalk;              /* the embedding with layer 0's EGG-LN1 walking each pair's timesteps (embed_walk_kernel; EGG_CUDA_EMBWALK=0: off) */
    int lossrs;               /* the loss at vocabulary 128 / 256 by reduce-scatter (loss_rs_kernel; EGG_CUDA_LOSSRS=0: loss_vec_kernel) */
    cudaStream_t ps[EGG_PARTS_MAX];  /* the train forward's parts, one stream each (eval_parts) */
    cudaEvent_t pev[EGG_PARTS_MAX + 1];
    cudaEvent_t vev[2];       /* the update's vector votes on ps[0] beside the matrices' operands and GEMM: fork, join */
    int nvec, vtot, vyb;      /* the vector tensors, their total length, their blocks of 128 */
    NoiseTab *ntab;           /* noise_kernel's table: every tensor's shape and blob offset */
    longlong2 *lnpo;          /* lnpert_kernel's table: each perturbed vector's parameter and noise offsets */
    int4 *vtab; long long *voff; /* upd_vecs_kernel's table and their parameter offsets (NULL: a launch per vector) */
    long long *vnoff;         /* their noise's offsets in a pair's blob (upd_vecs_kernel reads an own pair's there) */
    int4 *vtab4; int vyb4;    /* upd_vecs_kernel<4>'s table (block rows of VEC4_THREADS * 4 elements) and its block rows; NULL where
                               * a vector's length or offsets are not multiples of 4, or EGG_CUDA_VEC4=0 */
    void *pinned_params;      /* the host model's parameters, page-locked for the update's copy back (NULL: pageable) */
    uint64_t seed; uint32_t noise_epoch; int noise_valid;
    int upd_pending;          /* a train eval ran and its update has not: the noise blob is still to be read */
    int pf_valid; uint64_t pf_seed; uint32_t pf_epoch; /* a prefetch held until then (queued by the update) */
    cudaEvent_t uev0, uev;    /* the update's kernels done (the copies back wait for it), the copies done */
#ifdef EGG_HAVE_NCCL
    ncclComm_t comm;
    int have_comm;
    int32_t *xsend, *xrecv;
    int xcap;
#endif
    /* EGG_PROFILE=1: synchronise after each launch and add its wall time to a category */
    int prof;
    double plast, pt[16];
    long long pn[16];
};
enum { P_EMB, P_LN, P_MM_X, P_MM_H, P_LN2, P_UP, P_DOWN, P_MLP, P_HEAD, P_LOSS, P_NOISE, P_UPD_OP, P_UPD_MM, P_UPD_VEC, P_XB, P_N };
static const char *pname[P_N] = {"embed", "ln", "mm Wf/Wh", "recurrence", "ln2", "mm up", "mm down+res", "mlp (fused)", "mm head",
                                 "loss", "noise", "upd operands", "upd gemm", "upd vectors", "x.B (rank 2-4)"};
/* the noise blob's rows of x's pairs (a part's first pair is mb / 2 of the rank's) */
static const int8_t *ctx_noise(const CudaImpl *c, const Ctx *x) { return c->noise + (size_t)(x->mb / 2) * c->pstride; }
static void prof_mark(CudaImpl *c, int cat) {
    if (!c->prof) return;
    cudaStreamSynchronize(c->st);
    double t = egg_now();
    c->pt[cat] += t - c->plast;
    c->pn[cat]++;
    c->plast = t;
}
static void prof_start(CudaImpl *c) {
    if (!c->prof) return;
    cudaStreamSynchronize(c->st);
    c->plast = egg_now();
}

static int ctx_alloc(Ctx *c, int n, int tc, int H, int L, int V, int ngroups, int rowlen, egg_err *err) {
    memset(c, 0, sizeof *c);
    c->n = n;
    c->tc = tc;
    size_t h = (size_t)n * H, ht = h * tc;
    CK(cudaMalloc(&c->X, ht)); CK(cudaMalloc(&c->XN, ht)); CK(cudaMalloc(&c->TF, ht)); CK(cudaMalloc(&c->TH, ht));
    CK(cudaMalloc(&c->R, ht)); CK(cudaMalloc(&c->U, 4 * ht)); CK(cudaMalloc(&c->logits, (size_t)n * tc * V));
    CK(cudaMalloc(&c->rz, (size_t)n * (tc + 1)));
    CK(cudaMemset(c->rz, 0, (size_t)n * (tc + 1)));
    c->rz0 = c->rz + (size_t)n * tc;
    CK(cudaMalloc(&c->F, h)); CK(cudaMalloc(&c->G, h)); CK(cudaMalloc(&c->Hs, (size_t)L * h));
    CK(cudaMemset(c->Hs, 0, (size_t)L * h));
    CK(cudaMalloc(&c->scores, sizeof(int32_t) * (size_t)n));
    c->tok_cap = ngroups * rowlen;
    CK(cudaMalloc(&c->tokens, sizeof(int32_t) * (size_t)c->tok_cap));
    CK(cudaMalloc(&c->reset, (size_t)ngroups + 1));
    return 0;
}
static void ctx_free(Ctx *c) {
    cudaFree(c->X); cudaFree(c->XN); cudaFree(c->TF); cudaFree(c->TH); cudaFree(c->F); cudaFree(c->G); cudaFree(c->R);
    cudaFree(c->rz); cudaFree(c->U); cudaFree(c->logits); cudaFree(c->Hs); cudaFree(c->scores); cudaFree(c->tokens); cudaFree(c->reset);
    memset(c, 0, sizeof *c);
}

#ifdef EGG_MMP
/* the tensor map of a row-major int8 matrix [rows][cols] (row pitch ld bytes) read in boxes of
 * BK columns x box_rows rows, 64B-swizzled (the layout wg_off describes), zeros outside; box_cols = BN:
 * 128-byte rows, 128B-swizzled (as_off) */
static bool tmap_2d(PFN_cuTensorMapEncodeTiled_v12000 enc, CUtensorMap *m, const int8_t *p, size_t cols, size_t rows, size_t ld,
                    int box_rows, int box_cols = BK) {
    const cuuint64_t dim[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, stride[1] = {(cuuint64_t)ld};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows}, es[2] = {1, 1};
    return enc(m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)p, dim, stride, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
               box_cols == BK ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
/* the driver's tensor-map encoder through the runtime (no -lcuda); NULL where unavailable */
static PFN_cuTensorMapEncodeTiled_v12000 tmap_encoder(void) {
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return (PFN_cuTensorMapEncodeTiled_v12000)fn;
}
#endif
#include "cuda/egg_forward.cuh"

/* the noise blob holds this (seed, epoch)'s noise: gen_noise skips it, and the update reads the rank's own pairs there */
static bool noise_holds(const CudaImpl *c, uint64_t seed, uint32_t epoch) { return c->noise_valid && c->seed == seed && c->noise_epoch == epoch; }
static int gen_noise(CudaImpl *c, uint64_t seed, uint32_t epoch, egg_err *err) {
    if (noise_holds(c, seed, epoch)) return 0;
    const egg_model *m = c->m;
    int np = (c->m1 - c->m0) / 2;
    if (np <= 0) return 0;
    prof_start(c);
    const dim3 grid((unsigned)((np + NOISE_PP - 1) / NOISE_PP), (unsigned)m->ntensors);
    if (c->r == 1) noise_kernel<true><<<grid, 256, 0, c->st>>>(np, (uint32_t)(c->m0 / 2), seed, epoch, c->ntab, c->r, c->pstride, c->noise, c->noisew);
    else noise_kernel<false><<<grid, 256, 0, c->st>>>(np, (uint32_t)(c->m0 / 2), seed, epoch, c->ntab, c->r, c->pstride, c->noise, c->noisew);
    CKL();
    prof_mark(c, P_NOISE);
    c->seed = seed; c->noise_epoch = epoch; c->noise_valid = 1;
    return 0;
}

static int upload_tokens(CudaImpl *c, Ctx *x, const int32_t *tokens, size_t ntok, const uint8_t *reset, int ng, egg_err *err) {
    if ((int)ntok > x->tok_cap) {
        if (x == &c->train && c->have_graph) { /* the captured graph holds the old pointer */
            cudaGraphExecDestroy(c->gexec);
            cudaGraphDestroy(c->graph);
            c->have_graph = 0;
        }
        cudaFree(x->tokens);
        x->tok_cap = (int)ntok;
        CK(cudaMalloc(&x->tokens, sizeof(int32_t) * ntok));
    }
    /* on the copy stream, so the DMA runs beside the step's noise kernels that cuda_prefetch queued on st; st waits
     * for it before its next kernel (the tokens' previous readers finished: the last eval synchronised st) */
    CK(cudaMemcpyAsync(x->tokens, tokens, sizeof(int32_t) * ntok, cudaMemcpyHostToDevice, c->cs));
    if (reset) CK(cudaMemcpyAsync(x->reset, reset, (size_t)ng, cudaMemcpyHostToDevice, c->cs));
    CK(cudaEventRecord(c->up, c->cs));
    CK(cudaStreamWaitEvent(c->st, c->up, 0));
    return 0;
}

/* backend prefetch, called once a step's eval has returned: the coming step's noise blob. The step's update still
 * reads the blob, so the prefetch is held and queued by the update behind its kernels, where it runs while the
 * parameters go back to the host and the host prepares the next step; cuda_eval's gen_noise then finds it valid */
static int cuda_prefetch(egg_backend *be, uint64_t seed, uint32_t epoch, egg_err *err) {
    CudaImpl *c = (CudaImpl *)be->impl;
    CK(cudaSetDevice(c->dev));
    if (c->upd_pending) {
        c->pf_valid = 1; c->pf_seed = seed; c->pf_epoch = epoch;
        return 0;
    }
    return gen_noise(c, seed, epoch, err);
}

/* The train forward in parts: members are independent, so K parts of n / K members (whole pairs) run their forwards
 * on K streams, each part's kernels filling the SMs that the other parts' persistent kernels leave (their last
 * waves, the DRAM-bound EGG-LN beside the ALU-bound recurrence). A part is a view of the whole Ctx: its slices of
 * the activations, scores and perturbed vectors, and the whole's state layout (hsn); its noise rows and keys start
 * at its first pair. EGG_CUDA_PARTS=k (1: one forward, at most EGG_PARTS_MAX); by default parts of at least 8192
 * members, at most 4: on H100s, EGG-256x6 at 32768 members ran 56.0-57.2 M pop-tok/s in one forward, 57.9-59.1 M in
 * 2 parts, 58.2-59.7 M in 4, 59.1-59.3 M in 8; EGG-128x4 at 65536 members 183-187 M, 187 M in 2, 193-196 M in 4,
 * 188-189 M in 8 (docs/BENCHMARKS.md). Staggering the parts' starts by a kernel or a layer measured slower. Where
 * the recurrence runs per timestep as split GEMMs and passes (rec_split: hidden >= 768) at rank <= 1, one forward is
 * the default: its four launches a timestep then cover all members at once (H100, pop 32768: EGG-768x4 9.90 / 9.91 M
 * in one forward against 9.59 / 9.56 M in 4 parts, EGG-1024x4 6.81 / 6.80 against 6.71 / 6.68 M). Not at hidden 640,
 * whose recurrence GEMMs gate and mix in their epilogues (12.09 / 12.08 M in 4 parts against 11.83 / 11.83 M), nor at
 * rank 2-4, where each GEMM has its xb_kernel pass (hidden 768 rank 4: 4.53 / 4.54 M in 4 parts against 4.09 / 4.09). */
static int eval_parts(const CudaImpl *c, int n) {
#if defined(__HIPCC__) /* not measured on AMD GPUs: one forward unless EGG_CUDA_PARTS asks */
    int k = c->parts_env >= 0 ? c->parts_env : 1;
#else
    int k = c->parts_env >= 0 ? c->parts_env : rec_split(c, true) && c->r <= 1 ? 1 : n / 8192 < 4 ? n / 8192 : 4;
#endif
    k = k < 1 ? 1 : k > EGG_PARTS_MAX ? EGG_PARTS_MAX : k;
    while (k > 1 && n % (2 * k) != 0) k--;
    return k;
}
static Ctx ctx_part(const Ctx *x, int K, int h, int H, int L, int V) {
    Ctx p = *x;
    const int np = x->n / K;
    const size_t a = (size_t)h * np, tc = (size_t)x->tc;
    p.n = np; p.mb = x->mb + (int)a; p.hsn = x->hsn ? x->hsn : x->n;
    p.X = x->X + a * tc * H; p.XN = x->XN + a * tc * H; p.TF = x->TF + a * tc * H; p.TH = x->TH + a * tc * H; p.R = x->R + a * tc * H;
    p.U = x->U + 4 * a * tc * H; p.logits = x->logits + a * tc * V;
    p.rz = x->rz + a * (tc + 1); p.rz0 = p.rz + (size_t)np * tc;
    p.F = x->F + a * H; p.G = x->G + a * H; p.Hs = x->Hs + a * H; p.scores = x->scores + a;
    p.lnp_at = x->lnp_at + (size_t)(4 * L + 1) * a * H;
    return p;
}
static int forward_parts(CudaImpl *c, Ctx *x, const egg_step_ctx *ctx, egg_err *err) {
    const int K = eval_parts(c, x->n);
    if (K == 1) return forward(c, x, 1, ctx->seq, ctx->group, ctx->g0, ctx->m0, err);
    const cudaStream_t st0 = c->st;
    const bool fork = !c->prof; /* EGG_PROFILE: the parts one after another on st (per-kernel times) */
    if (fork) CK(cudaEventRecord(c->pev[K], st0));
    int rc = 0;
    for (int h = 0; h < K && !rc; h++) {
        Ctx p = ctx_part(x, K, h, c->H, c->L, c->V);
        cudaError_t ce = cudaSuccess;
        if (fork) {
            ce = cudaStreamWaitEvent(c->ps[h], c->pev[K], 0);
            c->st = c->ps[h];
        }
        /* p.rz0 (no reset after the part's chunk) is zero from ctx_alloc: with K > 1 the whole's layout, whose rows
         * cover it, is never written (n and K are fixed for the train Ctx) */
        if (ce == cudaSuccess) rc = forward(c, &p, 1, ctx->seq, ctx->group, ctx->g0, ctx->m0 + p.mb, err);
        if (fork && ce == cudaSuccess) ce = cudaEventRecord(c->pev[h], c->ps[h]);
        c->st = st0;
        CK(ce);
    }
    for (int h = 0; h < K && fork && !rc; h++) CK(cudaStreamWaitEvent(st0, c->pev[h], 0));
    return rc;
}

static int cuda_eval(egg_backend *be, const egg_step_ctx *ctx, int32_t *scores, egg_err *err) {
    CudaImpl *c = (CudaImpl *)be->impl;
    CK(cudaSetDevice(c->dev));
    Ctx *x = &c->train;
    const int n = ctx->m1 - ctx->m0;
    const int ng = (ctx->m1 - 1) / ctx->group + 1 - ctx->g0;
    int rc;
    if ((rc = upload_tokens(c, x, ctx->tokens, (size_t)ng * (ctx->seq + 1), ctx->reset, ng, err))) return rc;
    bool any = false; /* a window that starts a row: most steps have none */
    for (int g = 0; g < ng && ctx->reset && !any; g++) any = ctx->reset[g] != 0;
    if (any) { /* H is a multiple of 32 */
        const unsigned per = (unsigned)n * (unsigned)(c->H / 16);
        reset_kernel<<<dim3((per + 255) / 256, (unsigned)c->L), 256, 0, c->st>>>(n, c->H / 16, x->reset, ctx->group, ctx->g0, ctx->m0, x->Hs);
        CKL();
    }
    if ((rc = gen_noise(c, ctx->seed, ctx->epoch, err))) return rc;
    c->upd_pending = 1;
    const uint64_t se[2] = {ctx->seed, ctx->epoch};
    CK(cudaMemcpyAsync(c->seedep, se, sizeof se, cudaMemcpyHostToDevice, c->st));
    if (c->prof) {
        if ((rc = forward_parts(c, x, ctx, err))) return rc;
    } else {
        /* The forward is ~60 launches per timestep: capture it once as a CUDA
         * graph (every pointer and shape is fixed for the run; the step's seed,
         * epoch and tokens are read from device memory) and replay it. */
        if (!c->have_graph) {
            CK(cudaStreamBeginCapture(c->st, cudaStreamCaptureModeThreadLocal));
            rc = forward_parts(c, x, ctx, err);
            cudaGraph_t g;
            cudaError_t ce = cudaStreamEndCapture(c->st, &g);
            if (rc) return rc;
            CK(ce);
            c->graph = g;
            CK(cudaGraphInstantiate(&c->gexec, c->graph, 0));
            c->have_graph = 1;
        }
        CK(cudaGraphLaunch(c->gexec, c->st));
    }
    CK(cudaMemcpyAsync(scores, x->scores, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost, c->st));
    CK(cudaStreamSynchronize(c->st));
    return 0;
}

/* matrix id's update operands Lm [N][Kp] (sign * A) and Rm [K][Kp] (B) of the step's E entries: this rank's pairs
 * from the eval's noise blob where it holds this step's noise (not the embedding's: its blob has B only), the
 * others hashed */
static int upd_operands(CudaImpl *c, int id, int E, int Kp, uint64_t seed, uint32_t epoch, int8_t *Lm, int8_t *Rm, egg_err *err) {
    const egg_tensor *t = &c->m->t[id];
    const int N = t->rows, K = t->cols;
    const dim3 g((unsigned)((Kp + 255) / 256), (unsigned)((N + K + UPD_ROWS - 1) / UPD_ROWS));
    const bool blob = noise_holds(c, seed, epoch) && id != EGG_T_EMB && N % 16 == 0 && K % 16 == 0;
    upd_operands_kernel<<<g, 256, 0, c->st>>>(E, Kp, N, K, c->r, c->ukeys + (size_t)id * E, c->ek, c->es, blob ? c->noise + c->noff[id] : NULL,
                                              c->pstride, a_span(c->r, N), c->m0 / 2, c->m1 / 2, Lm, Rm);
    CKL();
    return 0;
}

/* tensor id's threshold step from its votes Z (zeroed as read), its permuted copies kept equal */
static int upd_apply(CudaImpl *c, int id, int32_t *Z, long long thr, egg_err *err) {
    const egg_tensor *t = &c->m->t[id];
    upd_apply_kernel<<<(unsigned)((t->size + 255) / 256), 256, 0, c->st>>>(t->size, Z, thr, c->params + t->off, c->changed,
                                                                           c->wp_ok[id] ? c->wperm + t->off : NULL, t->cols, wpu_of(c, id));
    CKL();
    return 0;
}

/* every matrix's threshold step in one launch: votes in Zg (zpar false) or at the parameters' offsets (Zall) */
static int upd_mapply(CudaImpl *c, int32_t *Z, bool zpar, long long thr, egg_err *err) {
    const egg_model *m = c->m;
    if (!c->mtab) {
        std::vector<int4> mt;
        std::vector<long long> mz, mp;
        c->mapply4 = env_on("EGG_CUDA_MAPPLY4");
        for (int id = 0; id < m->ntensors; id++) { /* four a thread: whole words in one row, 16-byte vote loads */
            const egg_tensor *t = &m->t[id];
            if (t->kind != EGG_T_VEC && (t->cols % 4 || t->off % 4 || (c->gZ.size() == (size_t)m->ntensors && c->gZ[id] % 4))) c->mapply4 = 0;
        }
        const size_t per = c->mapply4 ? 1024 : 256; /* parameters a block */
        int b = 0;
        for (int id = 0; id < m->ntensors; id++) {
            const egg_tensor *t = &m->t[id];
            if (t->kind == EGG_T_VEC) continue;
            mt.push_back(make_int4(b, t->rows, t->cols, (c->wperm && c->wp_ok[id] ? 1 : 0) | (wpu_of(c, id) ? 2 : 0)));
            mz.push_back(c->gZ.size() == (size_t)m->ntensors ? c->gZ[id] : 0);
            mp.push_back((long long)t->off);
            b += (int)((t->size + per - 1) / per);
        }
        c->nmat = (int)mt.size(); c->mblocks = b;
        if (!c->nmat) return 0;
        mz.insert(mz.end(), mp.begin(), mp.end());
        CK(cudaMalloc(&c->mtab, sizeof(int4) * mt.size()));
        CK(cudaMalloc(&c->mzoff, sizeof(long long) * mz.size()));
        CK(cudaMemcpy(c->mtab, mt.data(), sizeof(int4) * mt.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(c->mzoff, mz.data(), sizeof(long long) * mz.size(), cudaMemcpyHostToDevice));
    }
    if (c->mapply4)
        upd_mapply4_kernel<<<(unsigned)c->mblocks, 256, 0, c->st>>>(c->nmat, c->mtab, zpar ? c->mzoff + c->nmat : c->mzoff, c->mzoff + c->nmat, Z,
                                                                   thr, c->params, c->wperm, c->wpu, c->changed);
    else
        upd_mapply_kernel<<<(unsigned)c->mblocks, 256, 0, c->st>>>(c->nmat, c->mtab, zpar ? c->mzoff + c->nmat : c->mzoff, c->mzoff + c->nmat, Z,
                                                                  thr, c->params, c->wperm, c->wpu, c->changed);
    CKL();
    return 0;
}

#ifdef EGG_HAVE_NCCL
#define NCK(call)                                                                                                 \
    do {                                                                                                          \
        ncclResult_t r_ = (call);                                                                                 \
        if (r_ != ncclSuccess)                                                                                    \
            return egg_fail(err, EGG_ERUNTIME, "NCCL error %s at %s:%d (%s); try --exchange mpi", ncclGetErrorString(r_), \
                            __FILE__, __LINE__, #call);                                                           \
    } while (0)
#endif
/* --update allreduce: every parameter's votes Zall summed over the ranks (NCCL from device memory, else through
 * the host and vs->sum), then applied: the same steps as the replicated update's apply kernels, on Zall */
static int update_allreduce(CudaImpl *c, egg_model *m, const egg_vote_sum *vs, long long thr, egg_err *err) {
    const size_t np = m->nparams;
#ifdef EGG_HAVE_NCCL
    if (vs->ranks > 1 && c->have_comm) {
        NCK(ncclAllReduce(c->Zall, c->Zall, np, ncclInt32, ncclSum, c->comm, c->st));
    } else
#endif
    if (vs->ranks > 1) {
        if (!c->zhost) CK(cudaMallocHost((void **)&c->zhost, sizeof(int32_t) * np));
        CK(cudaMemcpyAsync(c->zhost, c->Zall, sizeof(int32_t) * np, cudaMemcpyDeviceToHost, c->st));
        CK(cudaStreamSynchronize(c->st));
        int rc = vs->sum(vs->ctx, c->zhost, np, err);
        if (rc) return rc;
        CK(cudaMemcpyAsync(c->Zall, c->zhost, sizeof(int32_t) * np, cudaMemcpyHostToDevice, c->st));
    }
    int rc = upd_mapply(c, c->Zall, true, thr, err);
    if (rc) return rc;
    for (int id = 0; id < m->ntensors && !c->vtab; id++) {
        const egg_tensor *t = &m->t[id];
        if (t->kind == EGG_T_VEC && (rc = upd_apply(c, id, c->Zall + t->off, thr, err))) return rc;
    }
    if (c->vtab) {
        upd_vapply_kernel<<<(unsigned)((c->vtot + 255) / 256), 256, 0, c->st>>>(c->vtot, c->nvec, c->vtab, c->voff, c->Zall, thr, c->params,
                                                                                 c->changed, 1);
        CKL();
    }
    return 0;
}

static int cuda_update(egg_backend *be, egg_model *m, uint64_t seed, uint32_t epoch, const int8_t *fit, int tau,
                       const egg_vote_sum *vs, egg_update_stats *stt, egg_err *err) {
    CudaImpl *c = (CudaImpl *)be->impl;
    CK(cudaSetDevice(c->dev));
    /* --update allreduce (vs): this rank's votes into Zall, indexed as the parameters; applied once summed */
    const bool ar = vs != NULL;
    if (ar && !c->Zall) { /* every parameter's votes, zero between steps (the apply kernels clear them); allocated at the first
                           * all-reduced step, since --update auto decides only once the ranks' transport is known */
        const size_t zb = sizeof(int32_t) * (m->nparams ? m->nparams : 1);
        CK(cudaMalloc(&c->Zall, zb));
        CK(cudaMemsetAsync(c->Zall, 0, zb, c->st));
    }
    if (ar && c->ugroup && !c->gzoffp) return egg_fail(err, EGG_ERUNTIME, "GPU %d: --update allreduce: the backend was created without its vote offsets", c->dev);
    const int P = c->pop / 2, r = c->r;
    if (2 * P + 1 > c->hecap) { /* the entries, page-locked: their uploads are then plain DMAs */
        if (c->hek) cudaFreeHost(c->hek);
        if (c->hes) cudaFreeHost(c->hes);
        c->hek = NULL; c->hes = NULL; c->hecap = 0;
        CK(cudaMallocHost((void **)&c->hek, sizeof(int) * (size_t)(2 * P + 1)));
        CK(cudaMallocHost((void **)&c->hes, (size_t)(2 * P + 1)));
        c->hecap = 2 * P + 1;
    }
    const int E = egg_update_entries(fit, P, c->hek, c->hes);
    if (E > c->ecap) {
        cudaFree(c->ek); cudaFree(c->es);
        c->ecap = E;
        CK(cudaMalloc(&c->ek, sizeof(int) * (size_t)E)); CK(cudaMalloc(&c->es, (size_t)E));
    }
    if (E) {
        CK(cudaMemcpyAsync(c->ek, c->hek, sizeof(int) * (size_t)E, cudaMemcpyHostToDevice, c->st));
        CK(cudaMemcpyAsync(c->es, c->hes, (size_t)E, cudaMemcpyHostToDevice, c->st));
    }
    if (E) { /* every entry's noise key of every tensor, once */
        const size_t nk = (size_t)E * m->ntensors;
        if (nk > c->ukcap) {
            cudaFree(c->ukeys);
            c->ukcap = nk;
            CK(cudaMalloc(&c->ukeys, sizeof(uint64_t) * nk));
        }
        upd_keys_kernel<<<dim3((unsigned)((E + 255) / 256), (unsigned)m->ntensors), 256, 0, c->st>>>(E, seed, epoch, c->ek, c->ukeys);
        CKL();
    }
    const long long thr = egg_vote_threshold(tau, P);
    CK(cudaMemsetAsync(c->changed, 0, sizeof(unsigned long long), c->st));
    prof_start(c);
    const int Kp = ((E * r + BK - 1) / BK) * BK > 0 ? ((E * r + BK - 1) / BK) * BK : BK;
    int grouped = 0;
    bool vfork = false;
    /* every vector tensor's votes in one launch, on stream s (beside the matrices' work where vfork) */
    auto vec_votes = [&](cudaStream_t s) {
        const bool blob = noise_holds(c, seed, epoch) && c->vnoff; /* own pairs from the blob */
        if (c->vtab4)
            upd_vecs_kernel<4><<<dim3((unsigned)((E + UPD_VEC_E - 1) / UPD_VEC_E), (unsigned)c->vyb4), VEC4_THREADS, 0, s>>>(
                E, c->nvec, c->vtab4, c->ukeys, c->es, ar ? c->Zall : c->Z, ar ? c->voff : NULL, c->ek, blob ? c->noise : NULL, c->vnoff,
                c->pstride, c->m0 / 2, c->m1 / 2);
        else
            upd_vecs_kernel<1><<<dim3((unsigned)((E + UPD_VEC_E - 1) / UPD_VEC_E), (unsigned)c->vyb), 128, 0, s>>>(
                E, c->nvec, c->vtab, c->ukeys, c->es, ar ? c->Zall : c->Z, ar ? c->voff : NULL, c->ek, blob ? c->noise : NULL, c->vnoff,
                c->pstride, c->m0 / 2, c->m1 / 2);
        return cudaGetLastError();
    };
#ifdef EGG_MMP
    if (E && c->ugroup) { /* the stacked operands where a quarter of the free memory holds them */
        const size_t need = (size_t)(c->gsumA + c->gsumB) * Kp;
        if (need > c->gcap) {
            size_t fr = 0, tot = 0;
            cudaFree(c->Lg);
            c->Lg = NULL; c->gcap = 0;
            if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && need <= fr / 4 && cudaMalloc(&c->Lg, need) == cudaSuccess) c->gcap = need;
            cudaGetLastError();
        }
        grouped = c->Lg != NULL;
    }
    /* the vector tensors' votes (hashing, ALU-bound) on a stream of their own beside the matrices' operands (memory)
     * and vote GEMM (their votes go to Zg there, the vectors' to Z or Zall at other offsets); EGG_PROFILE: in turn */
    vfork = grouped && c->vtab && !c->prof;
    if (vfork) {
        CK(cudaEventRecord(c->vev[0], c->st));
        CK(cudaStreamWaitEvent(c->ps[0], c->vev[0], 0));
        CK(vec_votes(c->ps[0]));
        CK(cudaEventRecord(c->vev[1], c->ps[0]));
    }
    if (grouped) {
        int8_t *Lg = c->Lg, *Rg = c->Lg + (size_t)c->gsumA * Kp;
        const int KT = Kp / BK;
        int tiles = 0;
        if (!c->otab) { /* the matrices' operand table, once */
            std::vector<UpdOpTab> ot;
            long long y = 0, y1 = 0;
            for (int id = 0; id < m->ntensors; id++) {
                const egg_tensor *t = &m->t[id];
                if (t->kind == EGG_T_VEC) continue;
                const bool bl = id != EGG_T_EMB && t->rows % 16 == 0 && t->cols % 16 == 0;
                ot.push_back(UpdOpTab{(int)y, t->rows, t->cols, id, (int)y1, bl ? (long long)c->noff[id] : -1, c->gA[id], c->gB[id],
                                      (long long)a_span(r, t->rows)});
                y += (t->rows + t->cols + UPD_ROWS - 1) / UPD_ROWS;
                y1 += (t->rows + t->cols + UPD_TROWS - 1) / UPD_TROWS;
            }
            c->onmat = (int)ot.size(); c->oyb = y <= 65535 ? (int)y : -1; /* grid y; else a launch per matrix */
            c->oyt = (int)y1;
            CK(cudaMalloc(&c->otab, sizeof(UpdOpTab) * (ot.size() ? ot.size() : 1)));
            CK(cudaMemcpy(c->otab, ot.data(), sizeof(UpdOpTab) * ot.size(), cudaMemcpyHostToDevice));
        }
        for (int id = 0; id < m->ntensors; id++) {
            const egg_tensor *t = &m->t[id];
            if (t->kind == EGG_T_VEC) continue;
            const int N = t->rows, K = t->cols;
            tiles += ((N + BM - 1) / BM) * ((K + BN - 1) / BN);
            int rc = c->oyb > 0 ? 0 : upd_operands(c, id, E, Kp, seed, epoch, Lg + (size_t)c->gA[id] * Kp, Rg + (size_t)c->gB[id] * Kp, err);
            if (rc) return rc;
        }
        if (c->oyb > 0) {
            const bool blob = noise_holds(c, seed, epoch);
            const dim3 g4((unsigned)((Kp + 1023) / 1024), (unsigned)c->oyb);
            const dim3 gt((unsigned)((Kp + 127) / 128), (unsigned)c->oyt);
            if (r == 1 && c->ops4 == 2)
                upd_operands_t_kernel<1><<<gt, 256, 0, c->st>>>(c->onmat, c->otab, E, Kp, 1, c->ukeys, c->ek, c->es, blob ? c->noise : NULL,
                                                                c->pstride, c->m0 / 2, c->m1 / 2, Lg, Rg);
            else if (c->ops4 == 2)
                upd_operands_t_kernel<0><<<gt, 256, 0, c->st>>>(c->onmat, c->otab, E, Kp, r, c->ukeys, c->ek, c->es, blob ? c->noise : NULL,
                                                                c->pstride, c->m0 / 2, c->m1 / 2, Lg, Rg);
            else if (r == 1 && c->ops4)
                upd_operands4_kernel<1><<<g4, 256, 0, c->st>>>(c->onmat, c->otab, E, Kp, 1, c->ukeys, c->ek, c->es, blob ? c->noise : NULL,
                                                               c->pstride, c->m0 / 2, c->m1 / 2, Lg, Rg);
            else if (c->ops4)
                upd_operands4_kernel<0><<<g4, 256, 0, c->st>>>(c->onmat, c->otab, E, Kp, r, c->ukeys, c->ek, c->es, blob ? c->noise : NULL,
                                                               c->pstride, c->m0 / 2, c->m1 / 2, Lg, Rg);
            else
                upd_operands_all_kernel<<<dim3((unsigned)((Kp + 255) / 256), (unsigned)c->oyb), 256, 0, c->st>>>(
                    c->onmat, c->otab, E, Kp, r, c->ukeys, c->ek, c->es, blob ? c->noise : NULL, c->pstride, c->m0 / 2,
                    c->m1 / 2, Lg, Rg);
            CKL();
        }
        prof_mark(c, P_UPD_OP);
        /* the work list: every matrix's 128 x 128 tiles, K in pieces so that the CTAs each take ~8 items */
        const int pieces = (8 * c->mmw_ctas + tiles - 1) / tiles, per = (KT + pieces - 1) / pieces;
        std::vector<int4> items;
        for (int id = 0; id < m->ntensors; id++) {
            const egg_tensor *t = &m->t[id];
            if (t->kind == EGG_T_VEC) continue;
            for (int kz = 0; kz * per < KT; kz++)
                for (int mi = 0; mi * BM < t->rows; mi++)
                    for (int ni = 0; ni * BN < t->cols; ni++) items.push_back(make_int4(c->gA[id] + mi * BM, c->gB[id] + ni * BN, id, kz * per));
        }
        if ((int)items.size() > c->gicap) {
            cudaFree(c->gitems);
            c->gicap = (int)items.size();
            CK(cudaMalloc(&c->gitems, sizeof(int4) * items.size()));
        }
        CK(cudaMemcpyAsync(c->gitems, items.data(), sizeof(int4) * items.size(), cudaMemcpyHostToDevice, c->st));
        MMArgs a;
        memset(&a, 0, sizeof a);
        a.X = Lg; a.ldx = Kp; a.W = Rg; a.ldw = Kp; a.M = c->gsumA; a.N = c->gsumB; a.K = Kp; a.Z = c->Zg;
        a.mtn = a.ntn = 1; a.ksplit = per * BK; a.tma = 1;
        a.items = c->gitems; a.nitems = (int)items.size(); a.gtab = c->gtab; a.gzoff = ar ? c->gzoffp : c->gzoff;
        if (ar) a.Z = c->Zall;
        CUtensorMap tmx, tmw;
        memset(&tmx, 0, sizeof tmx);
        memset(&tmw, 0, sizeof tmw);
        if (!tmap_2d(c->tmap_encode, &tmx, Lg, Kp, c->gsumA, Kp, BM) || !tmap_2d(c->tmap_encode, &tmw, Rg, Kp, c->gsumB, Kp, BN))
            return egg_fail(err, EGG_ERUNTIME, "GPU %d: could not describe the update's operands to TMA", c->dev);
        const int nw = a.nitems < c->mmw_ctas ? a.nitems : c->mmw_ctas;
        mmw_kernel<MODE_UPDATE, 0><<<nw, WS_THREADS, mmw_smem_bytes(), c->st>>>(a, tmx, tmw, tmx, tmx);
        CKL();
        if (!ar) {
            int rc = upd_mapply(c, c->Zg, false, thr, err);
            if (rc) return rc;
        }
        prof_mark(c, P_UPD_MM);
    }
#endif
    if (vfork) CK(cudaStreamWaitEvent(c->st, c->vev[1], 0));
    if (E && c->vtab) { /* every vector tensor in one launch */
        if (!vfork) CK(vec_votes(c->st));
        if (!ar) {
            upd_vapply_kernel<<<(unsigned)((c->vtot + 255) / 256), 256, 0, c->st>>>(c->vtot, c->nvec, c->vtab, c->voff, c->Z, thr, c->params,
                                                                                     c->changed, 0);
            CKL();
        }
        prof_mark(c, P_UPD_VEC);
    }
    for (int id = 0; id < m->ntensors; id++) {
        const egg_tensor *t = &m->t[id];
        if (!E) break;
        if (grouped && t->kind != EGG_T_VEC) continue; /* done above */
        if (c->vtab && t->kind == EGG_T_VEC) continue; /* done above */

        int32_t *Zt = ar ? c->Zall + t->off : c->Z;
        if (t->kind == EGG_T_VEC) {
            dim3 g((unsigned)((E + UPD_VEC_E - 1) / UPD_VEC_E), (unsigned)((t->rows + 127) / 128));
            upd_vec_kernel<<<g, 128, 0, c->st>>>(E, t->rows, c->ukeys + (size_t)id * E, c->es, Zt);
            CKL();
        } else {
            const int N = t->rows, K = t->cols;
            size_t need = (size_t)(N + K) * Kp;
            if (need > c->upd_cap) {
                cudaFree(c->Lm);
                c->upd_cap = need;
                CK(cudaMalloc(&c->Lm, need));
            }
            c->Rm = c->Lm + (size_t)N * Kp;
            int rc = upd_operands(c, id, E, Kp, seed, epoch, c->Lm, c->Rm, err);
            if (rc) return rc;
            prof_mark(c, P_UPD_OP);
            MMArgs a;
            memset(&a, 0, sizeof a);
            a.X = c->Lm; a.ldx = Kp; a.W = c->Rm; a.ldw = Kp; a.M = N; a.N = K; a.K = Kp; a.Z = Zt;
            if ((rc = launch_mm(c, MODE_UPDATE, a, err))) return rc;
        }
        if (ar) continue; /* applied once summed */
        int rc = upd_apply(c, id, c->Z, thr, err);
        if (rc) return rc;
        prof_mark(c, t->kind == EGG_T_VEC ? P_UPD_VEC : P_UPD_MM);
    }
    if (ar) {
        int rc = update_allreduce(c, m, vs, thr, err);
        if (rc) return rc;
        prof_mark(c, P_UPD_MM);
    }
    /* the copies back on the copy stream, so that a held prefetch's noise runs on st beside them */
    CK(cudaEventRecord(c->uev0, c->st));
    CK(cudaStreamWaitEvent(c->cs, c->uev0, 0));
    CK(cudaMemcpyAsync(c->hch, c->changed, sizeof *c->hch, cudaMemcpyDeviceToHost, c->cs));
    CK(cudaMemcpyAsync(m->params, c->params, m->nparams, cudaMemcpyDeviceToHost, c->cs));
    CK(cudaEventRecord(c->uev, c->cs));
    c->upd_pending = 0;
    if (c->pf_valid) {
        c->pf_valid = 0;
        int rc = gen_noise(c, c->pf_seed, c->pf_epoch, err);
        if (rc) return rc;
    }
    CK(cudaEventSynchronize(c->uev));
    stt->changed = (int64_t)*c->hch;
    return 0;
}

/* bytes the chunked activations may take: a quarter of what is free, at most 12 GB (EGG-256x6 at 32768 members: its
 * 100 timesteps in one chunk, 8.4 GB; 6 GB had made two, 1.3% slower) */
static size_t chunk_budget(void) {
    size_t fr = 0, total = 0;
    if (cudaMemGetInfo(&fr, &total) != cudaSuccess) return (size_t)256 << 20;
    size_t b = fr / 4, cap = (size_t)12 << 30;
    return b < cap ? b : cap;
}
static int ensure_ctx(CudaImpl *c, Ctx *x, int n, int rowlen, egg_err *err) {
    if (x->n >= n && x->X) return 0;
    if (x->X) ctx_free(x);
    return ctx_alloc(x, n, ctx_chunk(n, c->H, c->V, rowlen - 1, chunk_budget()), c->H, c->L, c->V, n, rowlen, err);
}

static int cuda_eval_clean(egg_backend *be, int n, int len, const int32_t *tokens, int32_t *scores, egg_err *err) {
    CudaImpl *c = (CudaImpl *)be->impl;
    CK(cudaSetDevice(c->dev));
    int rc;
    if ((rc = ensure_ctx(c, &c->val, n, len + 1, err))) return rc;
    Ctx x = c->val;
    x.n = n;
    if ((rc = upload_tokens(c, &c->val, tokens, (size_t)n * (len + 1), NULL, 0, err))) return rc;
    x.tokens = c->val.tokens;
    CK(cudaMemsetAsync(x.Hs, 0, (size_t)c->L * c->val.n * c->H, c->st));
    if ((rc = forward(c, &x, 0, len, 1, 0, 0, err))) return rc;
    CK(cudaMemcpyAsync(scores, x.scores, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost, c->st));
    CK(cudaStreamSynchronize(c->st));
    return 0;
}

static int cuda_sample_step(egg_backend *be, int token, int reset, int8_t *logits, egg_err *err) {
    CudaImpl *c = (CudaImpl *)be->impl;
    CK(cudaSetDevice(c->dev));
    int rc;
    if ((rc = ensure_ctx(c, &c->samp, 1, 2, err))) return rc;
    if (reset) CK(cudaMemsetAsync(c->samp.Hs, 0, (size_t)c->L * c->H, c->st));
    int32_t row[2] = {token, 0};
    if ((rc = upload_tokens(c, &c->samp, row, 2, NULL, 0, err))) return rc;
    if ((rc = forward(c, &c->samp, 0, 1, 1, 0, 0, err))) return rc;
    CK(cudaMemcpyAsync(logits, c->samp.logits, (size_t)c->V, cudaMemcpyDeviceToHost, c->st));
    CK(cudaStreamSynchronize(c->st));
    return 0;
}

/* host state layout [member][L][H] <-> device [L][member][H] */
static int cuda_get_state(egg_backend *be, int8_t *dst, egg_err *err) {
    CudaImpl *c = (CudaImpl *)be->impl;
    CK(cudaSetDevice(c->dev));
    const int n = c->m1 - c->m0, H = c->H, L = c->L;
    for (int l = 0; l < L; l++)
        CK(cudaMemcpy2D(dst + (size_t)l * H, (size_t)L * H, c->train.Hs + (size_t)l * n * H, (size_t)H, (size_t)H, (size_t)n,
                        cudaMemcpyDeviceToHost));
    return 0;
}
static int cuda_set_state(egg_backend *be, const int8_t *src, egg_err *err) {
    CudaImpl *c = (CudaImpl *)be->impl;
    CK(cudaSetDevice(c->dev));
    const int n = c->m1 - c->m0, H = c->H, L = c->L;
    for (int l = 0; l < L; l++)
        CK(cudaMemcpy2D(c->train.Hs + (size_t)l * n * H, (size_t)H, src + (size_t)l * H, (size_t)L * H, (size_t)H, (size_t)n,
                        cudaMemcpyHostToDevice));
    return 0;
}
/* the permuted copies of the matrices the forward's mmw GEMMs read (rows a multiple of 128, 16-byte rows), and W_up's
 * second one for the fused MLP (wpu), from params */
static int wperm_fill(CudaImpl *c, egg_err *err) {
    if (!c->wperm) return 0;
    for (int id = 0; id < c->m->ntensors; id++) {
        const egg_tensor *t = &c->m->t[id];
        if (!c->wp_ok[id]) continue;
        wperm_kernel<<<(unsigned)((t->size + 255) / 256), 256, 0, c->st>>>(t->size, t->cols, c->params + t->off, c->wperm + t->off, 0);
        CKL();
        if (int8_t *u = wpu_of(c, id)) {
            wperm_kernel<<<(unsigned)((t->size + 255) / 256), 256, 0, c->st>>>(t->size, t->cols, c->params + t->off, u, 1);
            CKL();
        }
    }
    CK(cudaStreamSynchronize(c->st));
    return 0;
}
static int cuda_set_params(egg_backend *be, const egg_model *m, egg_err *err) {
    CudaImpl *c = (CudaImpl *)be->impl;
    CK(cudaSetDevice(c->dev));
    CK(cudaMemcpy(c->params, m->params, m->nparams, cudaMemcpyHostToDevice));
    return wperm_fill(c, err);
}
#ifdef EGG_HAVE_NCCL
/* per-pair value of the last eval: sign of score(2k) - score(2k+1), or the difference */
__global__ void pair_values_kernel(int pairs, int maxc, int norm, const int32_t *scores, int32_t *out) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= maxc) return;
    int32_t d = k < pairs ? scores[2 * k] - scores[2 * k + 1] : 0;
    out[k] = norm ? d : (d > 0) - (d < 0);
}
static int cuda_nccl_init(egg_backend *be, int rank, int world, const unsigned char *uid, egg_err *err) {
    CudaImpl *c = (CudaImpl *)be->impl;
    CK(cudaSetDevice(c->dev));
    ncclUniqueId id;
    memcpy(&id, uid, sizeof id);
    NCK(ncclCommInitRank(&c->comm, world, id, rank));
    c->have_comm = 1;
    return 0;
}
static int cuda_nccl_allgather(egg_backend *be, int norm, int pairs_local, int maxc, int32_t *all, egg_err *err) {
    CudaImpl *c = (CudaImpl *)be->impl;
    CK(cudaSetDevice(c->dev));
    int world = 0;
    NCK(ncclCommCount(c->comm, &world));
    if (maxc > c->xcap) {
        cudaFree(c->xsend); cudaFree(c->xrecv);
        c->xcap = maxc;
        CK(cudaMalloc(&c->xsend, sizeof(int32_t) * (size_t)maxc));
        CK(cudaMalloc(&c->xrecv, sizeof(int32_t) * (size_t)maxc * world));
    }
    pair_values_kernel<<<(maxc + 255) / 256, 256, 0, c->st>>>(pairs_local, maxc, norm, c->train.scores, c->xsend);
    CKL();
    NCK(ncclAllGather(c->xsend, c->xrecv, (size_t)maxc, ncclInt32, c->comm, c->st));
    CK(cudaMemcpyAsync(all, c->xrecv, sizeof(int32_t) * (size_t)maxc * world, cudaMemcpyDeviceToHost, c->st));
    CK(cudaStreamSynchronize(c->st));
    return 0;
}
extern "C" int egg_cuda_nccl_uid(unsigned char *uid128) {
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) return -1;
    memcpy(uid128, &id, sizeof id);
    return 0;
}
#else
extern "C" int egg_cuda_nccl_uid(unsigned char *uid128) { (void)uid128; return -1; }
#endif

static void *cuda_host_alloc(egg_backend *be, size_t bytes) {
    CudaImpl *c = (CudaImpl *)be->impl;
    void *p = NULL;
    if (cudaSetDevice(c->dev) != cudaSuccess || cudaMallocHost(&p, bytes) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return p;
}
static void cuda_host_free(egg_backend *be, void *p) {
    (void)be;
    if (p) cudaFreeHost(p);
}

static void cuda_destroy(egg_backend *be) {
    CudaImpl *c = (CudaImpl *)be->impl;
    if (!c) return;
    cudaSetDevice(c->dev);
    if (c->prof) {
        double tot = 0;
        for (int i = 0; i < P_N; i++) tot += c->pt[i];
        fprintf(stderr, "egg: " EGG_GPU_NAME " profile (EGG_PROFILE, synchronised per launch):\n");
        for (int i = 0; i < P_N; i++)
            if (c->pn[i])
                fprintf(stderr, "  %-16s %9.3f ms total %6.1f%% %8lld launches %8.1f us each\n", pname[i], c->pt[i] * 1e3,
                        100 * c->pt[i] / tot, c->pn[i], c->pt[i] * 1e6 / c->pn[i]);
    }
    if (c->train.X) ctx_free(&c->train);
    if (c->val.X) ctx_free(&c->val);
    if (c->samp.X) ctx_free(&c->samp);
    cudaFree(c->ukeys); cudaFree(c->Lg); cudaFree(c->Zg); cudaFree(c->Zall); cudaFree(c->gzoffp); if (c->zhost) cudaFreeHost(c->zhost); cudaFree(c->gitems); cudaFree(c->gtab); cudaFree(c->gzoff); cudaFree(c->mtab); cudaFree(c->mzoff); cudaFree(c->otab);
    cudaFree(c->params); cudaFree(c->wperm); cudaFree(c->wpu); cudaFree(c->noise); cudaFree(c->lnp); cudaFree(c->ekeys); cudaFree(c->Lm); cudaFree(c->Z); cudaFree(c->ek); cudaFree(c->es); cudaFree(c->changed);
#ifdef EGG_HAVE_NCCL
    if (c->have_comm) ncclCommDestroy(c->comm);
    cudaFree(c->xsend); cudaFree(c->xrecv);
#endif
    if (c->have_graph) { cudaGraphExecDestroy(c->gexec); cudaGraphDestroy(c->graph); }
    cudaFree(c->seedep);
    cudaStreamDestroy(c->st);
    if (c->cs) cudaStreamDestroy(c->cs);
    cudaFree(c->vtab); cudaFree(c->vtab4); cudaFree(c->voff); cudaFree(c->vnoff); cudaFree(c->ntab); cudaFree(c->lnpo);
    if (c->pinned_params) cudaHostUnregister(c->pinned_params);
    if (c->up) cudaEventDestroy(c->up);
    for (int i = 0; i < EGG_PARTS_MAX; i++)
        if (c->ps[i]) cudaStreamDestroy(c->ps[i]);
    for (int i = 0; i <= EGG_PARTS_MAX; i++)
        if (c->pev[i]) cudaEventDestroy(c->pev[i]);
    for (int i = 0; i < 2; i++)
        if (c->vev[i]) cudaEventDestroy(c->vev[i]);
    if (c->uev0) cudaEventDestroy(c->uev0);
    if (c->uev) cudaEventDestroy(c->uev);
    if (c->hek) cudaFreeHost(c->hek);
    if (c->hes) cudaFreeHost(c->hes);
    if (c->hch) cudaFreeHost(c->hch);
    delete c;
    be->impl = NULL;
}

/* the int8 rate of an n^3 GEMM that go() launches (go false: it failed): one untimed warm-up, then 10 runs between
 * two events; 0 where a run fails or an error is pending. The --bench peaks (egg_cuda_mma_peak_tops, _blas_) */
template <typename F> static double gemm_tops(int n, F go) {
    const int reps = 10;
    bool ok = go();
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    cudaEventRecord(e0);
    for (int i = 0; i < reps && ok; i++) ok = go();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    cudaEventDestroy(e0); cudaEventDestroy(e1);
    if (!ok || cudaGetLastError() != cudaSuccess || ms <= 0) return 0;
    return 2.0 * n * (double)n * n * reps / (ms * 1e-3) / 1e12;
}

/* A plain int8 GEMM (r = 0, 8192^3) timed on the device: the "measured MMA peak"
 * that --bench reports its int8 rate against. It is the fastest GEMM this binary
 * has for the GPU: the persistent wgmma kernel on an sm_90a build (its tiles by TMA
 * as in training, unless EGG_CUDA_TMA=0), else mm_kernel. */
extern "C" double egg_cuda_mma_peak_tops(int dev) {
    const int n = 8192;
    int8_t *x = NULL, *w = NULL, *y = NULL;
    int *probe = NULL;
    if (cudaSetDevice(dev) != cudaSuccess || cudaMalloc(&x, (size_t)n * n) != cudaSuccess ||
        cudaMalloc(&w, (size_t)n * n) != cudaSuccess || cudaMalloc(&y, (size_t)n * n) != cudaSuccess ||
        cudaMalloc(&probe, sizeof(int)) != cudaSuccess) {
        cudaFree(x); cudaFree(w); cudaFree(y); cudaFree(probe); cudaGetLastError();
        return 0;
    }
    cudaMemset(x, 3, (size_t)n * n); /* not zeros: avoid data-dependent fast paths */
    cudaMemset(w, 5, (size_t)n * n);
    cudaMemset(probe, 0, sizeof(int));
#ifdef EGG_MMP
    int have = 0;
    wgmma_probe<<<1, 1>>>(probe);
    cudaMemcpy(&have, probe, sizeof(int), cudaMemcpyDeviceToHost);
#endif
    MMArgs a;
    memset(&a, 0, sizeof a);
    a.X = x; a.ldx = n; a.W = w; a.ldw = n; a.M = n; a.N = n; a.K = n; a.s = 10; a.Y = y; a.ldy = n;
    a.mtn = n / BM; a.ntn = n / BN;
    dim3 grid((n / BM) * (n / BN));
    int smem = (int)mm_smem_bytes(0);
    cudaFuncSetAttribute(mm_kernel<MODE_PLAIN>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)mm_smem_bytes(GPU_RMAX));
#ifdef EGG_MMP
    if (have) {
        smem = mmp_smem_bytes();
        cudaFuncSetAttribute(mmp_kernel<MODE_PLAIN, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        int occ = 0, nsm = 0;
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, mmp_kernel<MODE_PLAIN, 0>, NTHREADS, smem);
        cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev);
        grid = dim3((unsigned)((occ > 0 ? occ : 1) * nsm));
    }
#endif
#ifdef EGG_MMP
    CUtensorMap tmx, tmw;
    memset(&tmx, 0, sizeof tmx);
    memset(&tmw, 0, sizeof tmw);
    if (have && env_on("EGG_CUDA_TMA")) {
        PFN_cuTensorMapEncodeTiled_v12000 enc = tmap_encoder();
        a.tma = enc && tmap_2d(enc, &tmx, x, n, n, n, BM) && tmap_2d(enc, &tmw, w, n, n, n, BN);
    }
#endif
    const double tops = gemm_tops(n, [&]() {
#ifdef EGG_MMP
        if (have) {
            mmp_kernel<MODE_PLAIN, 0><<<grid, NTHREADS, smem>>>(a, tmx, tmw, tmx, tmx);
            return true;
        }
#endif
        mm_kernel<MODE_PLAIN><<<grid, NTHREADS, smem>>>(a);
        return true;
    });
    cudaFree(x); cudaFree(w); cudaFree(y); cudaFree(probe);
    return tops;
}

/* The same 8192^3 int8 GEMM by cuBLAS (cublasGemmEx: int8 in, int32 out, A transposed, the layout its int8 kernels
 * take), timed the same way (gemm_tops): the vendor's rate that --bench also reports the training's int8 rate against, where the
 * persistent kernel above measures this code's own. cuBLAS is loaded at run time (dlopen), so that egg_mgpu builds and
 * runs without it; 0 where it is not found, a symbol or the device memory is missing, or the GEMM fails, with why in
 * *why (and with EGG_CUDA_BLAS=0, which tests that path). The HIP build has no rocBLAS counterpart: 0. */
#if !defined(__HIPCC__)
namespace blas_ref { /* the few cuBLAS names this needs, by their values in cublas_api.h (CUDA 12 and 13) */
typedef int (*create_fn)(void **);
typedef int (*destroy_fn)(void *);
typedef int (*gemm_ex_fn)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int, const void *, void *, int, int,
                          int, int);
enum { OP_N = 0, OP_T = 1, COMPUTE_32I = 72, GEMM_DEFAULT = -1 };
} // namespace blas_ref
#if __has_include(<cublas_api.h>)
#include <cublas_api.h>
static_assert((int)blas_ref::OP_N == (int)CUBLAS_OP_N && (int)blas_ref::OP_T == (int)CUBLAS_OP_T &&
                  (int)blas_ref::COMPUTE_32I == (int)CUBLAS_COMPUTE_32I && (int)blas_ref::GEMM_DEFAULT == (int)CUBLAS_GEMM_DEFAULT,
              "cuBLAS's enum values");
#endif
#endif
extern "C" double egg_cuda_blas_peak_tops(int dev, const char **why) {
    *why = "no cuBLAS in the HIP build";
#if !defined(__HIPCC__)
    *why = "EGG_CUDA_BLAS=0";
    if (!env_on("EGG_CUDA_BLAS")) return 0;
    static void *lib = NULL; /* loaded once, kept: cuBLAS is not unloaded while the process runs */
    if (!lib) {
        const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so"};
        for (const char *nm : names)
            if (!lib) lib = dlopen(nm, RTLD_NOW | RTLD_LOCAL);
    }
    *why = "libcublas.so not found (LD_LIBRARY_PATH)";
    if (!lib) return 0;
    const auto create = (blas_ref::create_fn)dlsym(lib, "cublasCreate_v2");
    const auto destroy = (blas_ref::destroy_fn)dlsym(lib, "cublasDestroy_v2");
    const auto gemm = (blas_ref::gemm_ex_fn)dlsym(lib, "cublasGemmEx");
    *why = "libcublas.so lacks cublasCreate_v2, cublasDestroy_v2 or cublasGemmEx";
    if (!create || !destroy || !gemm) return 0;
    const int n = 8192;
    int8_t *a = NULL, *b = NULL;
    int32_t *c = NULL;
    void *h = NULL;
    *why = "no device memory for its 384 MB";
    if (cudaSetDevice(dev) != cudaSuccess || cudaMalloc(&a, (size_t)n * n) != cudaSuccess || cudaMalloc(&b, (size_t)n * n) != cudaSuccess ||
        cudaMalloc(&c, (size_t)n * n * sizeof(int32_t)) != cudaSuccess) {
        cudaFree(a); cudaFree(b); cudaFree(c); cudaGetLastError();
        return 0;
    }
    cudaMemset(a, 3, (size_t)n * n); /* the operands of egg_cuda_mma_peak_tops */
    cudaMemset(b, 5, (size_t)n * n);
    double tops = 0;
    *why = "cublasCreate failed";
    if (create(&h) == 0) {
        const int32_t alpha = 1, beta = 0;
        tops = gemm_tops(n, [&]() {
            return gemm(h, blas_ref::OP_T, blas_ref::OP_N, n, n, n, &alpha, a, CUDA_R_8I, n, b, CUDA_R_8I, n, &beta, c, CUDA_R_32I, n,
                        blas_ref::COMPUTE_32I, blas_ref::GEMM_DEFAULT) == 0;
        });
        *why = "cublasGemmEx failed";
        destroy(h);
    }
    cudaFree(a); cudaFree(b); cudaFree(c); cudaGetLastError();
    if (tops > 0) *why = "";
    return tops;
#else
    (void)dev;
    return 0;
#endif
}

extern "C" int egg_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) { cudaGetLastError(); return 0; }
    return n;
}

extern "C" int egg_backend_cuda_create(egg_backend *be, const egg_config *cfg, const egg_model *m, int m0, int m1, int dev,
                                       egg_err *err) {
    if (cfg->rank > GPU_RMAX)
        return egg_fail(err, EGG_EINPUT, "--rank %d: the " EGG_GPU_NAME " backend supports rank 1..%d (use --backend cpu for more)", cfg->rank, GPU_RMAX);
    CK(cudaSetDevice(dev));
    CudaImpl *c = new CudaImpl();
    c->m = m; c->V = m->V; c->H = m->H; c->L = m->L; c->r = cfg->rank; c->pshift = 4 + cfg->sigma_shift;
    c->pop = cfg->pop; c->group = cfg->group; c->m0 = m0; c->m1 = m1; c->dev = dev;
    c->prof = getenv("EGG_PROFILE") && atoi(getenv("EGG_PROFILE")) > 0;
    c->noff.resize((size_t)m->ntensors);
    c->wp_ok.assign((size_t)m->ntensors, 0);
    size_t off = 0;
    for (int id = 0; id < m->ntensors; id++) {
        const egg_tensor *t = &m->t[id];
        c->noff[(size_t)id] = off;
        if (t->kind == EGG_T_VEC) off += 2 * (size_t)t->rows;
        else if (id == EGG_T_EMB) off += (size_t)c->r * t->cols;
        else off += a_span(c->r, t->rows) + (size_t)c->r * t->cols;
        off = (off + 63) & ~(size_t)63;
    }
    c->pstride = off;
    const int n = m1 - m0, np = n / 2;
    const int ngroups = n > 0 ? (m1 - 1) / cfg->group - m0 / cfg->group + 1 : 1;
    /* memory plan: say what to reduce when it does not fit */
    size_t fr = 0, total = 0;
    CK(cudaMemGetInfo(&fr, &total));
    const int tc = ctx_chunk(n, m->H, m->V, cfg->seq, chunk_budget());
    /* params and their two permuted copies (wperm, wpu), the noise blob, states, the chunk's activations, the largest
     * update operands, the update's votes of every matrix (int32; --update allreduce: of every parameter too) and
     * its noise keys (up to 2 entries a pair, every tensor) */
    size_t need = 3 * m->nparams + (size_t)np * c->pstride + (size_t)n * m->H * (2 + (size_t)m->L) + (size_t)tc * ctx_step_bytes(n, m->H, m->V) +
                  (size_t)(m->H * 5 + m->V) * (size_t)(cfg->pop / 2 * cfg->rank * 2 + 32) + 4 * m->nparams +
                  (cfg->update != EGG_UPD_REPLICATED ? 4 * m->nparams : 0) +
                  sizeof(uint64_t) * (size_t)m->ntensors * (size_t)cfg->pop + ((size_t)64 << 20);
    if (need > fr) {
        delete c;
        return egg_fail(err, EGG_EINPUT, "GPU %d: this config needs about %.1f GB of device memory but %.1f GB are free; lower --pop (members per GPU) or --hidden/--seq, or use more ranks",
                        dev, need / 1e9, fr / 1e9);
    }
    CK(cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&c->cs, cudaStreamNonBlocking));
    CK(cudaEventCreate(&c->up));
    for (int i = 0; i < EGG_PARTS_MAX; i++) CK(cudaStreamCreateWithFlags(&c->ps[i], cudaStreamNonBlocking));
    for (int i = 0; i <= EGG_PARTS_MAX; i++) CK(cudaEventCreate(&c->pev[i]));
    for (int i = 0; i < 2; i++) CK(cudaEventCreate(&c->vev[i]));
    CK(cudaEventCreate(&c->uev0));
    CK(cudaMallocHost((void **)&c->hch, sizeof *c->hch));
    CK(cudaEventCreate(&c->uev));
    c->parts_env = getenv("EGG_CUDA_PARTS") ? atoi(getenv("EGG_CUDA_PARTS")) : -1;
    c->noisew = env_on("EGG_CUDA_NOISEW");
    c->ops4 = getenv("EGG_CUDA_OPS4") ? atoi(getenv("EGG_CUDA_OPS4")) : 2;
    c->ops4 = c->ops4 < 0 ? 0 : c->ops4 > 2 ? 2 : c->ops4;
    c->embln = env_on("EGG_CUDA_EMBLN");
    c->lnwalk = env_on("EGG_CUDA_LNWALK");
    c->embwalk = env_on("EGG_CUDA_EMBWALK");
    c->lossrs = env_on("EGG_CUDA_LOSSRS");
    CK(cudaMalloc(&c->params, m->nparams));
    CK(cudaMemcpy(c->params, m->params, m->nparams, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&c->noise, (size_t)(np > 0 ? np : 1) * c->pstride));
    { /* noise_kernel's table: the tensors' shapes and blob offsets */
        std::vector<NoiseTab> tab((size_t)m->ntensors);
        for (int id = 0; id < m->ntensors; id++)
            tab[(size_t)id] = NoiseTab{m->t[id].kind, m->t[id].rows, m->t[id].cols, id == EGG_T_EMB, (unsigned long long)c->noff[id]};
        CK(cudaMalloc(&c->ntab, sizeof(NoiseTab) * tab.size()));
        CK(cudaMemcpy(c->ntab, tab.data(), sizeof(NoiseTab) * tab.size(), cudaMemcpyHostToDevice));
    }
    CK(cudaMalloc(&c->ekeys, sizeof(uint64_t) * (size_t)(np > 0 ? np : 1)));
    {   /* the perturbed LN weights where they take at most an eighth of what the plan leaves free (EGG_CUDA_LNPERT=0: off) */
        const size_t lb = (size_t)(4 * m->L + 1) * (size_t)n * m->H;
        c->lnp = NULL;
        c->ln2_fuse = env_on("EGG_CUDA_LN2FUSE");
        if (n > 0 && m->H % 4 == 0 && env_on("EGG_CUDA_LNPERT") && lb <= (fr - need) / 8) CK(cudaMalloc(&c->lnp, lb));
        if (c->lnp) { /* lnpert_kernel's table: vector v's tensor (LN1, LN2 of each layer, the output LN, then each
                       * layer's bf, bh) at params + .x, its noise at + .y in a pair's blob */
            const int L = m->L;
            std::vector<longlong2> po((size_t)(4 * L + 1));
            for (int v = 0; v <= 4 * L; v++) {
                const int id = v == 2 * L ? EGG_T_LNOUT(L)
                             : v < 2 * L  ? EGG_T_LAYER(v / 2, 0) + (v & 1 ? EGG_L_LN2 : EGG_L_LN1)
                                          : EGG_T_LAYER((v - 2 * L - 1) / 2, 0) + ((v - 2 * L - 1) & 1 ? EGG_L_BH : EGG_L_BF);
                po[(size_t)v] = make_longlong2((long long)m->t[id].off, (long long)c->noff[id]);
            }
            CK(cudaMalloc(&c->lnpo, sizeof(longlong2) * po.size()));
            CK(cudaMemcpy(c->lnpo, po.data(), sizeof(longlong2) * po.size(), cudaMemcpyHostToDevice));
        }
    }
    CK(cudaMalloc(&c->changed, sizeof(unsigned long long)));
    CK(cudaMalloc(&c->seedep, 2 * sizeof(uint64_t)));
    int rc = ctx_alloc(&c->train, n > 0 ? n : 1, tc, m->H, m->L, m->V, ngroups, cfg->seq + 1, err);
    if (rc) { delete c; return rc; }
    c->train.n = n;
    c->smem = (int)mm_smem_bytes(c->r);
    {
        size_t zmax = 0;
        for (int id = 0; id < m->ntensors; id++) if (m->t[id].size > zmax) zmax = m->t[id].size;
        /* the vector tensors' update in one launch (EGG_CUDA_UGROUP=0: a launch per vector, as per matrix) */
        const bool ug = env_on("EGG_CUDA_UGROUP");
        std::vector<int4> vt, vt4;
        std::vector<long long> vo, vn;
        int zo = 0, yb = 0, yb4 = 0;
        bool v4 = env_on("EGG_CUDA_VEC4") && c->pstride % 4 == 0; /* upd_vecs_kernel<4>: word loads and word-aligned votes */
        for (int id = 0; id < m->ntensors && ug; id++) {
            const egg_tensor *t = &m->t[id];
            if (t->kind != EGG_T_VEC) continue;
            if (t->rows % 4 || t->off % 4 || c->noff[id] % 4) v4 = false;
            vt.push_back(make_int4(zo, t->rows, yb, id));
            vt4.push_back(make_int4(zo, t->rows, yb4, id));
            vo.push_back((long long)t->off);
            vn.push_back((long long)c->noff[id]);
            zo += t->rows;
            yb += (t->rows + 127) / 128;
            yb4 += (t->rows + 4 * VEC4_THREADS - 1) / (4 * VEC4_THREADS);
        }
        if (!vt.empty()) {
            if ((size_t)zo > zmax) zmax = (size_t)zo;
            CK(cudaMalloc(&c->vtab, sizeof(int4) * vt.size()));
            CK(cudaMalloc(&c->voff, sizeof(long long) * vo.size()));
            CK(cudaMemcpy(c->vtab, vt.data(), sizeof(int4) * vt.size(), cudaMemcpyHostToDevice));
            CK(cudaMemcpy(c->voff, vo.data(), sizeof(long long) * vo.size(), cudaMemcpyHostToDevice));
            CK(cudaMalloc(&c->vnoff, sizeof(long long) * vn.size()));
            CK(cudaMemcpy(c->vnoff, vn.data(), sizeof(long long) * vn.size(), cudaMemcpyHostToDevice));
            c->nvec = (int)vt.size(); c->vtot = zo; c->vyb = yb;
            if (v4) {
                CK(cudaMalloc(&c->vtab4, sizeof(int4) * vt4.size()));
                CK(cudaMemcpy(c->vtab4, vt4.data(), sizeof(int4) * vt4.size(), cudaMemcpyHostToDevice));
                c->vyb4 = yb4;
            }
        }
        CK(cudaMalloc(&c->Z, sizeof(int32_t) * zmax));
        CK(cudaMemset(c->Z, 0, sizeof(int32_t) * zmax));
    }
    /* the host model's parameters page-locked: the update copies them back every step (4.9 MB at EGG-256x6) */
    if (m->nparams > 0 && cudaHostRegister((void *)m->params, m->nparams, cudaHostRegisterDefault) == cudaSuccess) c->pinned_params = m->params;
    else (void)cudaGetLastError();
    CK(cudaFuncSetAttribute(mm_kernel<MODE_PLAIN>, cudaFuncAttributeMaxDynamicSharedMemorySize, c->smem));
    CK(cudaFuncSetAttribute(mm_kernel<MODE_BIAS>, cudaFuncAttributeMaxDynamicSharedMemorySize, c->smem));
    CK(cudaFuncSetAttribute(mm_kernel<MODE_BIAS_GATE>, cudaFuncAttributeMaxDynamicSharedMemorySize, c->smem));
    CK(cudaFuncSetAttribute(mm_kernel<MODE_RESID>, cudaFuncAttributeMaxDynamicSharedMemorySize, c->smem));
    CK(cudaFuncSetAttribute(mm_kernel<MODE_BIAS_MIX>, cudaFuncAttributeMaxDynamicSharedMemorySize, c->smem));
    CK(cudaFuncSetAttribute(mm_kernel<MODE_UPDATE>, cudaFuncAttributeMaxDynamicSharedMemorySize, c->smem));
    CK(cudaFuncSetAttribute(mm_kernel<MODE_PLAIN>, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    CK(cudaFuncSetAttribute(mm_kernel<MODE_BIAS>, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    CK(cudaFuncSetAttribute(mm_kernel<MODE_BIAS_GATE>, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    CK(cudaFuncSetAttribute(mm_kernel<MODE_RESID>, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    CK(cudaFuncSetAttribute(mm_kernel<MODE_BIAS_MIX>, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    CK(cudaFuncSetAttribute(mm_kernel<MODE_UPDATE>, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    c->nsm = prop.multiProcessorCount;
    c->ln_vec = env_on("EGG_CUDA_LNVEC");
#ifdef EGG_MMP
    {
        lnq t[128];
        for (int d = 0; d < 128; d++) {
            const egg_div16 v = egg_div16_make(d > 1 ? d : 2);
            t[d] = d <= 1 ? lnq{65536u, 16} : lnq{v.M, 16 + v.j};
        }
        CK(cudaMemcpyToSymbol(c_lnq, t, sizeof t));
        int tm[128];
        for (int d = 0; d < 128; d++) tm[d] = ln_mq(d > 0 ? d : 1);
        CK(cudaMemcpyToSymbol(c_lnm, tm, sizeof tm));
    }
    {
        const char *e = getenv("EGG_CUDA_MMP");
        const int sm = mmp_smem_bytes();
        c->mmp_ctas = 0;
        if (env_on("EGG_CUDA_MMP") && (size_t)sm <= prop.sharedMemPerBlockOptin) {
#define MMP_ATTR(M, R)                                                                                               \
    CK(cudaFuncSetAttribute(mmp_kernel<M, R>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));                       \
    CK(cudaFuncSetAttribute(mmp_kernel<M, R>, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
            MMP_ATTR(MODE_PLAIN, 0) MMP_ATTR(MODE_PLAIN, 1) MMP_ATTR(MODE_RESID, 0) MMP_ATTR(MODE_RESID, 1)
            MMP_ATTR(MODE_BIAS_GATE, 0) MMP_ATTR(MODE_BIAS_GATE, 1) MMP_ATTR(MODE_BIAS_MIX, 0) MMP_ATTR(MODE_BIAS_MIX, 1)
#undef MMP_ATTR
            int occ = 0;
            CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, mmp_kernel<MODE_PLAIN, 1>, NTHREADS, sm));
            c->mmp_ctas = (occ > 0 ? occ : 1) * c->nsm;
            if (e && atoi(e) >= 2 && atoi(e) < c->mmp_ctas) c->mmp_ctas = atoi(e); /* tests: many tiles per CTA */
        }
        /* the fused recurrence needs this binary's sm_90a code for this GPU */
        int *probe = NULL, have = 0;
        CK(cudaMalloc(&probe, sizeof(int)));
        CK(cudaMemset(probe, 0, sizeof(int)));
        wgmma_probe<<<1, 1, 0, c->st>>>(probe);
        CKL();
        CK(cudaMemcpyAsync(&have, probe, sizeof(int), cudaMemcpyDeviceToHost, c->st));
        CK(cudaStreamSynchronize(c->st));
        CK(cudaFree(probe));
        c->tmap_encode = NULL;
        if (have && c->mmp_ctas > 0 && env_on("EGG_CUDA_TMA")) c->tmap_encode = tmap_encoder();
        c->mmw_ctas = 0;
        if (c->tmap_encode && env_on("EGG_CUDA_WS") &&
            (size_t)mmw_smem_bytes() <= prop.sharedMemPerBlockOptin) {
#define MMW_ATTR(M, R) CK(cudaFuncSetAttribute(mmw_kernel<M, R>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmw_smem_bytes()));
            MMW_ATTR(MODE_PLAIN, 0) MMW_ATTR(MODE_PLAIN, 1) MMW_ATTR(MODE_RESID, 0) MMW_ATTR(MODE_RESID, 1) MMW_ATTR(MODE_UPDATE, 0)
            CK(cudaFuncSetAttribute(mmw_kernel<MODE_PLAIN, 1, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmw_smem_bytes()));
            CK(cudaFuncSetAttribute(mmw_kernel<MODE_PLAIN, 1, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmw_smem_bytes()));
#define MMWP_ATTR(M, R, EP) CK(cudaFuncSetAttribute(mmw_kernel<M, R, EP, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmw_smem_bytes()));
            MMWP_ATTR(MODE_PLAIN, 1, 2) MMWP_ATTR(MODE_PLAIN, 1, 1) MMWP_ATTR(MODE_PLAIN, 1, 0) MMWP_ATTR(MODE_PLAIN, 0, 0)
            MMWP_ATTR(MODE_RESID, 1, 0) MMWP_ATTR(MODE_RESID, 0, 0)
#undef MMWP_ATTR
#undef MMW_ATTR
            c->mmx = env_on("EGG_CUDA_XRES") && (size_t)mmx_smem_bytes(1) <= prop.sharedMemPerBlockOptin;
            c->resw = env_on("EGG_CUDA_RESW");
            if (c->mmx) {
#define MMX_ATTR(R, EP, KT, D) CK(cudaFuncSetAttribute(mmx_kernel<R, EP, KT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmx_smem_bytes(D)));
                MMX_ATTR(1, 2, 4, 0) MMX_ATTR(1, 1, 4, 0) MMX_ATTR(1, 0, 4, 0) MMX_ATTR(0, 0, 4, 0)
                MMX_ATTR(1, 2, 2, 0) MMX_ATTR(1, 1, 2, 0) MMX_ATTR(1, 0, 2, 0) MMX_ATTR(0, 0, 2, 0)
                MMX_ATTR(1, 2, 2, 1) MMX_ATTR(1, 1, 2, 1) MMX_ATTR(1, 0, 2, 1) MMX_ATTR(0, 0, 2, 1)
                MMX_ATTR(1, 0, 8, 0) MMX_ATTR(0, 0, 8, 0) MMX_ATTR(1, 0, 6, 0) MMX_ATTR(0, 0, 6, 0)
#undef MMX_ATTR
                c->mmx512 = env_on("EGG_CUDA_MMX512");
            }
            { /* the grouped update: every matrix's operand rows stacked, its votes in Zg (EGG_CUDA_UGROUP=0: off) */
                c->ugroup = env_on("EGG_CUDA_UGROUP");
                const int nt = m->ntensors;
                c->gA.assign((size_t)nt, 0); c->gB.assign((size_t)nt, 0); c->gZ.assign((size_t)nt, 0);
                std::vector<int4> tab((size_t)nt, make_int4(0, 0, 0, 0));
                long long zs = 0;
                c->gsumA = c->gsumB = 0;
                for (int id = 0; id < nt; id++) {
                    const egg_tensor *t = &m->t[id];
                    if (t->kind == EGG_T_VEC) continue;
                    c->gA[id] = c->gsumA; c->gB[id] = c->gsumB; c->gZ[id] = zs;
                    tab[id] = make_int4(c->gsumA, c->gsumB, t->rows, t->cols);
                    c->gsumA += t->rows; c->gsumB += t->cols; zs += (long long)t->size;
                }
                if (c->ugroup) {
                    CK(cudaMalloc(&c->Zg, sizeof(int32_t) * (size_t)(zs > 0 ? zs : 1)));
                    CK(cudaMemset(c->Zg, 0, sizeof(int32_t) * (size_t)(zs > 0 ? zs : 1)));
                    CK(cudaMalloc(&c->gtab, sizeof(int4) * (size_t)nt));
                    CK(cudaMalloc(&c->gzoff, sizeof(long long) * (size_t)nt));
                    CK(cudaMemcpy(c->gtab, tab.data(), sizeof(int4) * (size_t)nt, cudaMemcpyHostToDevice));
                    CK(cudaMemcpy(c->gzoff, c->gZ.data(), sizeof(long long) * (size_t)nt, cudaMemcpyHostToDevice));
                    if (cfg->update != EGG_UPD_REPLICATED) { /* the votes at the parameters' offsets (Zall) */
                        std::vector<long long> po((size_t)nt);
                        for (int id = 0; id < nt; id++) po[(size_t)id] = (long long)m->t[id].off;
                        CK(cudaMalloc(&c->gzoffp, sizeof(long long) * (size_t)nt));
                        CK(cudaMemcpy(c->gzoffp, po.data(), sizeof(long long) * (size_t)nt, cudaMemcpyHostToDevice));
                    }
                }
            }
            c->dual = env_on("EGG_CUDA_DUAL");
            c->tord = env_on("EGG_CUDA_TORD");
            const char *ed = getenv("EGG_CUDA_WIDE");
            c->mmd = env_on("EGG_CUDA_WIDE") && (size_t)mmd_smem_bytes() <= prop.sharedMemPerBlockOptin ? (ed ? atoi(ed) : 2) : 0;
            if (c->mmd) {
                CK(cudaFuncSetAttribute(mmd_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmd_smem_bytes()));
                CK(cudaFuncSetAttribute(mmd_kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmd_smem_bytes()));
                CK(cudaFuncSetAttribute(mmd_kernel<1, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmd_smem_bytes()));
                CK(cudaFuncSetAttribute(mmd_kernel<1, 0, MODE_PLAIN>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmd_smem_bytes()));
                CK(cudaFuncSetAttribute(mmd_kernel<0, 0, MODE_PLAIN>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmd_smem_bytes()));
                CK(cudaFuncSetAttribute(mmd_kernel<1, 0, MODE_RESID, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmd_smem_bytes(1, 1)));
                CK(cudaFuncSetAttribute(mmd_kernel<1, 1, MODE_RESID, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmd_smem_bytes(1, 1)));
                CK(cudaFuncSetAttribute(mmd_kernel<0, 0, MODE_RESID, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmd_smem_bytes(1, 1)));
                CK(cudaFuncSetAttribute(mmd_kernel<1, 0, MODE_PLAIN, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmd_smem_bytes(1, 1)));
                CK(cudaFuncSetAttribute(mmd_kernel<0, 0, MODE_PLAIN, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmd_smem_bytes(1, 1)));
            }
            c->mmd1p = env_on("EGG_CUDA_MMD1P");
            c->mmdodd = env_on("EGG_CUDA_MMDODD");
            { /* rank 2-4 in mmx_kernel and mmd_kernel */
                c->rgemm = env_on("EGG_CUDA_RGEMM") && (size_t)mmx_smem_bytes(0, 4) <= prop.sharedMemPerBlockOptin &&
                           (size_t)mmd_smem_bytes(4) <= prop.sharedMemPerBlockOptin;
                c->fmlpr = env_on("EGG_CUDA_FMLPR") && (size_t)mlp_smem_bytes(256, 2) <= prop.sharedMemPerBlockOptin &&
                           (size_t)mlp_smem_bytes(256, 3) <= prop.sharedMemPerBlockOptin && (size_t)mlp_smem_bytes(256, 4) <= prop.sharedMemPerBlockOptin &&
                           (size_t)mlp_smem_bytes(128, 2) <= prop.sharedMemPerBlockOptin;
                c->lnxb = env_on("EGG_CUDA_LNXB");
                c->ln2xb = env_on("EGG_CUDA_LN2XB");
                if (c->rgemm) {
#define MXR_ATTR(R, EP, KT) CK(cudaFuncSetAttribute(mmx_kernel<R, EP, KT, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmx_smem_bytes(0, R)));
#define MDR_ATTR1(R, W, M, NH) CK(cudaFuncSetAttribute(mmd_kernel<R, W, M, NH>, cudaFuncAttributeMaxDynamicSharedMemorySize, mmd_smem_bytes(R, NH)));
#define MDR_ATTR(R, W, M) MDR_ATTR1(R, W, M, 2) MDR_ATTR1(R, W, M, 1)
#define RG_ATTR(R) MXR_ATTR(R, 0, 2) MXR_ATTR(R, 0, 4) MXR_ATTR(R, 0, 6) MXR_ATTR(R, 0, 8) MXR_ATTR(R, 2, 2) MXR_ATTR(R, 2, 4) MDR_ATTR(R, 0, MODE_RESID) MDR_ATTR(R, 1, MODE_RESID) MDR_ATTR(R, 0, MODE_PLAIN) MDR_ATTR(R, 1, MODE_PLAIN)
                    RG_ATTR(2) RG_ATTR(3) RG_ATTR(4)
#undef RG_ATTR
#undef MDR_ATTR
#undef MDR_ATTR1
#undef MXR_ATTR
                }
            }
            c->fmlp = env_on("EGG_CUDA_FMLP") && (size_t)mlp_smem_bytes(256) <= prop.sharedMemPerBlockOptin;
            if (c->fmlp) {
#define MLP_ATTR(HH, R, EP) CK(cudaFuncSetAttribute(mlp_kernel<HH, R, EP>, cudaFuncAttributeMaxDynamicSharedMemorySize, mlp_smem_bytes(HH, R > 1 ? R : 1)));
                MLP_ATTR(256, 0, 0) MLP_ATTR(256, 1, 0) MLP_ATTR(256, 1, 1) MLP_ATTR(256, 1, 2)
                MLP_ATTR(128, 0, 0) MLP_ATTR(128, 1, 0) MLP_ATTR(128, 1, 1) MLP_ATTR(128, 1, 2)
                if (c->fmlpr) {
                    MLP_ATTR(256, 2, 0) MLP_ATTR(256, 2, 2) MLP_ATTR(256, 3, 0) MLP_ATTR(256, 3, 2) MLP_ATTR(256, 4, 0) MLP_ATTR(256, 4, 2)
                    MLP_ATTR(128, 2, 0) MLP_ATTR(128, 2, 2)
                    MLP_ATTR(128, 3, 0) MLP_ATTR(128, 3, 2) MLP_ATTR(128, 4, 0) MLP_ATTR(128, 4, 2)
                }
#undef MLP_ATTR
            }
            c->mmw_ctas = c->nsm; /* one CTA per SM */
            if (e && atoi(e) >= 2 && atoi(e) < c->mmw_ctas) c->mmw_ctas = atoi(e); /* EGG_CUDA_MMP=n: many tiles per CTA */
            if (env_on("EGG_CUDA_WPERM")) {
                bool any = false;
                for (int id = 0; id < m->ntensors; id++) {
                    const egg_tensor *t = &m->t[id];
                    c->wp_ok[id] = t->kind == EGG_T_MAT && id != EGG_T_EMB && t->rows % BN == 0 && t->cols % 16 == 0 && t->off % 16 == 0;
                    any = any || c->wp_ok[id];
                }
                if (any) {
                    CK(cudaMalloc(&c->wperm, m->nparams));
                    if (c->fmlp && (c->H == 128 || c->H == 256)) CK(cudaMalloc(&c->wpu, m->nparams));
                    if ((rc = wperm_fill(c, err))) { delete c; return rc; }
                }
            }
        }
        {
            c->l2pf = env_on("EGG_CUDA_L2PF"); /* the chunk recurrences' L2 prefetch of the next timestep's inputs */
            c->rchunk = have && env_on("EGG_CUDA_RCHUNK") && (size_t)rchunk_smem_bytes<256>() <= prop.sharedMemPerBlockOptin;
            if (c->rchunk) {
#define RCHUNK_ATTR(HH, R) CK(cudaFuncSetAttribute(rchunk_kernel<HH, R>, cudaFuncAttributeMaxDynamicSharedMemorySize, rchunk_smem_bytes<HH>()));
                RCHUNK_ATTR(256, 0) RCHUNK_ATTR(256, 1) RCHUNK_ATTR(128, 0) RCHUNK_ATTR(128, 1)
#undef RCHUNK_ATTR
                int o1 = 0, o2 = 0;
                CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o1, rchunk_kernel<128, 1>, rchunk_threads<128>(), rchunk_smem_bytes<128>()));
                CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o2, rchunk_kernel<256, 1>, rchunk_threads<256>(), rchunk_smem_bytes<256>()));
                c->rchunk_ctas[0] = (o1 > 0 ? o1 : 1) * c->nsm;
                c->rchunk_ctas[1] = (o2 > 0 ? o2 : 1) * c->nsm;
                c->rreg = env_on("EGG_CUDA_RREG") && (size_t)rreg_smem_bytes<256>() <= prop.sharedMemPerBlockOptin;
                if (c->rreg) {
#define RREG_ATTR(HH, R, EP) CK(cudaFuncSetAttribute(rreg_kernel<HH, R, EP>, cudaFuncAttributeMaxDynamicSharedMemorySize, rreg_smem_bytes<HH>()));
                    RREG_ATTR(256, 0, 0) RREG_ATTR(256, 1, 0) RREG_ATTR(256, 1, 1) RREG_ATTR(256, 1, 2)
                    RREG_ATTR(128, 0, 0) RREG_ATTR(128, 1, 0) RREG_ATTR(128, 1, 2)
                    RREG_ATTR(256, 2, 0) RREG_ATTR(256, 3, 0) RREG_ATTR(256, 4, 0) RREG_ATTR(128, 2, 0)
                    RREG_ATTR(128, 3, 0) RREG_ATTR(128, 4, 0)
                    RREG_ATTR(256, 2, 2) RREG_ATTR(256, 3, 2) RREG_ATTR(256, 4, 2) RREG_ATTR(128, 2, 2)
                    RREG_ATTR(128, 3, 2) RREG_ATTR(128, 4, 2)
#undef RREG_ATTR
#define RREG_ATTR(HH, R, EP) CK(cudaFuncSetAttribute(rreg_kernel<HH, R, EP, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, rreg_smem_bytes<HH>()));
                    RREG_ATTR(256, 2, 0) RREG_ATTR(256, 3, 0) RREG_ATTR(256, 4, 0) RREG_ATTR(128, 2, 0)
                    RREG_ATTR(128, 3, 0) RREG_ATTR(128, 4, 0)
                    RREG_ATTR(256, 2, 2) RREG_ATTR(256, 3, 2) RREG_ATTR(256, 4, 2) RREG_ATTR(128, 2, 2)
                    RREG_ATTR(128, 3, 2) RREG_ATTR(128, 4, 2)
#undef RREG_ATTR
                    int r1 = 0;
                    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r1, rreg_kernel<128, 1, 2>, rchunk_threads<128>(), rreg_smem_bytes<128>()));
                    c->rreg_ctas[0] = (r1 > 0 ? r1 : 1) * c->nsm;
                    c->rreg_ctas[1] = c->nsm;
                }
            }
            /* the chunk recurrence over a cluster (H = 384, 512): clusters of H / 128 CTAs */
            const char *eq = getenv("EGG_CUDA_RCLUS");
            c->rclus = have && env_on("EGG_CUDA_RCLUS") && (size_t)rclus_smem_bytes<512, 4>() <= prop.sharedMemPerBlockOptin ? (eq ? atoi(eq) : 1) : 0;
            if (c->rclus) {
#define RCLUS_ATTR2(HH, R, LN) CK(cudaFuncSetAttribute(rclus_kernel<HH, R, LN>, cudaFuncAttributeMaxDynamicSharedMemorySize, rclus_smem_bytes<HH, R>()));
#define RCLUS_ATTR(HH, R) RCLUS_ATTR2(HH, R, true)
                RCLUS_ATTR(512, 0) RCLUS_ATTR(512, 1) RCLUS_ATTR(512, 2) RCLUS_ATTR(512, 3) RCLUS_ATTR(512, 4)
                RCLUS_ATTR2(512, 2, false) RCLUS_ATTR2(512, 3, false) RCLUS_ATTR2(512, 4, false)
                RCLUS_ATTR(384, 0) RCLUS_ATTR(384, 1) RCLUS_ATTR(384, 2) RCLUS_ATTR(384, 3) RCLUS_ATTR(384, 4)
                const bool c640 = (size_t)rclus_smem_bytes<640, 4>() <= prop.sharedMemPerBlockOptin;
                if (c640) {
                    RCLUS_ATTR(640, 0) RCLUS_ATTR(640, 1) RCLUS_ATTR(640, 2) RCLUS_ATTR(640, 3) RCLUS_ATTR(640, 4)
                }
#undef RCLUS_ATTR
#undef RCLUS_ATTR2
                for (int i = 0; i < 2; i++) { /* the clusters that fit the GPU at once (rank 4's, the most shared memory) */
                    const int HH = i ? 512 : 384;
                    RclusLaunch rl;
                    rclus_launch(&rl, HH, 4, c->nsm / (HH / 128), c->st);
                    int ncl = 0;
                    if (cudaOccupancyMaxActiveClusters(&ncl, i ? (const void *)rclus_kernel<512, 4> : (const void *)rclus_kernel<384, 4>, &rl.lc) != cudaSuccess)
                        cudaGetLastError(), ncl = 0;
                    c->rclus_ncl[i] = ncl;
                }
                if (c->rclus_ncl[0] < 1 || c->rclus_ncl[1] < 1) c->rclus = 0; /* no cluster fits: per timestep */
                c->rclus_ncl[2] = 0; /* hidden 640: clusters of 5 with rank 4's shared memory, where they fit (EGG_CUDA_RCLUS640=0: not) */
                const char *e64 = getenv("EGG_CUDA_RCLUS640");
                c->rclus640 = e64 ? atoi(e64) : 1;
                if (c->rclus && c640 && c->rclus640) {
                    RclusLaunch rl;
                    rclus_launch(&rl, 640, 4, c->nsm / 5, c->st);
                    int ncl = 0;
                    if (cudaOccupancyMaxActiveClusters(&ncl, (const void *)rclus_kernel<640, 4>, &rl.lc) != cudaSuccess) cudaGetLastError(), ncl = 0;
                    c->rclus_ncl[2] = ncl;
                }
            }
            const char *es = getenv("EGG_CUDA_RSPLIT");
            c->rsplit = have ? (es ? atoi(es) : 1) : 0;
        }
    }
#endif
    be->name = EGG_GPU_NAME;
    be->device_id = dev;
#if defined(__HIPCC__) /* the wavefront size is the device's (64 on CDNA, 32 on RDNA) */
    snprintf(be->device_desc, sizeof be->device_desc, "hip:%d %s (%s, wave%d, %d CUs, %.0f GB)", dev, prop.name,
             prop.gcnArchName, prop.warpSize, prop.multiProcessorCount, prop.totalGlobalMem / 1e9);
#else
    snprintf(be->device_desc, sizeof be->device_desc, "cuda:%d %s (%d SMs, %.0f GB)", dev, prop.name, prop.multiProcessorCount,
             prop.totalGlobalMem / 1e9);
#endif
    be->impl = c;
    be->eval = cuda_eval;
    be->update = cuda_update;
    be->eval_clean = cuda_eval_clean;
    be->sample_step = cuda_sample_step;
    be->prefetch = cuda_prefetch;
    be->get_state = cuda_get_state;
    be->set_state = cuda_set_state;
    be->set_params = cuda_set_params;
    be->host_alloc = cuda_host_alloc;
    be->host_free = cuda_host_free;
    be->destroy = cuda_destroy;
#ifdef EGG_HAVE_NCCL
    be->nccl_init = cuda_nccl_init;
    be->nccl_allgather = cuda_nccl_allgather;
#endif
    return 0;
}
