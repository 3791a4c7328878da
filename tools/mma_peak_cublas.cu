// tools/mma_peak_cublas.cu — reference int8 tensor-core rate from cuBLAS
// (cublasGemmEx, int8 in, int32 out, 8192^3) for docs/BENCHMARKS.md.
// Build and run on a GPU machine:
//   nvcc -O2 -o /tmp/mma_peak tools/mma_peak_cublas.cu -lcublas && /tmp/mma_peak
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
int main(void) {
    const int n = 8192, reps = 10;
    int8_t *a, *b;
    int32_t *c;
    if (cudaMalloc(&a, (size_t)n * n) || cudaMalloc(&b, (size_t)n * n) || cudaMalloc(&c, (size_t)n * n * 4)) {
        fprintf(stderr, "mma_peak: cudaMalloc failed\n");
        return 1;
    }
    cudaMemset(a, 3, (size_t)n * n);
    cudaMemset(b, 5, (size_t)n * n);
    cublasHandle_t h;
    cublasCreate(&h);
    int32_t alpha = 1, beta = 0;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int i = 0; i <= reps; i++) {
        if (i == 1) cudaEventRecord(e0);
        st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_8I, n, b, CUDA_R_8I, n, &beta, c,
                          CUDA_R_32I, n, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT);
    }
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (st != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "mma_peak: cublasGemmEx failed (%d)\n", (int)st);
        return 1;
    }
    printf("cublas int8 GEMM %d^3: %.1f TOPS\n", n, 2.0 * n * (double)n * n * reps / (ms * 1e-3) / 1e12);
    return 0;
}
