set -u
python3 - <<'PY'
import random
random.seed(3)
w = "the of and to in a is that for it as was with be by on not he this are or his from at which".split()
open("/tmp/bench.txt", "w").write("\n".join(" ".join(random.choice(w) for _ in range(400000)) for _ in range(8)))
PY
B="--data /tmp/bench.txt --hidden 256 --layers 6 --seq 100 --pop 32768 --bench --steps 8 --backend cuda"
one() { local tag=$1; shift; r=$(env "$@" ./egg_mgpu $B 2>&1 | sed -n 's/.*bench pop_tok_per_s=\([0-9]*\).*/\1/p'); echo "$tag $(awk -v r="$r" 'BEGIN{printf "%.2f", r/1e6}')"; }
nvidia-smi -L; date -u
for v in PARTS=3 PARTS=5 PARTS=6 L2PF=0 LN2FUSE=0 EMBLN=0 LNPERT=0 RESW=0 XRES=0 WIDE=0; do
  one default X=1
  one "$v" "EGG_CUDA_$v"
done
one default X=1
date -u
