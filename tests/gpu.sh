#!/usr/bin/env bash
# make test-gpu: every GPU backend compiled into egg_mgpu must reproduce the CPU
# reference bit for bit: per-member scores of every step (--dump-scores), the
# model checksum, validation loss, greedy and sampled text, and resume.
# Skips cleanly, saying so, where the binary has no GPU backend or no GPU.
set -u
cd "$(dirname "$0")/.."
BIN=${EGG_GPU_BIN:-./egg_mgpu} # EGG_GPU_BIN: another build of it (a developer checking that a check fails on old code)
pass=0; fail=0; skip=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
sk() { echo "SKIP $1: $2"; skip=$((skip + 1)); }
csum() { sed -n 's/.*checksum=\([0-9a-f]*\).*/\1/p' "$1" | head -1; } # the first checksum a run's output prints
cuda_tool() { command -v "$1" || { [ -x "/usr/local/cuda/bin/$1" ] && echo "/usr/local/cuda/bin/$1"; }; } # a CUDA toolkit program
finish() {
  if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
  [ "$fail" -eq 0 ]
  exit $?
}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
gtl=${EGG_GPU_TEST_TIMEOUT:-300} # seconds a config's GPU run may take (each takes a few)

# deterministic English-ish corpus, plus token files with an odd vocabulary (301) and vocabularies 128 and 512
python3 - "$T" <<'PY'
import random, sys, struct
random.seed(7)
words = ("the of and to in a is that for it as was with be by on not he this are or his from at which "
         "but have an they you were her she there one all we their been has when who will more no if out").split()
text = " ".join(random.choice(words) for _ in range(60000))
open(sys.argv[1] + "/c.txt", "w").write(text)
for V, name in ((301, "t"), (128, "t128"), (512, "t512")):
    toks = [random.randrange(V) for _ in range(40000)]
    with open(sys.argv[1] + "/" + name + ".bin", "wb") as f:
        f.write(b"EGGTOKS\0" + struct.pack("<IIIIQ", 1, 2, V, 0, len(toks)))
        f.write(struct.pack("<%dH" % len(toks), *toks))
PY

backends=$($BIN --version | sed -n 's/^backends: //p')
gpus=""
for b in cuda hip; do
  case " $backends " in *" $b "*) gpus="$gpus $b";; esac
done
if [ -z "$gpus" ]; then sk gpu-backends "this build has no GPU backend (backends: $backends)"; finish; fi

