/* compat/cuda_runtime.h — found instead of CUDA's header when hipcc compiles the
 * CUDA kernel sources (kernels/hip/egg_hip.cpp adds -Ikernels/hip/compat): the HIP
 * runtime and the cuda* -> hip* mapping come from kernels/egg_gpu.h. */
#pragma once
#include "../../egg_gpu.h"
