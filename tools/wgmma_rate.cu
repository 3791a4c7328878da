/* egg tools: the int8 wgmma issue rate of one H100/H200 SM, per instruction shape (sm_90a), with no loads: each
 * warpgroup issues groups of m64nNk32 MMAs on operands already in shared memory (or A in registers), one group in
 * flight behind another, for a fixed number of groups; MACs per SM clock from clock64, TOPS from the wall time.
 * It answers whether the fused MLP's shapes (up: m64n64k32 with both operands in shared memory, down: m64n256k32 with
 * A from registers) cap its tensor-core rate (docs/BENCHMARKS.md). Build and run on the GPU machine:
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o /tmp/wgmma_rate tools/wgmma_rate.cu && /tmp/wgmma_rate
 * (make builds it as build/wgmma_rate where nvcc is found). Exit 77 where no sm_90 GPU is present. */
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

__device__ __forceinline__ void mma_ss(int (&d)[32], uint64_t da, uint64_t db) { /* m64n64k32, A and B from shared memory */
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, 1;\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
                 : "l"(da), "l"(db));
}
__device__ __forceinline__ void mma_rs(int (&d)[32], const unsigned (&a)[4], uint64_t db) { /* m64n64k32, A from registers */
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, 1;\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
__device__ __forceinline__ void mma_ss(int (&d)[64], uint64_t da, uint64_t db) { /* m64n128k32, A and B from shared memory */
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, 1;\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
                 : "l"(da), "l"(db));
}
__device__ __forceinline__ void mma_ss(int (&d)[128], uint64_t da, uint64_t db) { /* m64n256k32, A and B from shared memory */
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, 1;\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]), "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]), "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
                 : "l"(da), "l"(db));
}
__device__ __forceinline__ void mma_rs(int (&d)[128], const unsigned (&a)[4], uint64_t db) { /* m64n256k32, A from registers */
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, {%128,%129,%130,%131}, %132, 1;\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]), "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]), "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
/* the kernels' shared-memory operand descriptor (64-byte swizzle, 512-byte stride), as egg_cuda.cu's wg_desc */
__device__ __forceinline__ uint64_t desc(unsigned addr) {
    return (uint64_t)((addr & 0x3ffff) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(512 >> 4) << 32) | ((uint64_t)2 << 62);
}
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wait_groups() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

/* P, a group: 0 eight n64 SS; 1 eight n64 RS; 2 four n128 SS; 3 two n256 SS; 4 two n256 RS; 5 the fused MLP's chunk
 * at hidden 256, eight n64 SS (up) and two n256 RS (down) */
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
    const uint64_t dA = desc(base + w * 16384), dB = desc(base + 32768);
    const long long t0 = clock64();
    for (int it = 0; it < groups; it++) {
        fence();
#pragma unroll
        for (int s = 0; s < 8; s++) {
            const uint64_t o = (s & 1) * 2 + (s >> 1) * 64; /* the k32 halves of four 64-byte k-steps */
            if (P == 0 || P == 5) mma_ss(du, dA + o, dB + o);
            if (P == 1) mma_rs(du, a, dB + o);
            if (P == 2 && s < 4) mma_ss(dm, dA + o, dB + o);
            if (P == 3 && s < 2) mma_ss(dd, dA + o, dB + o);
            if ((P == 4 || P == 5) && s < 2) mma_rs(dd, a, dB + o);
        }
        commit();
        wait_groups<1>();
    }
    wait_groups<0>();
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
        ok = ok && run<1>("m64n64k32, A in registers", 8 * n64, nwg, p.multiProcessorCount);
        ok = ok && run<2>("m64n128k32, A and B in shared memory", 4 * n128, nwg, p.multiProcessorCount);
        ok = ok && run<3>("m64n256k32, A and B in shared memory", 2 * n256, nwg, p.multiProcessorCount);
        ok = ok && run<4>("m64n256k32, A in registers", 2 * n256, nwg, p.multiProcessorCount);
        ok = ok && run<5>("fused MLP chunk: 8 n64 SS + 2 n256 RS", 8 * n64 + 2 * n256, nwg, p.multiProcessorCount);
    }
    return ok ? 0 : 1;
}