# name | args [| environment of the GPU run]  (partial tiles: pops not multiples of 128; rank 1..4;
# hidden 32..1024; layers 1..6). EGG_CUDA_TCHUNK=k splits the timesteps into chunks of k, with
# token-0 state resets inside and at the edges of chunks (the token file has ~1/301 zeros).
# Paths, each of which must match the CPU: the forward's big GEMMs at rank <= 1 run in a persistent
# kernel (mmp; EGG_CUDA_MMP=n caps its CTAs so each walks many tiles, EGG_CUDA_MMP=0 uses the
# per-tile kernel; on sm_90a its X and W tiles come by TMA, EGG_CUDA_TMA=0: cp.async, and at rank 1
# with members a multiple of 128 the pairs' noise rows too; else by cp.async); on an sm_90a build the recurrence at hidden 128/256 (rank <= 1) is one kernel
# per layer and chunk that also applies EGG-LN2 (EGG_CUDA_LN2FUSE=0: the LN kernel at hidden 256, the staged pass;
# the pass runs on the MMA fragments in registers, EGG_CUDA_RREG=0: staged in shared memory)
# The warp-specialised GEMM reads a copy of each weight matrix with its rows permuted per 128 so that its
# epilogue stores from the MMA fragments (EGG_CUDA_WPERM=0: staged in shared memory); the update keeps it equal.
# The GEMMs with K = 128 or 256 (Wf, Wh, up, head) take whole row blocks with their X and B rows resident and
# each tile's epilogue under the next tile's MMAs (mmx_kernel; EGG_CUDA_XRES=0: mmw_kernel's tile at a time); down
# (N = 256) takes 128 x 256 tiles (mmd_kernel; EGG_CUDA_WIDE=0: mmw_kernel). At hidden 128, Wf.x and Wh.x run in one
# mmx_kernel launch that reads x once (EGG_CUDA_DUAL=0: a launch each). At hidden 256 mmx_kernel keeps Wf, Wh and a
# head of <= 256 rows resident, loaded and waited for in a CTA's first row block only (EGG_CUDA_RESW=0: streamed);
# EGG_CUDA_MMP=3 gives each CTA many row blocks, so both forms run past their first. On sm_90a the update's vote GEMMs of all
# matrices run as one launch over a work list (EGG_CUDA_UGROUP=0: a launch per matrix).
# The train forward runs as member parts on their own streams (EGG_CUDA_PARTS=k; by default parts of at least
# 8192 members, at most 4); the "parts" configs force it at small populations.
# (Uf, Uh resident in shared memory, 64-member row blocks; 8704 members = 136
# blocks on 132 SMs), EGG_CUDA_RCHUNK=0 and every other shape use two GEMMs per timestep;
# EGG-LN, the embedding and the loss use wide accesses where hidden / vocab allow (at hidden 384, 640 and 896 words
# 128 bytes apart, at 768 8-byte pairs 256 bytes apart; EGG_CUDA_LNVEC=0: the byte-per-lane kernels); the members' perturbed LN weights are computed
# once per step (EGG_CUDA_LNPERT=0: inside the LN kernels). Perturbation shifts 4 and 10
# (sigma-shift 0 and 6) in the rank-1 epilogues of the persistent GEMM and the fused recurrence;
# at output shift 8 (K <= 256) with perturbation shift >= 8 those epilogues clip on int16 lanes
# (shift 8: the default sigma-shift 4; shift 9: sigma-shift 5). At hidden 128/256 on sm_90a (rank <= 1) a
# layer's MLP is one kernel that keeps up's output in shared memory as down's MMA operand (EGG_CUDA_FMLP=0: up
# and down as two GEMMs). --update allreduce votes into one array of every parameter and applies it once summed
# (nothing to sum on one rank; two ranks sharing this GPU below sum it by MPI through the host). The noise
# kernel writes 16 values a thread where the shapes allow (EGG_CUDA_NOISEW=0: 4 at rank 1, 1 at rank 2-4; a
# vocabulary of 301 takes 4 for the head at rank 1, 1 at rank 2-4). The update operands take tiles of 128 rows x 128 columns, four columns a thread (EGG_CUDA_OPS4=1: 16-row blocks, as before v145; 0: one column a thread); the threshold steps
# four parameters a thread (EGG_CUDA_MAPPLY4=0: one), the vector tensors' votes four elements a thread (EGG_CUDA_VEC4=0: one).
# EGG-LN with the members' perturbed weights walks each pair's timesteps where the members are a multiple of 128
# (EGG_CUDA_LNWALK=0: 16 lanes a row), and so does the embedding with layer 0's EGG-LN1 (EGG_CUDA_EMBWALK=0: a row a slot). Each config also compares the share of parameters each step changed. The
# embedding applies the first layer's EGG-LN1 at hidden 128-512 (EGG_CUDA_EMBLN=0: an LN launch). The PLAIN GEMMs
# with K = 384 and 512 (Wf, Wh, up, head at hidden 384 and 512) take whole row blocks too, one X buffer a CTA
# (EGG_CUDA_MMX512=0: mmw_kernel, at rank 2-4 mm_kernel); EGG_CUDA_MMP=3 walks many row blocks through that buffer. Down (RESID) with N a multiple of 256
# takes 128 x 256 tiles and with N an odd multiple of 128 (hidden 384, 640; since v125) 128 x 128 ones (mmd_kernel;
# EGG_CUDA_WIDE=1: only at N = 256, mmw_kernel's 128 x 128 tiles elsewhere),
# at K > 2048 (hidden 768, 1024) with the rank-1 products t A in 64 bits (EGG_CUDA_WIDE=1: mm_kernel there); the
# PLAIN GEMMs with K > 512 take those tiles too, 128 x 128 ones where N is an odd multiple of 128 (EGG_CUDA_MMD1P=0 or
# EGG_CUDA_WIDE=1: mmw_kernel); from N = 640 (hidden 640, 896: Wf, Wh, down) 128 x 256 tiles whose last one's second
# half lies past N (EGG_CUDA_MMDODD=0: the 128 x 128 ones); at hidden 768 and
# wider the per-timestep recurrence runs them with gate and mix passes (every rank since v126; EGG_CUDA_RSPLIT=0: GEMMs
# whose epilogues gate and mix, as at hidden 640). At hidden 384
# and 512 (rank 1-4; rank 2-4 since v122) the recurrence runs per chunk over clusters of H / 128 CTAs exchanging each phase's bytes
# (rclus_kernel; EGG_CUDA_RCLUS=0: two GEMMs per timestep, =n: n clusters, so that each walks many row blocks); at
# hidden 640 at rank 2-4 over clusters of 5 CTAs whose h and g share one buffer, overwritten once every warp of the
# cluster has arrived on a read-done mbarrier (EGG_CUDA_RCLUS640=0: per timestep, =2: at every rank).
# At rank 2-4 (hidden 128/256) the chunk recurrence is rreg_kernel with the generic epilogue (at sigma-shift 4 the
# dp2a form of epi_quad_r8, as the persistent GEMMs' and the fused MLP's there), its A values from
# global memory (EGG_CUDA_RREG=0: two GEMMs per timestep). At rank 2-4 with members a multiple of 128 the PLAIN GEMMs
# with K = 128-512 run in mmx_kernel and down and the PLAIN ones with K > 512 in mmd_kernel (128 x 128 tiles where N is
# an odd multiple of 128: down at hidden 128 and 384),
# x . B_j from xb_kernel, p = sum_j t_j A_j in 32 bits at K <= 512 and in 64 above (EGG_CUDA_RGEMM=0: mm_kernel); at
# hidden 256 and 128 the fused MLP takes rank 2-4 too (ranks 3-4 at 128 since v144), x . B_up from xb_kernel, U . B_dn_j in its epilogues (EGG_CUDA_FMLPR=0:
# up and down as those two GEMMs); its row blocks there walk a member group's timesteps first where the members are a
# multiple of 128 (EGG_CUDA_TORD=0: in row order).
configs=(
  "h32-l1-r1|--hidden 32 --layers 1 --rank 1 --pop 10 --seq 12"
  "h64-l2-r2|--hidden 64 --layers 2 --rank 2 --pop 202 --seq 10"
  "h96-l3-r3-norm|--hidden 96 --layers 3 --rank 3 --pop 130 --seq 8 --fitness norm"
  "h128-l4-r1-group4|--hidden 128 --layers 4 --rank 1 --pop 264 --seq 8 --group 4 --noise-reuse 2"
  "h256-l6-r1|--hidden 256 --layers 6 --rank 1 --pop 256 --seq 6"
  "h512-l2-r4-int64|--hidden 512 --layers 2 --rank 4 --pop 66 --seq 4"
  "h160-l1-r2-sigma2|--hidden 160 --layers 1 --rank 2 --pop 42 --seq 9 --sigma-shift 2 --alpha 0.5"
  "tokens-v301|--hidden 64 --layers 2 --rank 1 --pop 34 --seq 12 --data $T/t.bin"
  "tokens-chunked|--hidden 96 --layers 3 --rank 2 --pop 130 --seq 10 --data $T/t.bin|EGG_CUDA_TCHUNK=4"
  "h256-l2-r4|--hidden 256 --layers 2 --rank 4 --pop 258 --seq 7"
  "h384-r1|--hidden 384 --layers 2 --rank 1 --pop 258 --seq 7"
  "h128-r1-mmp-3ctas-gemm-recurrence|--hidden 128 --layers 2 --rank 1 --pop 130 --seq 9|EGG_CUDA_MMP=3 EGG_CUDA_RCHUNK=0"
  "h96-r1-mmp-2ctas-chunked|--hidden 96 --layers 2 --rank 1 --pop 66 --seq 10|EGG_CUDA_MMP=2 EGG_CUDA_TCHUNK=3"
  "h256-r1-no-mmp-byte-ln|--hidden 256 --layers 2 --rank 1 --pop 130 --seq 6|EGG_CUDA_MMP=0 EGG_CUDA_LNVEC=0"
  "h1024-l1-r1|--hidden 1024 --layers 1 --rank 1 --pop 6 --seq 4"
  "h128-r1-multitile|--hidden 128 --layers 2 --rank 1 --pop 1024 --seq 20"
  "h256-r1-gemm-recurrence|--hidden 256 --layers 2 --rank 1 --pop 194 --seq 7|EGG_CUDA_RCHUNK=0"
  "h128-r1-rchunk-chunked-resets|--hidden 128 --layers 2 --rank 1 --pop 130 --seq 9 --data $T/t.bin|EGG_CUDA_TCHUNK=4"
  "h256-r1-rchunk-2-row-blocks-per-sm|--hidden 256 --layers 1 --rank 1 --pop 8704 --seq 5|EGG_CUDA_TCHUNK=2"
  "h160-r1-mmp-cp-async-loader|--hidden 160 --layers 2 --rank 1 --pop 258 --seq 6|EGG_CUDA_TMA=0 EGG_CUDA_MMP=5"
  "h256-r1-vectors-perturbed-in-kernels|--hidden 256 --layers 2 --rank 1 --pop 130 --seq 6|EGG_CUDA_LNPERT=0"
  "h128-r1-sigma6-pert-shift-10|--hidden 128 --layers 2 --rank 1 --pop 130 --seq 8 --sigma-shift 6"
  "h256-r1-sigma0-pert-shift-4|--hidden 256 --layers 2 --rank 1 --pop 194 --seq 6 --sigma-shift 0"
  "h256-r1-rchunk-separate-ln2|--hidden 256 --layers 2 --rank 1 --pop 130 --seq 7|EGG_CUDA_LN2FUSE=0"
  "h256-r1-noise-by-tma-gemm-recurrence|--hidden 256 --layers 2 --rank 1 --pop 384 --seq 7|EGG_CUDA_RCHUNK=0 EGG_CUDA_MMP=3"
  "h128-r1-mmp-not-warp-specialised|--hidden 128 --layers 2 --rank 1 --pop 256 --seq 6|EGG_CUDA_WS=0"
  "h32-r1-65537-pairs-beyond-grid-y|--hidden 32 --layers 1 --rank 1 --pop 131074 --seq 3"
  "h160-r1-warp-specialised-partial-tiles|--hidden 160 --layers 2 --rank 1 --pop 256 --seq 5"
  "h256-r1-sigma5-warp-specialised-pert-shift-9|--hidden 256 --layers 2 --rank 1 --pop 256 --seq 5 --sigma-shift 5"
  "h256-r1-rchunk-staged-pass|--hidden 256 --layers 2 --rank 1 --pop 194 --seq 7|EGG_CUDA_RREG=0 EGG_CUDA_TCHUNK=3"
  "h128-r1-rchunk-staged-pass|--hidden 128 --layers 2 --rank 1 --pop 130 --seq 8|EGG_CUDA_RREG=0"
  "h128-r1-sigma2-pert-shift-6|--hidden 128 --layers 2 --rank 1 --pop 130 --seq 7 --sigma-shift 2"
  "h128-r1-gemm-staged-epilogue|--hidden 128 --layers 2 --rank 1 --pop 256 --seq 6|EGG_CUDA_WPERM=0"
  "h256-r1-sigma2-row-blocks-3ctas|--hidden 256 --layers 2 --rank 1 --pop 384 --seq 6 --sigma-shift 2|EGG_CUDA_MMP=3"
  "h128-r1-row-blocks-2ctas-one-n-tile|--hidden 128 --layers 2 --rank 1 --pop 256 --seq 7|EGG_CUDA_MMP=2 EGG_CUDA_TCHUNK=3"
  "h256-r1-w-streamed-3ctas|--hidden 256 --layers 2 --rank 1 --pop 384 --seq 6|EGG_CUDA_RESW=0 EGG_CUDA_MMP=3"
  "h256-r1-gemm-tile-at-a-time|--hidden 256 --layers 2 --rank 1 --pop 256 --seq 6|EGG_CUDA_XRES=0 EGG_CUDA_WIDE=0"
  "h128-r1-wf-wh-a-launch-each|--hidden 128 --layers 2 --rank 1 --pop 256 --seq 6|EGG_CUDA_DUAL=0"
  "h128-r1-wf-wh-one-launch-3ctas|--hidden 128 --layers 2 --rank 1 --pop 384 --seq 7 --sigma-shift 5|EGG_CUDA_MMP=3"
  "h96-r2-update-gemm-per-matrix|--hidden 96 --layers 2 --rank 2 --pop 130 --seq 6|EGG_CUDA_UGROUP=0"
  "h256-r1-mlp-two-gemms|--hidden 256 --layers 2 --rank 1 --pop 256 --seq 6|EGG_CUDA_FMLP=0"
  "h128-r1-sigma5-mlp-two-gemms|--hidden 128 --layers 2 --rank 1 --pop 256 --seq 6 --sigma-shift 5|EGG_CUDA_FMLP=0"
  "h256-r1-sigma0-mlp-fused-3ctas|--hidden 256 --layers 2 --rank 1 --pop 384 --seq 5 --sigma-shift 0|EGG_CUDA_MMP=3"
  "h256-r1-update-allreduce|--hidden 256 --layers 2 --rank 1 --pop 256 --seq 6 --update allreduce"
  "h256-r1-parts-2|--hidden 256 --layers 2 --rank 1 --pop 256 --seq 7|EGG_CUDA_PARTS=2 EGG_CUDA_TCHUNK=3"
  "h128-r1-parts-4|--hidden 128 --layers 2 --rank 1 --pop 512 --seq 6|EGG_CUDA_PARTS=4"
  "h96-r2-parts-2|--hidden 96 --layers 2 --rank 2 --pop 260 --seq 6|EGG_CUDA_PARTS=2"
  "h128-r1-parts-2-noise-reuse|--hidden 128 --layers 2 --rank 1 --pop 264 --seq 6 --noise-reuse 2|EGG_CUDA_PARTS=2"
  "h96-r2-norm-update-allreduce-per-matrix|--hidden 96 --layers 2 --rank 2 --pop 130 --seq 6 --fitness norm --update allreduce|EGG_CUDA_UGROUP=0"
  "h128-r1-noise-4-values-a-thread|--hidden 128 --layers 2 --rank 1 --pop 264 --seq 6|EGG_CUDA_NOISEW=0"
  "h128-r3-noise-a-value-a-thread|--hidden 128 --layers 2 --rank 3 --pop 130 --seq 6 --data $T/t.bin|EGG_CUDA_NOISEW=0"
  "h256-r1-update-operands-an-entry-a-thread|--hidden 256 --layers 2 --rank 1 --pop 258 --seq 6|EGG_CUDA_OPS4=0"
  "h96-r3-update-operands-a-column-a-thread|--hidden 96 --layers 2 --rank 3 --pop 130 --seq 6|EGG_CUDA_OPS4=0"
  "h256-r1-update-operands-16-row-blocks|--hidden 256 --layers 2 --rank 1 --pop 258 --seq 6|EGG_CUDA_OPS4=1"
  "h96-r4-update-operands-16-row-blocks|--hidden 96 --layers 2 --rank 4 --pop 130 --seq 6|EGG_CUDA_OPS4=1"
  # the threshold steps: four parameters a thread (upd_mapply4_kernel) by default, one (EGG_CUDA_MAPPLY4=0); about half
  # the parameters stepping (--alpha 0.5), or 0.2% (--threshold 50: words with one byte changed), and with --update allreduce
  "h256-r1-threshold-steps-half|--hidden 256 --layers 2 --rank 1 --pop 258 --seq 6 --alpha 0.5"
  "h128-r2-threshold-steps-few|--hidden 128 --layers 2 --rank 2 --pop 256 --seq 6 --threshold 50"
  "h256-r1-threshold-steps-a-parameter-a-thread|--hidden 256 --layers 2 --rank 1 --pop 258 --seq 6 --alpha 0.5|EGG_CUDA_MAPPLY4=0"
  "h96-r3-allreduce-threshold-steps-a-parameter-a-thread|--hidden 96 --layers 2 --rank 3 --pop 130 --seq 6 --update allreduce --alpha 0.5|EGG_CUDA_MAPPLY4=0"
  # EGG-LN with the members' perturbed weights walking each pair's timesteps (lnxb_kernel without T rows; members a multiple
  # of 128) at hidden 128, 256, 512, and in 16 lanes a row (EGG_CUDA_LNWALK=0: ln16_kernel)
  "h128-l3-r1-ln-walks-timesteps|--hidden 128 --layers 3 --rank 1 --pop 384 --seq 7"
  "h512-l2-r1-ln-walks-timesteps-chunked|--hidden 512 --layers 2 --rank 1 --pop 256 --seq 6 --data $T/t.bin|EGG_CUDA_TCHUNK=4"
  "h256-l3-r1-ln-a-row-16-lanes|--hidden 256 --layers 3 --rank 1 --pop 256 --seq 6|EGG_CUDA_LNWALK=0"
  # the embedding with layer 0's EGG-LN1 walking each pair's timesteps (members a multiple of 128): rank 3 at hidden 128 in
  # chunks with token-0 resets, rank 4 at 512; and a row a slot (EGG_CUDA_EMBWALK=0)
  "h128-r3-embedding-walks-timesteps-chunked|--hidden 128 --layers 2 --rank 3 --pop 256 --seq 7 --data $T/t.bin|EGG_CUDA_TCHUNK=3"
  "h512-r4-embedding-walks-timesteps|--hidden 512 --layers 1 --rank 4 --pop 256 --seq 5"
  "h256-r2-embedding-a-row-a-slot|--hidden 256 --layers 2 --rank 2 --pop 256 --seq 6|EGG_CUDA_EMBWALK=0"
  # the loss over more than 32 timesteps (its lanes take 32 at a time: three batches at seq 70, the last partial), at
  # vocabularies 128 and 256 (loss_rs_kernel; EGG_CUDA_LOSSRS=0: loss_vec_kernel), 512 (loss_vec_kernel) and 301 (loss_kernel)
  "h64-l2-r1-loss-seq70|--hidden 64 --layers 2 --rank 1 --pop 66 --seq 70"
  "h128-r2-loss-seq70|--hidden 128 --layers 1 --rank 2 --pop 66 --seq 70"
  "h64-r1-loss-tokens-v128-seq45|--hidden 64 --layers 1 --rank 1 --pop 40 --seq 45 --data $T/t128.bin"
  "h64-r2-loss-tokens-v512-seq45|--hidden 64 --layers 1 --rank 2 --pop 40 --seq 45 --data $T/t512.bin"
  "h64-r1-loss-by-butterflies-seq70|--hidden 64 --layers 1 --rank 1 --pop 40 --seq 70|EGG_CUDA_LOSSRS=0"
  "h64-r1-loss-by-butterflies-tokens-v128-seq45|--hidden 64 --layers 1 --rank 1 --pop 40 --seq 45 --data $T/t128.bin|EGG_CUDA_LOSSRS=0"
  "h64-r3-loss-tokens-v301-seq40|--hidden 64 --layers 1 --rank 3 --pop 34 --seq 40 --data $T/t.bin"
  # the vector tensors' votes four elements a thread by default (upd_vecs_kernel<4>), one (EGG_CUDA_VEC4=0)
  "h160-r2-vector-votes-an-element-a-thread|--hidden 160 --layers 2 --rank 2 --pop 130 --seq 6|EGG_CUDA_VEC4=0"
  "h96-r3-allreduce-vector-votes-an-element-a-thread|--hidden 96 --layers 2 --rank 3 --pop 130 --seq 6 --update allreduce --alpha 0.5|EGG_CUDA_VEC4=0"
  "h96-r3-allreduce-threshold-steps-few|--hidden 96 --layers 2 --rank 3 --pop 130 --seq 6 --update allreduce --threshold 50"
  "h128-r1-ln1-own-launch|--hidden 128 --layers 2 --rank 1 --pop 264 --seq 6|EGG_CUDA_EMBLN=0"
  "h256-r4-sigma0-embedding-pert-shift-4|--hidden 256 --layers 1 --rank 4 --pop 130 --seq 6 --sigma-shift 0"
  "h256-r1-sigma14-embedding-pert-shift-18|--hidden 256 --layers 1 --rank 1 --pop 130 --seq 6 --sigma-shift 14"
  "h512-r1-k512-row-blocks|--hidden 512 --layers 2 --rank 1 --pop 258 --seq 7 --data $T/t.bin|EGG_CUDA_TCHUNK=3"
  "h512-r1-sigma2-k512-row-blocks-3ctas|--hidden 512 --layers 2 --rank 1 --pop 1030 --seq 5 --sigma-shift 2|EGG_CUDA_MMP=3"
  "h512-r1-k512-tile-at-a-time|--hidden 512 --layers 2 --rank 1 --pop 258 --seq 6|EGG_CUDA_MMX512=0"
  "h512-r1-sigma5-down-256-column-tiles-3ctas|--hidden 512 --layers 1 --rank 1 --pop 386 --seq 5 --sigma-shift 5|EGG_CUDA_MMP=3"
  "h512-r1-down-128-column-tiles|--hidden 512 --layers 2 --rank 1 --pop 258 --seq 6|EGG_CUDA_WIDE=1"
  "h1024-r1-down-256-column-tiles-64-bit-products|--hidden 1024 --layers 1 --rank 1 --pop 256 --seq 4"
  "h1024-r1-sigma0-down-64-bit-products-3ctas|--hidden 1024 --layers 1 --rank 1 --pop 256 --seq 5 --sigma-shift 0|EGG_CUDA_MMP=3"
  "h768-r1-down-64-bit-products-chunked|--hidden 768 --layers 2 --rank 1 --pop 384 --seq 5 --data $T/t.bin|EGG_CUDA_TCHUNK=2"
  "h1024-r1-recurrence-gate-mix-epilogues|--hidden 1024 --layers 1 --rank 1 --pop 256 --seq 5|EGG_CUDA_RSPLIT=0"
  "h160-r2-recurrence-split-every-shape|--hidden 160 --layers 2 --rank 2 --pop 130 --seq 6|EGG_CUDA_RSPLIT=2"
  "h256-r1-recurrence-split-no-chunk-kernel|--hidden 256 --layers 2 --rank 1 --pop 194 --seq 7 --data $T/t.bin|EGG_CUDA_RCHUNK=0 EGG_CUDA_RSPLIT=2"
  "h512-r1-recurrence-cluster-2-clusters|--hidden 512 --layers 2 --rank 1 --pop 514 --seq 7 --data $T/t.bin|EGG_CUDA_RCLUS=2 EGG_CUDA_TCHUNK=3"
  "h384-r1-recurrence-cluster-3-clusters|--hidden 384 --layers 2 --rank 1 --pop 642 --seq 6 --data $T/t.bin|EGG_CUDA_RCLUS=3"
  "h512-r1-sigma0-recurrence-cluster|--hidden 512 --layers 1 --rank 1 --pop 130 --seq 5 --sigma-shift 0"
  "h384-r1-sigma6-recurrence-cluster|--hidden 384 --layers 1 --rank 1 --pop 256 --seq 5 --sigma-shift 6"
  "h512-r1-vectors-in-kernels-recurrence-per-timestep|--hidden 512 --layers 1 --rank 1 --pop 130 --seq 5|EGG_CUDA_LNPERT=0"
  "h512-r1-recurrence-per-timestep|--hidden 512 --layers 2 --rank 1 --pop 258 --seq 6|EGG_CUDA_RCLUS=0"
  "h768-r1-recurrence-split-vectors-in-kernels|--hidden 768 --layers 1 --rank 1 --pop 130 --seq 5|EGG_CUDA_LNPERT=0"
  "h256-l3-r2-recurrence-chunk-rank-2|--hidden 256 --layers 3 --rank 2 --pop 258 --seq 7"
  "h128-l2-r3-sigma5-recurrence-chunk-rank-3|--hidden 128 --layers 2 --rank 3 --pop 194 --seq 8 --sigma-shift 5"
  "h256-r4-sigma0-recurrence-chunk-rank-4-chunked|--hidden 256 --layers 2 --rank 4 --pop 130 --seq 7 --sigma-shift 0 --data $T/t.bin|EGG_CUDA_TCHUNK=3"
  # rank 3-4 at perturbation shift 8: a thread's two rows are one pair (rec_rows<true>); chunk edges, token-0 resets and a
  # partial last row block (194 members), and at hidden 128 two CTAs an SM with a partial block (322)
  "h256-r3-recurrence-chunk-a-thread-a-pair-chunked|--hidden 256 --layers 2 --rank 3 --pop 194 --seq 7 --data $T/t.bin|EGG_CUDA_TCHUNK=3"
  "h128-r4-recurrence-chunk-a-thread-a-pair|--hidden 128 --layers 2 --rank 4 --pop 322 --seq 6"
  # rank 2-4 where the fused MLP runs: the chunk recurrence without EGG-LN2, lnxb_kernel's LN2 with up's T rows (v138),
  # chunked with token-0 resets, at hidden 128 (rank 2) and at sigma-shift 5 (the generic epilogue); and the LN2 in the
  # recurrence with up's T rows from xb_kernel (EGG_CUDA_LN2XB=0)
  "h128-l2-r2-ln2-with-up-t-rows-chunked|--hidden 128 --layers 2 --rank 2 --pop 384 --seq 7 --data $T/t.bin|EGG_CUDA_TCHUNK=3"
  "h256-r4-sigma5-ln2-with-up-t-rows|--hidden 256 --layers 2 --rank 4 --pop 256 --seq 6 --sigma-shift 5"
  "h256-l2-r3-ln2-in-the-recurrence-chunked|--hidden 256 --layers 2 --rank 3 --pop 384 --seq 7 --data $T/t.bin|EGG_CUDA_LN2XB=0 EGG_CUDA_TCHUNK=3"
  # the same at hidden 512 in the cluster recurrence (v139): 2 clusters walking the row blocks, chunked with resets; and
  # its LN2 in the kernel (EGG_CUDA_LN2XB=0)
  "h512-l2-r2-cluster-recurrence-ln2-with-up-t-rows-chunked|--hidden 512 --layers 2 --rank 2 --pop 256 --seq 6 --data $T/t.bin|EGG_CUDA_TCHUNK=3 EGG_CUDA_RCLUS=2"
  "h512-r3-cluster-recurrence-ln2-in-the-kernel|--hidden 512 --layers 1 --rank 3 --pop 256 --seq 5|EGG_CUDA_LN2XB=0"
  "h256-r2-recurrence-per-timestep-rank-2|--hidden 256 --layers 2 --rank 2 --pop 194 --seq 6|EGG_CUDA_RREG=0"
  "h256-l2-r2-persistent-gemms-rank-2|--hidden 256 --layers 2 --rank 2 --pop 256 --seq 7|EGG_CUDA_FMLPR=0"
  "h256-r4-sigma0-persistent-gemms-mlp-fused-rank-4-3ctas|--hidden 256 --layers 2 --rank 4 --pop 384 --seq 5 --sigma-shift 0|EGG_CUDA_MMP=3"
  "h256-l2-r2-mlp-fused-rank-2-chunked|--hidden 256 --layers 2 --rank 2 --pop 256 --seq 7 --data $T/t.bin|EGG_CUDA_TCHUNK=3"
  "h256-r4-mlp-fused-rank-4|--hidden 256 --layers 1 --rank 4 --pop 384 --seq 5"
  "h256-l2-r2-ln1-with-t-rows-a-warp-walks-timesteps|--hidden 256 --layers 2 --rank 2 --pop 8704 --seq 5"
  "h256-l2-r3-sigma5-ln1-then-xb-kernel|--hidden 256 --layers 2 --rank 3 --pop 256 --seq 6 --sigma-shift 5|EGG_CUDA_LNXB=0"
  "h128-l3-r4-lns-with-t-rows-a-warp-walks-timesteps|--hidden 128 --layers 3 --rank 4 --pop 8704 --seq 5"
  "h512-l2-r3-lns-with-t-rows-a-warp-walks-timesteps|--hidden 512 --layers 2 --rank 3 --pop 4352 --seq 4"
  "h256-r3-sigma5-persistent-gemms-rank-3-mlp-two-gemms|--hidden 256 --layers 1 --rank 3 --pop 256 --seq 5 --sigma-shift 5|EGG_CUDA_FMLPR=0"
  "h128-r3-sigma5-persistent-gemms-rank-3|--hidden 128 --layers 2 --rank 3 --pop 256 --seq 6 --sigma-shift 5|EGG_CUDA_FMLPR=0"
  "h128-r3-sigma5-mlp-fused-rank-3-generic-epilogue|--hidden 128 --layers 2 --rank 3 --pop 256 --seq 6 --sigma-shift 5"
  "h128-r2-mlp-fused-rank-2|--hidden 128 --layers 2 --rank 2 --pop 256 --seq 6"
  "h128-r3-mlp-fused-rank-3|--hidden 128 --layers 2 --rank 3 --pop 256 --seq 6"
  "h128-r4-mlp-fused-rank-4|--hidden 128 --layers 2 --rank 4 --pop 384 --seq 5 --sigma-shift 5|EGG_CUDA_MMP=3"
  "h128-r4-mlp-fused-up-t-rows-from-xb-kernel|--hidden 128 --layers 2 --rank 4 --pop 256 --seq 6|EGG_CUDA_LN2XB=0"
  "h128-l2-r3-mlp-fused-chunked-resets|--hidden 128 --layers 2 --rank 3 --pop 384 --seq 7 --data $T/t.bin|EGG_CUDA_TCHUNK=3"
  "h128-r2-sigma5-mlp-fused-rank-2-3ctas|--hidden 128 --layers 2 --rank 2 --pop 384 --seq 5 --sigma-shift 5|EGG_CUDA_MMP=3"
  "h128-r2-persistent-gemms-down-128-column-tiles|--hidden 128 --layers 2 --rank 2 --pop 256 --seq 6|EGG_CUDA_FMLPR=0"
  "h512-r4-persistent-gemms-k512-32-bit-chunked|--hidden 512 --layers 1 --rank 4 --pop 256 --seq 5 --data $T/t.bin|EGG_CUDA_TCHUNK=2"
  "h1024-r2-persistent-gemms-k1024-4096-64-bit|--hidden 1024 --layers 1 --rank 2 --pop 128 --seq 4"
  "h768-r3-persistent-gemms-k768-3072-generic-xb|--hidden 768 --layers 1 --rank 3 --pop 128 --seq 4"
  "h256-r3-persistent-gemms-mlp-fused-parts-2|--hidden 256 --layers 2 --rank 3 --pop 512 --seq 5|EGG_CUDA_PARTS=2"
  "h384-r2-persistent-gemms-down-128-column-tiles|--hidden 384 --layers 1 --rank 2 --pop 256 --seq 4"
  "h256-r2-gemms-rank-2-in-mm-kernel|--hidden 256 --layers 2 --rank 2 --pop 256 --seq 6|EGG_CUDA_RGEMM=0"
  "h256-r3-mlp-fused-row-blocks-in-row-order-3ctas|--hidden 256 --layers 2 --rank 3 --pop 384 --seq 6|EGG_CUDA_TORD=0 EGG_CUDA_MMP=3"
  "h512-r2-recurrence-cluster-rank-2-2-clusters-chunked|--hidden 512 --layers 2 --rank 2 --pop 514 --seq 7 --data $T/t.bin|EGG_CUDA_RCLUS=2 EGG_CUDA_TCHUNK=3"
  "h384-r3-sigma0-recurrence-cluster-rank-3-k384-3ctas|--hidden 384 --layers 2 --rank 3 --pop 640 --seq 5 --sigma-shift 0|EGG_CUDA_MMP=3"
  "h512-r4-sigma6-recurrence-cluster-rank-4|--hidden 512 --layers 1 --rank 4 --pop 258 --seq 6 --sigma-shift 6"
  "h384-r4-recurrence-cluster-rank-4-3-clusters|--hidden 384 --layers 1 --rank 4 --pop 384 --seq 6 --data $T/t.bin|EGG_CUDA_RCLUS=3"
  "h384-r2-recurrence-per-timestep-rank-2-k384-mm-kernel|--hidden 384 --layers 1 --rank 2 --pop 256 --seq 5|EGG_CUDA_RCLUS=0 EGG_CUDA_MMX512=0"
  "h384-r1-k384-row-blocks-3ctas|--hidden 384 --layers 2 --rank 1 --pop 384 --seq 6|EGG_CUDA_MMP=3"
  "h384-r1-sigma5-down-tile-at-a-time|--hidden 384 --layers 1 --rank 1 --pop 256 --seq 5 --sigma-shift 5|EGG_CUDA_WIDE=1"
  "h640-r1-down-k2560-64-bit-128-column-tiles|--hidden 640 --layers 1 --rank 1 --pop 128 --seq 4"
  "h640-r1-wf-wh-down-128-column-tiles-3ctas|--hidden 640 --layers 1 --rank 1 --pop 256 --seq 4|EGG_CUDA_MMP=3 EGG_CUDA_MMDODD=0"
  "h640-r1-sigma5-recurrence-split-k640-128-column-tiles|--hidden 640 --layers 2 --rank 1 --pop 130 --seq 5 --sigma-shift 5|EGG_CUDA_RSPLIT=2"
  "h384-r2-vectors-in-kernels-recurrence-per-timestep|--hidden 384 --layers 1 --rank 2 --pop 256 --seq 5|EGG_CUDA_LNPERT=0"
  "h640-r2-recurrence-gate-mix-epilogues-rank-2|--hidden 640 --layers 1 --rank 2 --pop 128 --seq 4|EGG_CUDA_RCLUS640=0"
  "h768-r4-recurrence-split-rank-4|--hidden 768 --layers 1 --rank 4 --pop 128 --seq 4"
  "h640-r2-ln-embedding-words-128-apart-vectors-in-kernels|--hidden 640 --layers 1 --rank 2 --pop 130 --seq 4|EGG_CUDA_LNPERT=0"
  "h768-r1-sigma0-ln-embedding-pairs-256-apart|--hidden 768 --layers 2 --rank 1 --pop 66 --seq 5 --sigma-shift 0"
  "h768-r3-byte-ln-embedding|--hidden 768 --layers 1 --rank 3 --pop 34 --seq 4|EGG_CUDA_LNVEC=0"
  "h896-r1-ln-embedding-words-128-apart-k896-128-column-tiles|--hidden 896 --layers 1 --rank 1 --pop 34 --seq 4"
  "h896-r2-sigma5-ln-embedding-words-vectors-in-kernels|--hidden 896 --layers 1 --rank 2 --pop 34 --seq 4 --sigma-shift 5|EGG_CUDA_LNPERT=0"
  "h640-r4-odd-n-256-column-tiles-rank-4-3ctas-recurrence-per-timestep|--hidden 640 --layers 1 --rank 4 --pop 256 --seq 4|EGG_CUDA_MMP=3 EGG_CUDA_RCLUS640=0"
  "h640-r4-sigma6-recurrence-cluster-rank-4-2-clusters-chunked|--hidden 640 --layers 2 --rank 4 --pop 258 --seq 6 --sigma-shift 6 --data $T/t.bin|EGG_CUDA_RCLUS=2 EGG_CUDA_TCHUNK=3"
  "h640-r1-recurrence-cluster-5-ctas-one-hg-buffer-2-clusters-chunked|--hidden 640 --layers 2 --rank 1 --pop 258 --seq 6 --data $T/t.bin|EGG_CUDA_RCLUS640=2 EGG_CUDA_RCLUS=2 EGG_CUDA_TCHUNK=3"
  "h640-r3-sigma0-recurrence-cluster-rank-3|--hidden 640 --layers 1 --rank 3 --pop 130 --seq 5 --sigma-shift 0"
  "h640-r2-recurrence-cluster-rank-2-2-clusters|--hidden 640 --layers 2 --rank 2 --pop 384 --seq 5|EGG_CUDA_RCLUS=2"
)
# and EGG_GPU_RANDOM (default 12) configs drawn at random over the issue's ranges from EGG_GPU_SEED (default 20261128,
# so that a run repeats; another seed draws other combinations): hidden 32..512 in steps of 32 (at most 3 layers from
# 384 up), layers 1..6, rank 1..4, even populations 2..700 (a third of them multiples of 128 up to 1280, whose noise
# rows come by TMA), seq 3..12, sign or norm fitness, group 2 or 4, noise reuse 1 or 2, sigma-shift 0, 2, 4, 5 or 6,
# the byte text or the 301-token file, and sometimes the timesteps in chunks of 2..5. A config's name is its draw.
seed=${EGG_GPU_SEED:-20261128}; nrand=${EGG_GPU_RANDOM:-12}
mapfile -t rcfgs < <(python3 - "$seed" "$nrand" "$T" <<'PY'
import random, sys
seed, n, T = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = random.Random(seed)
for i in range(n):
    H = 32 * rng.randint(1, 16)
    L = rng.randint(1, 3 if H >= 384 else 6)
    R = rng.randint(1, 4)
    G = 4 if rng.random() < 0.2 else 2
    if rng.random() < 1 / 3:
        P = 128 * rng.randint(1, 10)
    else:
        P = G * rng.randint(1, 700 // G)
    S = rng.randint(3, 12)
    fit = "norm" if rng.random() < 0.2 else "sign"
    reuse = 2 if rng.random() < 0.2 else 1
    sig = rng.choice([4, 4, 0, 2, 5, 6])
    tok = rng.random() < 0.2
    tch = rng.randint(2, 5) if rng.random() < 0.2 else 0
    name = "rand-%d-%d-h%d-l%d-r%d-p%d-s%d-%s-g%d-u%d-sig%d%s%s" % (seed, i, H, L, R, P, S, fit, G, reuse, sig,
                                                                  "-tokens" if tok else "", "-tchunk%d" % tch if tch else "")
    args = "--hidden %d --layers %d --rank %d --pop %d --seq %d --fitness %s --group %d --noise-reuse %d --sigma-shift %d" % (
        H, L, R, P, S, fit, G, reuse, sig)
    if tok:
        args += " --data %s/t.bin" % T
    print(name + "|" + args + ("|EGG_CUDA_TCHUNK=%d" % tch if tch else ""))
PY
)
configs+=("${rcfgs[@]}")
if [ -n "${GPU_ONLY:-}" ]; then # GPU_ONLY=regex: only the configs whose names match (a developer's quick run)
  sel=(); for cfg in "${configs[@]}"; do [[ ${cfg%%|*} =~ $GPU_ONLY ]] && sel+=("$cfg"); done; configs=("${sel[@]}")
fi
for gb in $gpus; do
  if ! $BIN --data "$T/c.txt" --hidden 32 --layers 1 --seq 4 --pop 2 --steps 0 --backend "$gb" >"$T/probe" 2>&1; then
    sk "$gb-device" "no usable $gb device: $(grep 'egg: error' "$T/probe" | head -1)"
    continue
  fi
  # the backend's input errors: exit 2, one "egg: error:" line naming what to change, no step run. A --device
  # past the visible GPUs; a config whose device memory cannot fit (EGG-1024x32 at 2^19 members, which the int32
  # votes still allow: ~220 GB of noise alone), whose error says how much it needs and what to lower
  for e in "device-out-of-range|--device 99|--device 99: only" \
           "memory-does-not-fit|--hidden 1024 --layers 32 --pop 524288|of device memory but"; do
    en=${e%%|*}; rest=${e#*|}; eargs=${rest%%|*}; want=${rest#*|}
    # shellcheck disable=SC2086
    $BIN --data "$T/c.txt" --seq 4 --steps 1 --backend "$gb" $eargs >"$T/e_out" 2>"$T/e_err"; rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$T/e_err")" -eq 1 ] && grep -q '^egg: error: ' "$T/e_err" && grep -qF -- "$want" "$T/e_err" &&
       ! grep -aq '^step ' "$T/e_out"; then ok "$gb-error-$en"
    else bad "$gb-error-$en" "exit $rc, stderr: $(head -c 300 "$T/e_err" | tr '\n' '|')"; fi
  done
  # one process on a GPU runs the --hang-timeout watchdog too: a step that stops (a hidden test flag sleeps 5 s in
  # step 3) ends the run after the 1 s limit, exit 1, one line
  $BIN --data "$T/c.txt" --hidden 64 --layers 1 --seq 8 --pop 64 --steps 6 --backend "$gb" --hang-timeout 1 \
    --test-sleep-step 3 --test-sleep-ms 5000 >"$T/h_out" 2>"$T/h_err"; rc=$?
  if [ $rc -eq 1 ] && grep -q "^egg: error: rank 0: no progress for [0-9]* s after step 3 (--hang-timeout 1)" "$T/h_err" &&
     ! grep -aq '^egg: done' "$T/h_out"; then ok "$gb-hang-timeout-one-process"
  else bad "$gb-hang-timeout-one-process" "exit $rc, stderr: $(head -c 300 "$T/h_err" | tr '\n' '|')"; fi
  # 64 members leave a GPU idle: the start-up says so and names the population that fills it; 8192 members (the
  # note's figure) print no note
  $BIN --data "$T/c.txt" --hidden 64 --layers 1 --seq 4 --pop 64 --steps 0 --backend "$gb" >"$T/n64" 2>&1; rc=$?
  $BIN --data "$T/c.txt" --hidden 64 --layers 1 --seq 4 --pop 8192 --steps 0 --backend "$gb" >"$T/n8k" 2>&1; rc2=$?
  if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && ! grep -q '^egg: note:' "$T/n8k" &&
     grep -q "^egg: note: 64 members per GPU leave $gb mostly idle; it reaches full speed from about 8192 members per GPU (--pop 8192 on 1 GPU)$" "$T/n64"; then
    ok "$gb-small-population-note"
  else bad "$gb-small-population-note" "pop 64 (exit $rc): '$(grep '^egg: note' "$T/n64")'; pop 8192 (exit $rc2): '$(grep '^egg: note' "$T/n8k")'"; fi
  # the byte-lane helpers (the recurrence's gate and mix, the fused MLP's residual add) against the CPU reference,
  # every int8 input (build/cuda_lanes: built by make wherever nvcc is found)
  if [ "$gb" = cuda ]; then
    if [ -x build/cuda_lanes ]; then
      build/cuda_lanes >"$T/lanes" 2>&1; rc=$?
      if [ $rc -eq 0 ]; then ok cuda-lanes-exhaustive
      elif [ $rc -eq 77 ]; then sk cuda-lanes-exhaustive "$(cat "$T/lanes")"
      else bad cuda-lanes-exhaustive "$(tail -1 "$T/lanes")"; fi
    else sk cuda-lanes-exhaustive "build/cuda_lanes not built (make builds it where nvcc is found)"; fi
  fi
  # --bench's int8 rate against the two 8192^3 GEMMs it times: mma_peak_tops (the persistent kernel's own) and
  # blas_peak_tops (cuBLAS, loaded at run time): each pct_of_* must be 100 int8_tops / its peak, and where Python's
  # ctypes can load libcublas (the names egg tries) the cuBLAS rate must be there, else "blas_peak_tops=none" with
  # the reason on its own line. GPU_ONLY: where it matches "bench-rates"
  if [ "$gb" = cuda ] && { [ -z "${GPU_ONLY:-}" ] || [[ bench-rates =~ $GPU_ONLY ]]; }; then
    $BIN --data "$T/c.txt" --hidden 128 --layers 2 --seq 32 --pop 8192 --bench --steps 2 --backend cuda >"$T/bench" 2>&1; rc=$?
    msg=$(python3 - "$T/bench" "$rc" <<'PY'
import ctypes, re, sys
out = open(sys.argv[1]).read()
lines = [l for l in out.splitlines() if l.startswith("egg: bench forward_tok_per_s=")]
if sys.argv[2] != "0" or len(lines) != 1:
    sys.exit("exit %s, %d rate lines: %s" % (sys.argv[2], len(lines), out.strip().splitlines()[-1:]))
f = dict(re.findall(r"(\w+)=(\S+)", lines[0]))
def pct(key, peak):
    want = 100.0 * float(f["int8_tops"]) / float(f[peak])
    if abs(float(f[key].rstrip("%")) - want) > 0.051: sys.exit("%s=%s, not 100 int8_tops / %s = %.2f" % (key, f[key], peak, want))
if not 50 < float(f.get("mma_peak_tops", 0)) < 20000: sys.exit("mma_peak_tops=%s" % f.get("mma_peak_tops"))
pct("pct_of_peak", "mma_peak_tops")
have = False
for nm in ("libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so"):
    try: ctypes.CDLL(nm); have = True; break
    except OSError: pass
b = f.get("blas_peak_tops")
if have:
    if b is None or b == "none" or not 50 < float(b) < 20000: sys.exit("libcublas loads here but blas_peak_tops=%s: %s" % (b, out.strip().splitlines()[-2:]))
    pct("pct_of_blas", "blas_peak_tops")
elif b != "none" or "egg: bench: no cuBLAS reference rate: " not in out:
    sys.exit("no libcublas here, but blas_peak_tops=%s and no reason line" % b)
print("mma %s, cuBLAS %s TOPS" % (f["mma_peak_tops"], b))
PY
)
    if [ $? -eq 0 ]; then ok "cuda-bench-rates"; echo "  ($msg)"; else bad cuda-bench-rates "$msg"; fi
    # EGG_CUDA_BLAS=0: as where cuBLAS is missing, the field says none and a line says why; the run itself succeeds
    EGG_CUDA_BLAS=0 $BIN --data "$T/c.txt" --hidden 64 --layers 1 --seq 16 --pop 256 --bench --steps 2 --backend cuda >"$T/bench0" 2>&1; rc=$?
    if [ $rc -eq 0 ] && grep -q '^egg: bench forward_tok_per_s=.* mma_peak_tops=[0-9.]* pct_of_peak=[0-9.]*% blas_peak_tops=none$' "$T/bench0" &&
       grep -qx 'egg: bench: no cuBLAS reference rate: EGG_CUDA_BLAS=0' "$T/bench0"; then ok cuda-bench-rates-no-blas
    else bad cuda-bench-rates-no-blas "exit $rc: $(grep '^egg: bench' "$T/bench0" | tail -2 | tr '\n' '|')"; fi
  fi
  # repeatability at full scale, 32768 members: three runs with the kernels serialised (EGG_PROFILE, where a TMA refill
  # racing a thread's last shared-memory reads showed most: EGG-256x6 at rank 4 gave another checksum in 4 of 6 such
  # runs of 16 steps before the proxy fences of mbar_release_read) and one real run: the same weights every time.
  # EGG-256x6 at rank 4 and 3 (mmx_kernel's A-row ring, the fused MLP); hidden 640 at rank 1 (the recurrence per
  # timestep: mmp_kernel's gate and mix GEMMs, x . B by per-thread dot products over TMA-loaded stages); hidden 512 at
  # rank 4 and 384 at rank 1 (rclus_kernel: st.async between a cluster's CTAs), 640 at rank 4 (rclus_kernel with h and
  # g in one buffer). GPU_ONLY: only where it matches "repeatable"
  if [ "$gb" = cuda ] && { [ -z "${GPU_ONLY:-}" ] || [[ repeatable =~ $GPU_ONLY ]]; }; then
    reps=("256x6-rank-4|--hidden 256 --layers 6 --rank 4 --steps 16" "256x6-rank-3|--hidden 256 --layers 6 --rank 3 --steps 16"
      "640x2-rank-1|--hidden 640 --layers 2 --rank 1 --steps 8" "512x4-rank-4|--hidden 512 --layers 4 --rank 4 --steps 8"
      "384x2-rank-1|--hidden 384 --layers 2 --rank 1 --steps 8" "640x2-rank-4|--hidden 640 --layers 2 --rank 4 --steps 8")
    for rep in "${reps[@]}"; do
      rn=${rep%%|*}; rargs=${rep#*|}; sums=""
      for k in 1 2 3 4; do
        pe=1; [ "$k" = 4 ] && pe=0
        # shellcheck disable=SC2086
        EGG_PROFILE=$pe $BIN --data "$T/c.txt" $rargs --seq 100 --pop 32768 --bench --backend cuda >"$T/rep" 2>&1
        s=$(csum "$T/rep")
        sums="$sums ${s:-none}"
      done
      # shellcheck disable=SC2086
      if [ "$(printf '%s\n' $sums | sort -u | wc -l)" -eq 1 ] && ! echo "$sums" | grep -q none; then
        ok "cuda-repeatable-$rn"
      elif grep -q '^egg: error: .*of device memory but' "$T/rep"; then # a GPU too small for 32768 members of it
        sk "cuda-repeatable-$rn" "$(grep '^egg: error' "$T/rep" | head -1)"
      else bad "cuda-repeatable-$rn" "checksums ($rargs; 3 serialised, 1 real):$sums; $(grep '^egg: error' "$T/rep" | head -1)"; fi
    done
  fi
  # compute-sanitizer over one small step (and the closing validation) of each kernel family: racecheck (shared-memory
  # hazards between a block's threads and a cluster's CTAs: it found the cluster recurrence's read-done ordering at
  # hidden 640, 16 hazards in rclus_kernel<640, 4> before e1f2a1c), synccheck (barriers), memcheck (out-of-bounds and
  # misaligned accesses) and initcheck (reads of device memory never written: padding, a partial tile's rows, 130
  # members at hidden 64). Each must report 0 hazards / 0 errors and end with the CPU's checksum. Configs: hidden 256
  # at rank 1 and 4 (the fused MLP, mmx_kernel's A-row ring, rreg_kernel, lnxb_kernel), 128 at rank 2, 1 and 4 (the
  # fused MLP at 128: its rank 2-4 and rank <= 1 epilogues, rank 4's noise ring of three buffers), the cluster
  # recurrence at 640 (rank 4, and rank 1 by EGG_CUDA_RCLUS640=2), 512 rank 4 and 384 rank 2, hidden 640 rank 1 (the
  # per-timestep GEMMs, mmp_kernel), 1024 rank 2 (the split recurrence). GPU_ONLY: only the runs whose
  # "sanitizer-TOOL-NAME" it matches (GPU_ONLY=sanitizer: all of them)
  if [ "$gb" = cuda ]; then
    CS=$(cuda_tool compute-sanitizer)
    if [ -z "$CS" ]; then sk cuda-sanitizer "compute-sanitizer not found (on PATH or in /usr/local/cuda/bin)"
    else
      # name | tools | args [| environment]
      sans=("256x2-rank-1|racecheck memcheck|--hidden 256 --layers 2 --rank 1 --pop 1280"
        "256x2-rank-4|racecheck synccheck initcheck|--hidden 256 --layers 2 --rank 4 --pop 1280"
        "128x2-rank-2|racecheck memcheck|--hidden 128 --layers 2 --rank 2 --pop 1280"
        "128x2-rank-1|racecheck memcheck|--hidden 128 --layers 2 --rank 1 --pop 1280"
        "128x2-rank-4|racecheck memcheck|--hidden 128 --layers 2 --rank 4 --pop 1280"
        "640-rank-4|racecheck synccheck memcheck initcheck|--hidden 640 --layers 1 --rank 4 --pop 1280"
        "640-rank-1-cluster|racecheck|--hidden 640 --layers 1 --rank 1 --pop 1280|EGG_CUDA_RCLUS640=2"
        "512-rank-4|racecheck memcheck|--hidden 512 --layers 1 --rank 4 --pop 1280"
        "384-rank-2|racecheck|--hidden 384 --layers 1 --rank 2 --pop 1280"
        "640-rank-1|racecheck|--hidden 640 --layers 1 --rank 1 --pop 1280"
        "1024-rank-2|racecheck memcheck initcheck|--hidden 1024 --layers 1 --rank 2 --pop 256"
        "64x3-rank-3-odd|initcheck|--hidden 64 --layers 3 --rank 3 --pop 130")
      for sa in "${sans[@]}"; do
        sn=${sa%%|*}; rest=${sa#*|}; tools=${rest%%|*}; sargs=${rest#*|}; senv=
        case "$sargs" in *"|"*) senv=${sargs#*|}; sargs=${sargs%%|*};; esac
        stools=""
        for tool in $tools; do
          if [ -z "${GPU_ONLY:-}" ] || [[ sanitizer-$tool-$sn =~ $GPU_ONLY ]]; then stools="$stools $tool"; fi
        done
        [ -n "$stools" ] || continue
        sc="--data $T/c.txt $sargs --seq 8 --steps 1 --val-every 0 --val-windows 2 --val-len 16 --threads 2"
        # shellcheck disable=SC2086
        $BIN $sc --backend cpu >"$T/san_cpu" 2>&1
        a=$(csum "$T/san_cpu")
        for tool in $stools; do
          # shellcheck disable=SC2086
          env $senv timeout -k 10 "$gtl" "$CS" --tool "$tool" --error-exitcode 3 --print-limit 10 $BIN $sc --backend cuda >"$T/san" 2>&1; rc=$?
          b=$(csum "$T/san")
          if [ "$tool" = racecheck ]; then want="RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"; else want="ERROR SUMMARY: 0 errors"; fi
          if [ $rc -eq 0 ] && grep -qF "$want" "$T/san" && [ -n "$a" ] && [ "$a" = "$b" ]; then ok "cuda-$tool-$sn"
          else bad "cuda-$tool-$sn" "exit $rc, $(grep -E 'SUMMARY' "$T/san" | head -1), checksum cpu=$a cuda=$b; first report: $(grep -m1 -E '^========= (Error|Warning|Race|Invalid)' "$T/san")"; fi
        done
      done
    fi
  fi
  # the NVTX ranges that tools/gpu_roofline.sh profiles by (Nsight Compute's --nvtx-include): a step's launches hold the
  # update's and the noise's kernels, the closing validation's none of them. GPU_ONLY: where it matches "nvtx"
  if [ "$gb" = cuda ] && { [ -z "${GPU_ONLY:-}" ] || [[ nvtx =~ $GPU_ONLY ]]; }; then
    NCU=$(cuda_tool ncu)
    if [ -z "$NCU" ]; then sk cuda-nvtx-ranges "ncu (Nsight Compute) not found (on PATH or in /usr/local/cuda/bin)"
    elif ! $BIN --version | grep -q '^nvtx: step '; then bad cuda-nvtx-ranges "the binary has no NVTX ranges: $($BIN --version | grep '^nvtx')"
    else
      na="--data $T/c.txt --hidden 64 --layers 2 --seq 8 --pop 256 --steps 1 --val-every 0 --val-windows 2 --val-len 8 --backend cuda"
      for rg in step validate; do
        # shellcheck disable=SC2086
        timeout -k 10 "$gtl" "$NCU" --nvtx --nvtx-include "$rg/" --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
          --csv --page raw $BIN $na >"$T/nvtx_$rg" 2>&1
        python3 tools/ncu_bytes.py --names "$T/nvtx_$rg" 2>/dev/null | sed 's/^void //; s/<.*//' | tr '\n' ' ' >"$T/nvtx_$rg.k"
      done
      ks=$(cat "$T/nvtx_step.k"); kv=$(cat "$T/nvtx_validate.k")
      if [[ " $ks " == *" noise_kernel "* && " $ks " == *" upd_mapply"* && -n "$kv" && " $kv " != *" noise_kernel "* && " $kv " != *" upd_"* ]]; then
        ok cuda-nvtx-ranges
      else bad cuda-nvtx-ranges "step: $(echo $ks | wc -w) launches ($(echo $ks | tr ' ' '\n' | sort -u | tr '\n' ' ')); validate: $(echo $kv | wc -w) ($(echo $kv | tr ' ' '\n' | sort -u | tr '\n' ' ')); $(grep -m1 -i error "$T/nvtx_step")"; fi
    fi
  fi
  for cfg in "${configs[@]}"; do
    name=${cfg%%|*}; args=${cfg#*|}; genv=
    case "$args" in *"|"*) genv=${args#*|}; args=${args%%|*};; esac
    data="--data $T/c.txt"; case "$args" in *--data*) data="";; esac
    common="$data $args --steps 3 --val-every 0 --val-windows 5 --val-len 24 --threads 2 --sample-every 3 --sample-len 40 --prompt the"
    rm -f "$T/s_cpu" "$T/s_gpu"
    # shellcheck disable=SC2086
    $BIN $common --backend cpu --dump-scores "$T/s_cpu" >"$T/o_cpu" 2>&1; rc1=$?
    # a GPU run that does not end within EGG_GPU_TEST_TIMEOUT seconds (a kernel that never finishes: a pipeline waiting
    # for a stage nobody fills) fails its config instead of stalling the suite
    # shellcheck disable=SC2086
    env $genv timeout -k 10 "$gtl" $BIN $common --backend "$gb" --dump-scores "$T/s_gpu" >"$T/o_gpu" 2>&1; rc2=$?
    if [ $rc2 -eq 124 ] || [ $rc2 -eq 137 ]; then bad "$gb-$name" "the $gb run did not end within $gtl s (EGG_GPU_TEST_TIMEOUT): a hung kernel?"; continue; fi
    if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then bad "$gb-$name" "exit codes cpu=$rc1 $gb=$rc2: $(tail -1 "$T/o_gpu")"; continue; fi
    if ! cmp -s "$T/s_cpu" "$T/s_gpu"; then
      bad "$gb-$name-scores" "per-member scores differ: $(python3 -c "
import struct,sys
a=open('$T/s_cpu','rb').read(); b=open('$T/s_gpu','rb').read()
x=struct.unpack('<%di'%(len(a)//4),a); y=struct.unpack('<%di'%(len(b)//4),b)
d=[i for i in range(min(len(x),len(y))) if x[i]!=y[i]]
print('len %d vs %d, %d differ, first at %s: cpu %s gpu %s' % (len(x),len(y),len(d), d[0] if d else '-', x[d[0]] if d else '-', y[d[0]] if d else '-'))")"
    else ok "$gb-$name-scores"; fi
    l1=$(grep -a '^egg: done' "$T/o_cpu"); l2=$(grep -a '^egg: done' "$T/o_gpu")
    c1=$(echo "$l1" | sed 's/.*checksum=\([0-9a-f]*\).*/\1/'); c2=$(echo "$l2" | sed 's/.*checksum=\([0-9a-f]*\).*/\1/')
    [ -n "$c1" ] && [ "$c1" = "$c2" ] && ok "$gb-$name-weights" || bad "$gb-$name-weights" "checksum cpu=$c1 $gb=$c2"
    # the share of parameters each step moved (the threshold steps' count of changed weights)
    g1=$(grep -a '^step ' "$T/o_cpu" | sed -n 's/.* changed \([0-9.]*%\).*/\1/p' | tr '\n' ' ')
    g2=$(grep -a '^step ' "$T/o_gpu" | sed -n 's/.* changed \([0-9.]*%\).*/\1/p' | tr '\n' ' ')
    [ -n "$g1" ] && [ "$g1" = "$g2" ] && ok "$gb-$name-changed" || bad "$gb-$name-changed" "changed per step cpu='$g1' $gb='$g2'"
    v1=$(echo "$l1" | sed 's/.*val_bpb=\([^ ]*\).*/\1/'); v2=$(echo "$l2" | sed 's/.*val_bpb=\([^ ]*\).*/\1/')
    [ -n "$v1" ] && [ "$v1" = "$v2" ] && ok "$gb-$name-val" || bad "$gb-$name-val" "val cpu=$v1 $gb=$v2"
    if diff <(grep -a '^egg: sample' "$T/o_cpu") <(grep -a '^egg: sample' "$T/o_gpu") >/dev/null; then ok "$gb-$name-sample"
    else bad "$gb-$name-sample" "sampled text differs"; fi
  done
  # resume across backends: cpu 2 steps + checkpoint, gpu resumes to 4 == cpu straight 4
  base="--data $T/c.txt --hidden 64 --layers 2 --pop 130 --seq 10 --val-every 0 --threads 2"
  rm -rf "$T/ck"
  smp="--temperature 0 --prompt the --sample-len 40"
  # shellcheck disable=SC2086
  $BIN $base --steps 4 --backend cpu --sample-every 4 $smp >"$T/r1" 2>&1
  # shellcheck disable=SC2086
  $BIN $base --steps 2 --backend cpu --checkpoint-dir "$T/ck" >"$T/r2" 2>&1
  # shellcheck disable=SC2086
  $BIN $base --steps 4 --backend "$gb" --checkpoint-dir "$T/ck" --resume latest >"$T/r3" 2>&1
  a=$(csum "$T/r1"); b=$(csum "$T/r3")
  [ -n "$a" ] && [ "$a" = "$b" ] && ok "$gb-resume-from-cpu" || bad "$gb-resume-from-cpu" "straight cpu=$a resumed $gb=$b"
  # the GPU's checkpoint of step 4 resumed at that step (no step runs) samples the loaded weights: greedy, the CPU
  # straight run's sample at step 4
  # shellcheck disable=SC2086
  $BIN $base --steps 4 --backend "$gb" --checkpoint-dir "$T/ck" --resume latest --sample-every 1 $smp >"$T/r4" 2>&1
  a=$(grep -a '^egg: sample step=4' "$T/r1"); b=$(grep -a '^egg: sample ' "$T/r4")
  [ -n "$a" ] && [ "$a" = "$b" ] && ok "$gb-sample-from-checkpoint" || bad "$gb-sample-from-checkpoint" "cpu '$a', $gb resumed '$b'"
  # two MPI ranks on this GPU (MPI exchange): each rank's update copies its own pairs' noise from its
  # eval's blob and hashes the other rank's; the weights must equal the one-process CPU run's
  # (both ranks see only the first visible GPU, also on a machine with several; the default --update auto is then
  # the replicated update, since ranks that share a GPU exchange through MPI)
  base="--data $T/c.txt --hidden 256 --layers 2 --pop 512 --seq 6 --steps 3 --val-every 0 --threads 2"; rm -f "$T/m2"
  if [ "$gb" = cuda ]; then vis="CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}"; else vis="HIP_VISIBLE_DEVICES=${HIP_VISIBLE_DEVICES:-0}"; fi
  vis=${vis%%,*}
  if command -v mpirun >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    env $vis OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
      mpirun --oversubscribe -x "${vis%%=*}" -np 2 $BIN $base --backend "$gb" >"$T/m2" 2>&1
  fi
  if [ -s "$T/m2" ] && grep -aq 'rank 0/2' "$T/m2"; then
    # shellcheck disable=SC2086
    $BIN $base --backend cpu >"$T/m1" 2>&1
    a=$(csum "$T/m1"); b=$(csum "$T/m2")
    if [ -n "$a" ] && [ "$a" = "$b" ] && grep -aq 'egg: update: replicated (auto: no NCCL' "$T/m2"; then ok "$gb-two-ranks-one-gpu"
    else bad "$gb-two-ranks-one-gpu" "cpu=$a 2 ranks $gb=$b ($(grep -a 'egg: update' "$T/m2" | cut -c1-60)): $(grep -a 'error' "$T/m2" | head -1)"; fi
  else sk "$gb-two-ranks-one-gpu" "no mpirun, or this build has no MPI"; fi
  # the same with --update allreduce: each rank votes with its own pairs, the votes summed by MPI
  if [ -s "$T/m2" ] && grep -aq 'rank 0/2' "$T/m2"; then
    # shellcheck disable=SC2086
    env $vis OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
      mpirun --oversubscribe -x "${vis%%=*}" -np 2 $BIN $base --backend "$gb" --update allreduce --check-every 1 >"$T/m3" 2>&1
    b=$(csum "$T/m3")
    if [ -n "$a" ] && [ "$a" = "$b" ] && grep -aq 'egg: update: allreduce' "$T/m3"; then ok "$gb-two-ranks-one-gpu-update-allreduce"
    else bad "$gb-two-ranks-one-gpu-update-allreduce" "cpu=$a 2 ranks $gb=$b: $(grep -a 'error' "$T/m3" | head -1)"; fi
  else sk "$gb-two-ranks-one-gpu-update-allreduce" "no mpirun, or this build has no MPI"; fi
done
finish
