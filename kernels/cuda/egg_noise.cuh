/* egg_noise.cuh — noise_kernel: every local pair's noise blob of the step from the
 * counter hash of src/egg_math.h, in the CPU's blob layout.
 * Part of the CUDA backend: included once by kernels/cuda/egg_cuda.cu (one translation unit). */
#ifndef EGG_NOISE_CUH
#define EGG_NOISE_CUH

/* the low bytes of four ints as one word */
__device__ __forceinline__ unsigned low_bytes4(int a, int b, int c, int d) {
    return __byte_perm(__byte_perm((unsigned)a, (unsigned)b, 0x0040u), __byte_perm((unsigned)c, (unsigned)d, 0x0040u), 0x5410u);
}

/* noise blob of tensor `id` for local pairs [0, np): global pair p0 + p */
#ifndef NOISE_PP
#define NOISE_PP 32 /* pairs per block of the noise kernel (8: 1249-1271 us a step at EGG-256x6, 32: 1140; 64: 1132-1136) */
#endif
struct NoiseTab { int kind, N, K, is_emb; unsigned long long off; }; /* a tensor's shape and its offset in a pair's blob */
/* the block's pairs' groups of V values (4: one 32-bit store, 16: one 16-byte store) as one range, (pair q, group g)
 * walked by the threads together (a loop per pair left most threads idle where a blob has fewer groups than the block
 * threads). R1 (rank 1): a group's hash inputs are a golden step apart, no divisions; else (rank r >= 2) a group holds
 * values of one rank's row (A[j][o] = noise(o r + j), B[j][k] = noise(N r + k r + j)), its hash inputs r golden steps
 * apart, one division a group finding the row (N, K multiples of V) */
template <int V, bool R1>
__device__ __forceinline__ void noise_groups(const uint64_t *skey, int pb, int np, uint32_t len, uint32_t rN, int kind, int is_emb, int N,
                                             int K, int r, size_t off, size_t pstride, int8_t *noise) {
    const uint32_t ng = len / V, nq = (uint32_t)min(NOISE_PP, np - pb), dq = blockDim.x / ng, dg = blockDim.x % ng;
    const uint64_t step = R1 || kind == EGG_T_VEC ? EGG_GOLDEN : (uint64_t)r * EGG_GOLDEN;
    uint32_t q = threadIdx.x / ng, g = threadIdx.x % ng;
    for (; q < nq; q += dq, g += dg) {
        if (g >= ng) g -= ng, q++;
        if (q >= nq) break;
        const uint32_t i = V * g;
        int8_t *blob = noise + (size_t)(pb + q) * pstride + off;
        uint64_t z;
        uint32_t dst = i;
        if (R1) {
            const bool b = kind != EGG_T_VEC && (is_emb || i >= rN); /* B: blob at a_span(1, N) (embedding: B only) */
            z = skey[q] + (uint64_t)((b && is_emb ? rN + i : i) + 1) * EGG_GOLDEN;
            dst = b && !is_emb ? (uint32_t)a_span(1, N) + (i - rN) : i;
        } else {
            uint32_t idx = i;
            if (kind != EGG_T_VEC) {
                if (!is_emb && i < rN) { /* A[j][o] */
                    const uint32_t j = i / (uint32_t)N, o = i - j * (uint32_t)N;
                    idx = o * (uint32_t)r + j;
                } else { /* B[j][k] */
                    const uint32_t b = is_emb ? i : i - rN, j = b / (uint32_t)K, k = b - j * (uint32_t)K;
                    idx = rN + k * (uint32_t)r + j;
                    if (!is_emb) dst = (uint32_t)a_span(r, N) + b;
                }
            }
            z = skey[q] + (uint64_t)(idx + 1) * EGG_GOLDEN;
        }
        unsigned w[V / 4];
#pragma unroll
        for (int k = 0; k < V / 4; k++) {
            int v[4];
#pragma unroll
            for (int e = 0; e < 4; e++, z += step) v[e] = egg_noise_at(z);
            w[k] = low_bytes4(v[0], v[1], v[2], v[3]);
        }
        if constexpr (V == 16) *(uint4 *)(blob + dst) = make_uint4(w[0], w[1], w[2], w[3]);
        else *(unsigned *)(blob + dst) = w[0];
    }
}
/* every tensor's noise in one launch: blockIdx.y is the tensor (a launch per tensor had cost ~10 us of start and tail
 * each, 62 of them a step at EGG-256x6) */
