/* egg_hip.cpp — the HIP backend: kernels/cuda/egg_cuda.cu (with the kernel headers it
 * includes) compiled by hipcc.
 *
 * One kernel source, two vendors: kernels/egg_gpu.h maps the CUDA runtime to
 * HIP and pulls in the AMD tile code (kernels/hip/egg_tile_hip.h: MFMA, WMMA,
 * dot4), which stands in for the PTX helpers egg_mm.cuh keeps behind
 * !__HIPCC__. This file only gives the HIP build its own names, so that a
 * binary with both backends links: the C entry points become
 *   egg_backend_hip_create, egg_hip_device_count, egg_hip_nccl_uid, egg_hip_mma_peak_tops,
 *   egg_hip_blas_peak_tops
 * and every kernel and helper lives in namespace egg_hip (the CUDA object's
 * are global), including the __host__ __device__ inlines whose values differ
 * between the builds (the GEMM's shared-memory plan). A new extern "C" function
 * in egg_cuda.cu needs its line below: tests/t_hip_build.sh fails on any global
 * symbol of this object outside egg_hip / egg_*hip_*. -DEGG_CUDA_SOURCE='"FILE"'
 * builds from another copy of the kernel source (to try a change).
 *
 * Build (make does this when hipcc is found; HIP_ARCH picks the targets):
 *   hipcc -x hip --offload-arch=gfx90a ... -Isrc -Ikernels -Ikernels/hip/compat
 *         -c kernels/hip/egg_hip.cpp */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

/* everything egg_cuda.cu includes, at global scope first: inside the namespace
 * below its #includes then find their guards set and add nothing */
#include "egg_gpu.h"
#ifdef EGG_HAVE_NCCL
#include "compat/nccl.h" /* RCCL */
#endif
extern "C" {
#include "backend.h"
#include "config.h"
#include "model.h"
#include "util.h"
}
#include "egg_math.h"

#define egg_backend_cuda_create egg_backend_hip_create
#define egg_cuda_device_count egg_hip_device_count
#define egg_cuda_nccl_uid egg_hip_nccl_uid
#define egg_cuda_mma_peak_tops egg_hip_mma_peak_tops
#define egg_cuda_blas_peak_tops egg_hip_blas_peak_tops

#ifndef EGG_CUDA_SOURCE
#define EGG_CUDA_SOURCE "../cuda/egg_cuda.cu"
#endif

namespace egg_hip {
#include EGG_CUDA_SOURCE
} // namespace egg_hip

/* AMD gives a workgroup 64 KiB of LDS (gfx90a, gfx94x, gfx11): the GEMM's plan at
 * the largest rank must fit, or every launch would fail at run time. */
static_assert(egg_hip::mm_ts_offset(egg_hip::GPU_RMAX) + BM * egg_hip::GPU_RMAX * 4 <= 65536,
              "mm_kernel needs more than 64 KiB of LDS; see the shared-memory plan in kernels/cuda/egg_mm.cuh");
