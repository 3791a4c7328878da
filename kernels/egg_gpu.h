/* egg_gpu.h — the one portability header between CUDA and HIP.
 *
 * Kernel sources are written in CUDA C; built with hipcc this header maps the
 * runtime API and the few intrinsics they use to HIP (as llama.cpp does in
 * ggml-cuda/vendors/hip.h). Vendor-only tile code sits behind the tile
 * interface: for CUDA the PTX helpers in kernels/cuda/egg_mm.cuh (cp_async16,
 * cp_commit, cp_wait<N>, mma_s8, guarded by !__HIPCC__), for HIP the same
 * names in kernels/hip/egg_tile_hip.h (MFMA on CDNA, WMMA on RDNA3, a dot4
 * fallback elsewhere), together with __dp4a, __shfl_xor_sync and __syncwarp.
 *
 * EGG_GPU_NAME is the backend's name ("cuda" / "hip"), EGG_GPU_API its runtime
 * in messages. kernels/hip/egg_hip.cpp builds the HIP backend from
 * kernels/cuda/egg_cuda.cu (and the kernel headers it includes) under its own
 * entry points (egg_backend_hip_create, egg_hip_device_count, egg_hip_nccl_uid)
 * and namespace. */
#ifndef EGG_GPU_H
#define EGG_GPU_H

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>

#define EGG_GPU_NAME "hip"
#define EGG_GPU_API "HIP"

/* Runtime API. The HIP calls return hipError_t, which ROCm declares
 * [[nodiscard]]; CUDA code drops results in cleanup paths (cudaFree in a
 * destructor), so every call goes through a wrapper returning a plain int
 * error code (hipSuccess == cudaSuccess == 0) and -Werror builds stay clean. */
#define cudaError_t int
#define cudaSuccess ((int)hipSuccess)
#define cudaStream_t hipStream_t
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaEvent_t hipEvent_t
#define cudaDeviceProp hipDeviceProp_t
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaStreamCaptureModeGlobal hipStreamCaptureModeGlobal
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define cudaFuncAttributePreferredSharedMemoryCarveout hipFuncAttributePreferredSharedMemoryCarveout

static inline const char *egg_hip_error_string(int e) { return hipGetErrorString((hipError_t)e); }
static inline int egg_hip_get_last_error(void) { return (int)hipGetLastError(); }
static inline int egg_hip_get_device_count(int *n) { return (int)hipGetDeviceCount(n); }
static inline int egg_hip_set_device(int d) { return (int)hipSetDevice(d); }
static inline int egg_hip_get_device_properties(hipDeviceProp_t *p, int d) { return (int)hipGetDeviceProperties(p, d); }
template <class T> static inline int egg_hip_malloc(T **p, size_t n) { return (int)hipMalloc((void **)p, n); }
static inline int egg_hip_free(void *p) { return (int)hipFree(p); }
static inline int egg_hip_malloc_host(void **p, size_t n) { return (int)hipHostMalloc(p, n, 0); }
static inline int egg_hip_free_host(void *p) { return (int)hipHostFree(p); }
static inline int egg_hip_memcpy(void *d, const void *s, size_t n, hipMemcpyKind k) { return (int)hipMemcpy(d, s, n, k); }
static inline int egg_hip_memcpy_async(void *d, const void *s, size_t n, hipMemcpyKind k, hipStream_t st = 0) {
    return (int)hipMemcpyAsync(d, s, n, k, st);
}
static inline int egg_hip_memcpy2d(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, hipMemcpyKind k) {
    return (int)hipMemcpy2D(d, dp, s, sp, w, h, k);
}
static inline int egg_hip_memset(void *d, int v, size_t n) { return (int)hipMemset(d, v, n); }
static inline int egg_hip_memset_async(void *d, int v, size_t n, hipStream_t st = 0) { return (int)hipMemsetAsync(d, v, n, st); }
static inline int egg_hip_mem_get_info(size_t *f, size_t *t) { return (int)hipMemGetInfo(f, t); }
static inline int egg_hip_device_synchronize(void) { return (int)hipDeviceSynchronize(); }
static inline int egg_hip_stream_create_with_flags(hipStream_t *s, unsigned f) { return (int)hipStreamCreateWithFlags(s, f); }
static inline int egg_hip_stream_synchronize(hipStream_t s) { return (int)hipStreamSynchronize(s); }
static inline int egg_hip_stream_destroy(hipStream_t s) { return (int)hipStreamDestroy(s); }
static inline int egg_hip_stream_begin_capture(hipStream_t s, hipStreamCaptureMode m) { return (int)hipStreamBeginCapture(s, m); }
static inline int egg_hip_stream_end_capture(hipStream_t s, hipGraph_t *g) { return (int)hipStreamEndCapture(s, g); }
/* CUDA 12's three-argument form (flags must be 0 here) */
static inline int egg_hip_graph_instantiate(hipGraphExec_t *e, hipGraph_t g, unsigned long long flags) {
    return flags ? (int)hipErrorInvalidValue : (int)hipGraphInstantiate(e, g, nullptr, nullptr, 0);
}
static inline int egg_hip_event_create(hipEvent_t *e) { return (int)hipEventCreate(e); }
static inline int egg_hip_event_record(hipEvent_t e, hipStream_t s = 0) { return (int)hipEventRecord(e, s); }
static inline int egg_hip_event_synchronize(hipEvent_t e) { return (int)hipEventSynchronize(e); }
static inline int egg_hip_event_elapsed_time(float *ms, hipEvent_t a, hipEvent_t b) { return (int)hipEventElapsedTime(ms, a, b); }
static inline int egg_hip_event_destroy(hipEvent_t e) { return (int)hipEventDestroy(e); }
static inline int egg_hip_stream_wait_event(hipStream_t s, hipEvent_t e, unsigned f) { return (int)hipStreamWaitEvent(s, e, f); }
static inline int egg_hip_host_register(void *p, size_t n, unsigned f) { return (int)hipHostRegister(p, n, f); }
static inline int egg_hip_host_unregister(void *p) { return (int)hipHostUnregister(p); }
static inline int egg_hip_graph_launch(hipGraphExec_t e, hipStream_t s) { return (int)hipGraphLaunch(e, s); }
static inline int egg_hip_graph_exec_destroy(hipGraphExec_t e) { return (int)hipGraphExecDestroy(e); }
static inline int egg_hip_graph_destroy(hipGraph_t g) { return (int)hipGraphDestroy(g); }
/* AMD has no L1/LDS carveout (the hint is dropped) and needs no opt-in for
 * dynamic LDS; a request above the device's LDS per workgroup (64 KiB on
 * gfx90a, gfx94x and gfx11) is refused here, before a launch could fail. */
