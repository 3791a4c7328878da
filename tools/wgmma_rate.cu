/* egg tools: the int8 wgmma issue rate of one H100/H200 SM, per instruction shape (sm_90a), with no loads: each
 * warpgroup issues groups of m64nNk32 MMAs on operands already in shared memory (or A in registers), one group in
 * flight behind another, for a fixed number of groups; MACs per SM clock from clock64, TOPS from the wall time.
 * It answers whether the fused MLP's shapes (up: m64n64k32 with both operands in shared memory, down: m64n256k32 with
 * A from registers) cap its tensor-core rate (docs/BENCHMARKS.md). Build and run on the GPU machine:
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Ikernels -o /tmp/wgmma_rate tools/wgmma_rate.cu && /tmp/wgmma_rate
 * (make builds it as build/wgmma_rate where nvcc is found). Exit 77 where no sm_90 GPU is present. */
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>
#include "cuda/egg_wgmma.cuh" /* the kernels' wgmma wrappers and operand descriptors */

/* P, a group: 0 eight n64 SS; 2 four n128 SS; 3 two n256 SS; 4 two n256 RS; 5 the fused MLP's chunk at hidden 256,
 * eight n64 SS (up) and two n256 RS (down) */
template <int P>
__global__ void __launch_bounds__(256, 1) rate_kernel(int groups, int nwg, long long *cycles, int *sink) {
    extern __shared__ __align__(1024) unsigned char sm[];
    const int tid = threadIdx.x, w = tid / 128;
    for (int i = tid; i < 65536 / 4; i += blockDim.x) ((unsigned *)sm)[i] = (unsigned)i * 2654435761u; /* varied bytes */
    __syncthreads();
    if (w >= nwg) return;
    int du[32] = {0}, dm[64] = {0}, dd[128] = {0};
    const unsigned a[4] = {(unsigned)tid * 0x01010101u, 0x7f01ff80u, 0x12345678u, (unsigned)tid};
    const unsigned base = (unsigned)__cvta_generic_to_shared(sm);
    const uint64_t dA = wg_desc(base + w * 16384), dB = wg_desc(base + 32768);
    const long long t0 = clock64();
    for (int it = 0; it < groups; it++) {
        wg_fence();
#pragma unroll
        for (int s = 0; s < 8; s++) {
            const uint64_t o = (s & 1) * 2 + (s >> 1) * 64; /* the k32 halves of four 64-byte k-steps */
            if (P == 0 || P == 5) wg_mma_s8(du, dA + o, dB + o);
            if (P == 2 && s < 4) wg_mma_s8(dm, dA + o, dB + o);
            if (P == 3 && s < 2) wg_mma_s8(dd, dA + o, dB + o);
            if ((P == 4 || P == 5) && s < 2) wg_mma_s8r(dd, a[0], a[1], a[2], a[3], dB + o);
        }
        wg_commit();
        wg_wait<1>();
    }
    wg_wait<0>();
    const long long t1 = clock64();
    int acc = 0;
    for (int i = 0; i < 32; i++) acc += du[i];
    for (int i = 0; i < 64; i++) acc += dm[i];
    for (int i = 0; i < 128; i++) acc += dd[i];
    if (acc == 0x12345678) sink[0] = acc; /* keeps the MMAs */
    if (tid == 0) cycles[blockIdx.x] = t1 - t0;
}

static bool check(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return true;
    fprintf(stderr, "wgmma_rate: %s: %s\n", what, cudaGetErrorString(e));
    return false;
}
template <int P> static bool run(const char *name, long long macs_per_group, int nwg, int nsm) {
    const int groups = 20000, smem = 200 * 1024;
    long long *cyc = nullptr;
    int *sink = nullptr;
    if (!check(cudaMalloc(&cyc, sizeof(long long) * nsm), "cudaMalloc") || !check(cudaMalloc(&sink, sizeof(int)), "cudaMalloc") ||
        !check(cudaFuncSetAttribute(rate_kernel<P>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "cudaFuncSetAttribute"))
        return false;
    rate_kernel<P><<<nsm, 256, smem>>>(100, nwg, cyc, sink); /* warm-up: clocks up */
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0);
    rate_kernel<P><<<nsm, 256, smem>>>(groups, nwg, cyc, sink); /* one CTA per SM (its shared memory) */
    cudaEventRecord(e1);
    if (!check(cudaEventSynchronize(e1), name)) return false;
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    long long *h = new long long[nsm];
    cudaMemcpy(h, cyc, sizeof(long long) * nsm, cudaMemcpyDeviceToHost);
    double mean = 0;
    for (int i = 0; i < nsm; i++) mean += (double)h[i] / nsm;
    delete[] h;
    const double macs = (double)macs_per_group * groups * nwg; /* per SM */
    printf("%-40s warpgroups %d  %7.1f MACs/clk/SM  %7.1f TOPS  (%.3f ms, %.0f MHz)\n", name, nwg, macs / mean,
           2.0 * macs * nsm / (ms * 1e-3) / 1e12, ms, mean / (ms * 1e3));
    cudaFree(cyc);
    cudaFree(sink);
    return true;
}
int main() {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess || p.major != 9) {
        printf("wgmma_rate: skipped: no sm_90 GPU\n");
        return 77;
    }
    printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    const long long n64 = 64 * 64 * 32, n128 = 64 * 128 * 32, n256 = 64 * 256 * 32;
    bool ok = true;
    for (int nwg = 1; nwg <= 2 && ok; nwg++) {
        ok = ok && run<0>("m64n64k32, A and B in shared memory", 8 * n64, nwg, p.multiProcessorCount);
        ok = ok && run<2>("m64n128k32, A and B in shared memory", 4 * n128, nwg, p.multiProcessorCount);
        ok = ok && run<3>("m64n256k32, A and B in shared memory", 2 * n256, nwg, p.multiProcessorCount);
        ok = ok && run<4>("m64n256k32, A in registers", 2 * n256, nwg, p.multiProcessorCount);
        ok = ok && run<5>("fused MLP chunk: 8 n64 SS + 2 n256 RS", 8 * n64 + 2 * n256, nwg, p.multiProcessorCount);
    }
    return ok ? 0 : 1;
}