template <bool R1> /* rank 1: A[0][o] = noise(o), B[0][k] = noise(N + k), no divisions */
__global__ void noise_kernel(int np, uint32_t p0, uint64_t seed, uint32_t epoch, const NoiseTab *tab, int r, size_t pstride, int8_t *noise,
                             int wide) {
    const uint32_t id = blockIdx.y;
    const NoiseTab nt = tab[id];
    const int kind = nt.kind, N = nt.N, K = nt.K, is_emb = nt.is_emb;
    const size_t off = (size_t)nt.off;
    /* 32-bit index math (a blob is at most r * (N + K) bytes; 64-bit division is a long software sequence) */
    const uint32_t len = kind == EGG_T_VEC ? 2u * (uint32_t)N : (is_emb ? (uint32_t)(r * K) : (uint32_t)(r * (N + K)));
    /* NOISE_PP pairs per block (pairs on x: y is limited to 65535), their keys (three mix64 rounds each) once:
     * blocks of one pair and 256 values had spent more time starting than hashing */
    __shared__ uint64_t skey[NOISE_PP];
    const int pb = blockIdx.x * NOISE_PP;
    for (int t = threadIdx.x; t < NOISE_PP && pb + t < np; t += blockDim.x) skey[t] = egg_noise_key(seed, epoch, id, p0 + (uint32_t)(pb + t));
    __syncthreads();
    const uint32_t rN = (uint32_t)(r * N);
    if (R1 && N % 4 == 0 && K % 4 == 0) {
        /* 16 values a thread where the A / B boundary and the blob offsets keep 16-byte groups aligned */
        if (wide && (kind == EGG_T_VEC ? N % 8 == 0 : K % 16 == 0 && (is_emb || N % 16 == 0)))
            noise_groups<16, true>(skey, pb, np, len, rN, kind, is_emb, N, K, 1, off, pstride, noise);
        else noise_groups<4, true>(skey, pb, np, len, rN, kind, is_emb, N, K, 1, off, pstride, noise);
        return;
    }
    if (!R1 && wide && N % 16 == 0 && K % 16 == 0) { /* rank 2-4: 16 values a thread (EGG_CUDA_NOISEW=0: one, below) */
        noise_groups<16, false>(skey, pb, np, len, rN, kind, is_emb, N, K, r, off, pstride, noise);
        return;
    }
    for (int q = 0; q < NOISE_PP && pb + q < np; q++) {
        const uint64_t key = skey[q];
        int8_t *blob = noise + (size_t)(pb + q) * pstride + off;
        for (uint32_t i = threadIdx.x; i < len; i += blockDim.x) {
            uint32_t dst = i; /* position in the blob: B of non-embedding matrices starts at a_span(r, N) */
            uint32_t idx;
            if (kind == EGG_T_VEC) idx = i;
            else if (!is_emb && i < rN) { /* A[j][o] = noise(o*r + j) */
                const uint32_t j = R1 ? 0 : i / (uint32_t)N, o = i - j * (uint32_t)N;
                idx = o * (uint32_t)r + j;
            } else { /* B[j][k] = noise(N*r + k*r + j) */
                const uint32_t b = is_emb ? i : i - rN;
                const uint32_t j = R1 ? 0 : b / (uint32_t)K, k = b - j * (uint32_t)K;
                idx = rN + k * (uint32_t)r + j;
                if (!is_emb) dst = (uint32_t)a_span(r, N) + b;
            }
            blob[dst] = (int8_t)egg_noise(key, idx);
        }
    }
}

#endif /* EGG_NOISE_CUH */