static inline int egg_hip_func_set_attribute(const void *f, hipFuncAttribute a, int v) {
    if (a == hipFuncAttributePreferredSharedMemoryCarveout) return (int)hipSuccess;
    if (a == hipFuncAttributeMaxDynamicSharedMemorySize) {
        int dev = 0;
        hipDeviceProp_t p;
        if (hipGetDevice(&dev) != hipSuccess || hipGetDeviceProperties(&p, dev) != hipSuccess) return (int)hipErrorInvalidDevice;
        if (v < 0 || (size_t)v > p.sharedMemPerBlock) return (int)hipErrorInvalidValue;
    }
    return (int)hipFuncSetAttribute(f, a, v);
}

#define cudaGetErrorString egg_hip_error_string
#define cudaGetLastError egg_hip_get_last_error
#define cudaGetDeviceCount egg_hip_get_device_count
#define cudaSetDevice egg_hip_set_device
#define cudaGetDeviceProperties egg_hip_get_device_properties
#define cudaMalloc egg_hip_malloc
#define cudaFree egg_hip_free
#define cudaMallocHost egg_hip_malloc_host
#define cudaFreeHost egg_hip_free_host
#define cudaMemcpy egg_hip_memcpy
#define cudaMemcpyAsync egg_hip_memcpy_async
#define cudaMemcpy2D egg_hip_memcpy2d
#define cudaMemset egg_hip_memset
#define cudaMemsetAsync egg_hip_memset_async
#define cudaMemGetInfo egg_hip_mem_get_info
#define cudaDeviceSynchronize egg_hip_device_synchronize
#define cudaStreamCreateWithFlags egg_hip_stream_create_with_flags
#define cudaStreamSynchronize egg_hip_stream_synchronize
#define cudaStreamDestroy egg_hip_stream_destroy
#define cudaStreamBeginCapture egg_hip_stream_begin_capture
#define cudaStreamEndCapture egg_hip_stream_end_capture
#define cudaEventCreate egg_hip_event_create
#define cudaEventRecord egg_hip_event_record
#define cudaEventSynchronize egg_hip_event_synchronize
#define cudaEventElapsedTime egg_hip_event_elapsed_time
#define cudaEventDestroy egg_hip_event_destroy
#define cudaStreamWaitEvent egg_hip_stream_wait_event
#define cudaHostRegister egg_hip_host_register
#define cudaHostUnregister egg_hip_host_unregister
#define cudaHostRegisterDefault hipHostRegisterDefault
#define cudaGraphInstantiate egg_hip_graph_instantiate
#define cudaGraphLaunch egg_hip_graph_launch
#define cudaGraphExecDestroy egg_hip_graph_exec_destroy
#define cudaGraphDestroy egg_hip_graph_destroy
#define cudaFuncSetAttribute(f, a, v) egg_hip_func_set_attribute((const void *)(f), a, v)

/* Wavefront: 64 lanes on CDNA (gfx9), 32 on RDNA (gfx10+, the default there).
 * Kernels keep CUDA's 32-lane logical warps (warp = tid >> 5): a wave64 runs two,
 * and every cross-lane operation of the tile interface stays inside one. */
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define EGG_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define EGG_WARP_SIZE warpSize
#endif

#include "hip/egg_tile_hip.h"

#else /* CUDA */
#include <cuda_runtime.h>
#define EGG_GPU_NAME "cuda"
#define EGG_GPU_API "CUDA"
#define EGG_WARP_SIZE 32
#endif

#endif
