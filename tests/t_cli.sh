#!/usr/bin/env bash
# tests/t_cli.sh — the command line: bad input, flags, config files, output
# formats, signals and clean stops.
#
# Bad input (each case): exit status 2, exactly one stderr line, starting
# "egg: error:" and naming the file or flag at fault, and nothing written: the
# --log file stays absent and the --checkpoint-dir (an empty directory) stays
# empty. Then: --help, --version, --config (flags override it), the default
# input.txt pick-up, --backend cuda without a usable GPU, the final line's
# format, no GPU note on the CPU, --log JSON lines, SIGTERM mid-run, --time-limit, a resume whose
# --steps equals the checkpoint's step, and sampling such a resumed checkpoint.
# Prints one PASS/FAIL/SKIP line per check; exit 1 if any FAIL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHECKS="bad_missing_file bad_empty_file bad_short_file bad_corrupt_zst bad_truncated_zst bad_bin_token_ge_vocab
bad_odd_pop bad_hidden_not_mult32 bad_negative_steps bad_unknown_flag bad_stray_argument bad_update_mode bad_truncated_checkpoint
bad_checkpoint_other_config bad_checkpoint_checksum bad_resume_not_checkpoint bad_resume_latest_empty bad_config_key
bad_config_missing bad_config_directory bad_val_data_missing bad_no_default_data bad_checkpoint_dir help version config_file_and_override default_input_txt backend_cuda_unavailable
progress_off progress_on final_line_format cpu_no_gpu_note log_json_lines sigterm_clean_stop sigterm_checkpoint_resumes time_limit resume_at_final_step sample_from_checkpoint"
lib_init cli || skip_all "egg_mgpu not built (run make)" $CHECKS
for tool in python3 zstd; do command -v $tool >/dev/null || skip_all "$tool not found (run setup.sh)" $CHECKS; done

# ------------------------------------------------------------------ fixtures
gen_words d.txt 3000          # ~15 KB of small-vocabulary text
: >empty.txt
printf 'abcdefgh' >short.txt  # 8 bytes < --seq + 1
zstd -q -19 d.txt -o good.txt.zst
n=$(wc -c <good.txt.zst)
head -c $((n / 2)) good.txt.zst >trunc.txt.zst
cp good.txt.zst corrupt.txt.zst   # flip one byte in the middle of the compressed data
python3 - corrupt.txt.zst <<'EOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 0x55; open(p, 'wb').write(b)
EOF
python3 - badtok.bin <<'EOF'
import struct, sys
toks = bytes([i % 10 for i in range(200)]) + bytes([12]) + bytes(50)   # 12 >= vocab 10
open(sys.argv[1], 'wb').write(b'EGGTOKS\0' + struct.pack('<IIIIQ', 1, 1, 10, 0, len(toks)) + toks)
EOF

# a real checkpoint after 4 steps (and the checksum of that straight run)
run_egg ck0.out ck0.err --data d.txt "${TINY[@]}" --steps 4 --checkpoint-dir ck0
CK=$(ls ck0/ckpt_*.egg 2>/dev/null | tail -n 1)
CK4_SUM=$(checksum_of ck0.out)
if [ "$RC" -ne 0 ] || [ -z "$CK" ]; then
    echo "# t_cli: could not make a checkpoint (rc $RC): $(head -n 3 ck0.err)"
    CK=$W/missing.egg
fi
m=$(wc -c <"$CK" 2>/dev/null || echo 0)
head -c $((m / 2)) "$CK" >trunc.egg
cp "$CK" flipped.egg
python3 - flipped.egg <<'EOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 0x01; open(p, 'wb').write(b)
EOF
printf 'hidden = 64\nlayers = 1\nhiden = 3\n' >badkey.conf

# ---------------------------------------------------------------- bad input
# bad NAME WANT ARGS...: WANT is a substring the error line must contain.
bad() {
    local name=$1 want=$2; shift 2
    local d=$W/case_$name
    mkdir -p "$d/ck"
    "$EGG" "$@" --log "$d/log.jsonl" --checkpoint-dir "$d/ck" >"$d/out" 2>"$d/err"
    local rc=$? nerr
    nerr=$(wc -l <"$d/err")
    if [ "$rc" -ne 2 ]; then fail "$name" "exit $rc, want 2 (stderr: $(head -c 200 "$d/err"))"
    elif [ "$nerr" -ne 1 ]; then fail "$name" "$nerr stderr lines, want 1: $(head -c 300 "$d/err" | tr '\n' '|')"
    elif ! grep -q '^egg: error: ' "$d/err"; then fail "$name" "stderr does not start with 'egg: error:': $(cat "$d/err")"
    elif ! grep -qF -- "$want" "$d/err"; then fail "$name" "error does not name '$want': $(cat "$d/err")"
    elif [ -e "$d/log.jsonl" ]; then fail "$name" "--log file was created"
    elif ! dir_empty "$d/ck"; then fail "$name" "--checkpoint-dir not empty: $(ls -A "$d/ck" | tr '\n' ' ')"
    elif [ "$(ls -A "$d" | sort | tr '\n' ' ')" != "ck err out " ]; then fail "$name" "stray files: $(ls -A "$d" | tr '\n' ' ')"
    elif grep -q '^egg: done' "$d/out"; then fail "$name" "printed a final line"
    else pass "$name"
    fi
}
bad bad_missing_file nope.txt --data nope.txt "${TINY[@]}"
bad bad_empty_file empty.txt --data empty.txt "${TINY[@]}"
bad bad_short_file short.txt --data short.txt "${TINY[@]}"
bad bad_corrupt_zst corrupt.txt.zst --data corrupt.txt.zst "${TINY[@]}"
bad bad_truncated_zst trunc.txt.zst --data trunc.txt.zst "${TINY[@]}"
bad bad_bin_token_ge_vocab badtok.bin --data badtok.bin "${TINY[@]}"
bad bad_odd_pop --pop --data d.txt "${TINY[@]}" --pop 7
bad bad_hidden_not_mult32 --hidden --data d.txt "${TINY[@]}" --hidden 48
bad bad_negative_steps --steps --data d.txt "${TINY[@]}" --steps -5
bad bad_unknown_flag --frobnicate --data d.txt "${TINY[@]}" --frobnicate 3
bad bad_stray_argument stray --data d.txt "${TINY[@]}" stray
bad bad_update_mode --update --data d.txt "${TINY[@]}" --update sideways
bad bad_truncated_checkpoint trunc.egg --data d.txt "${TINY[@]}" --steps 8 --resume trunc.egg
bad bad_checkpoint_other_config hidden --data d.txt "${TINY[@]}" --steps 8 --resume "$CK" --hidden 64
bad bad_checkpoint_checksum flipped.egg --data d.txt "${TINY[@]}" --steps 8 --resume flipped.egg
bad bad_resume_not_checkpoint d.txt --data d.txt "${TINY[@]}" --steps 8 --resume d.txt
bad bad_resume_latest_empty latest --data d.txt "${TINY[@]}" --steps 8 --resume latest
bad bad_config_key hiden --config badkey.conf --data d.txt "${TINY[@]}"
bad bad_config_missing nope.conf --config nope.conf --data d.txt "${TINY[@]}"
mkdir -p conf.d
bad bad_config_directory conf.d --config conf.d --data d.txt "${TINY[@]}"
bad bad_val_data_missing "with --val-data" --data d.txt --val-data nope_val.txt "${TINY[@]}"
mkdir -p nodata
cd nodata && bad bad_no_default_data --data "${TINY[@]}"; cd "$W"
# a --checkpoint-dir that cannot be one fails at start-up (exit 2, before any step and the --log file), not at
# the first checkpoint: here a path below a regular file (mkdir fails), then a regular file
: >plain.file
why=""
for ckd in plain.file/ck plain.file; do
    rm -f ckd.jsonl
    "$EGG" --data d.txt "${TINY[@]}" --steps 3 --log ckd.jsonl --checkpoint-dir "$ckd" >ckd.out 2>ckd.err
    rc=$?
    if [ $rc -ne 2 ]; then why="--checkpoint-dir $ckd: exit $rc, want 2"
    elif [ "$(wc -l <ckd.err)" -ne 1 ] || ! grep -qF "egg: error: --checkpoint-dir $ckd: " ckd.err; then why="--checkpoint-dir $ckd: stderr '$(head -c 200 ckd.err)'"
    elif grep -q '^step ' ckd.out || [ -e ckd.jsonl ]; then why="--checkpoint-dir $ckd: ran steps or wrote --log"
    fi
    [ -n "$why" ] && break
done
if [ -n "$why" ]; then fail bad_checkpoint_dir "$why"; else pass bad_checkpoint_dir; fi

# ------------------------------------------------------------------- flags
"$EGG" --help >help.out 2>help.err
rc=$?
missing=""
for f in --data --val-data --hidden --layers --seq --pop --rank --steps --seed --threads --backend --simd --log \
         --checkpoint-dir --checkpoint-every --resume --time-limit --config --help --version; do
    grep -qE -- "^ +$f( |$)" help.out || missing="$missing $f"
done
if [ $rc -ne 0 ]; then fail help "exit $rc"
elif [ -n "$missing" ]; then fail help "not listed:$missing"
elif [ -s help.err ]; then fail help "wrote to stderr: $(head -c 200 help.err)"
else pass help
fi

"$EGG" --version >ver.out 2>ver.err
rc=$?
if [ $rc -ne 0 ]; then fail version "exit $rc"
elif ! grep -qE '^backends: cpu( |$)' ver.out; then fail version "no 'backends: cpu...' line: $(tr '\n' '|' <ver.out)"
elif grep -q '^backends:.* cuda' ver.out && [ -e "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/../include/nvtx3/nvToolsExt.h" ] &&
     ! grep -q '^nvtx: step ' ver.out; then fail version "built with CUDA whose toolkit has nvtx3, but no NVTX ranges: $(grep '^nvtx' ver.out)"
else pass version
fi

# --config: comments, quotes, underscores; a flag overrides the file
cat >small.conf <<'EOF'
# tiny model for the CLI test
data = "d.txt"
hidden = 64      # overrides the default 256
layers = 1
seq = 16
pop = 8
steps = 3
val_len = 32
val-windows = 4
threads = 1
EOF
run_egg conf.out conf.err --config small.conf --steps 2
if [ $RC -ne 0 ]; then fail config_file_and_override "exit $RC: $(head -c 200 conf.err)"
elif ! grep -q '^egg: config.* hidden=64 ' conf.out; then fail config_file_and_override "hidden=64 from the file not applied: $(grep '^egg: config' conf.out | head -c 300)"
elif ! grep -q '^egg: config.* steps=2 ' conf.out; then fail config_file_and_override "--steps 2 did not override steps = 3"
elif [ "$(field_of conf.out steps)" != 2 ]; then fail config_file_and_override "ran $(field_of conf.out steps) steps, want 2"
else pass config_file_and_override
fi

# default data: input.txt in the working directory
mkdir -p defdata && cp d.txt defdata/input.txt
(cd defdata && "$EGG" "${TINY[@]}" --steps 2 >../def.out 2>../def.err)
rc=$?
if [ $rc -ne 0 ]; then fail default_input_txt "exit $rc: $(head -c 200 def.err)"
elif ! grep -q 'input.txt' def.out || ! grep -qi 'using input.txt' def.out; then fail default_input_txt "the run does not say it uses input.txt"
elif ! final_line def.out | grep -qE "$FINAL_RE"; then fail default_input_txt "no final line"
else pass default_input_txt
fi

# --backend cuda without CUDA in the build, or without a visible GPU
if grep -q cuda ver.out && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    skip backend_cuda_unavailable "this machine has a CUDA build and a GPU"
else
    bad backend_cuda_unavailable cuda --data d.txt "${TINY[@]}" --backend cuda
fi

# --progress off: no progress bar, even on a terminal (script(1) gives a pty when present)
run_egg poff.out poff.err --data d.txt "${TINY[@]}" --steps 3 --progress off
if [ $RC -ne 0 ]; then fail progress_off "exit $RC: $(head -c 200 poff.err)"
elif grep -q 'ETA' poff.out; then fail progress_off "--progress off printed a progress bar: $(grep -m1 -o 'step [0-9]*/[0-9]* ETA' poff.out | head -n 1)"
elif command -v script >/dev/null 2>&1 &&
     script -qec "$EGG --data d.txt ${TINY[*]} --steps 3 --progress off" /dev/null 2>&1 | grep -q 'ETA'; then
    fail progress_off "--progress off printed a progress bar on a terminal"
else pass progress_off
fi
if command -v script >/dev/null 2>&1; then
    script -qec "$EGG --data d.txt ${TINY[*]} --steps 3 --progress on" /dev/null >pon.out 2>&1
    if grep -q 'ETA' pon.out; then pass progress_on; else fail progress_on "--progress on printed no progress bar on a terminal"; fi
else
    skip progress_on "script(1) not found (util-linux): no pseudo-terminal to test with"
fi

# the final line, exactly
run_egg fin.out fin.err --data d.txt "${TINY[@]}" --steps 3
line=$(final_line fin.out)
if [ $RC -ne 0 ]; then fail final_line_format "exit $RC: $(head -c 200 fin.err)"
elif ! [[ "$line" =~ $FINAL_RE ]]; then fail final_line_format "'$line' does not match $FINAL_RE"
elif [ "$(tail -n 1 fin.out)" != "$line" ]; then fail final_line_format "not the last line of stdout"
else pass final_line_format
fi

# the note on a population too small for a GPU is printed for GPUs only (make test-gpu checks it there)
run_egg nn.out nn.err --data d.txt "${TINY[@]}" --steps 1 --backend cpu
if [ $RC -ne 0 ]; then fail cpu_no_gpu_note "exit $RC: $(head -c 200 nn.err)"
elif grep -q '^egg: note:' nn.out nn.err; then fail cpu_no_gpu_note "$(grep -h '^egg: note:' nn.out nn.err | head -1)"
else pass cpu_no_gpu_note
fi

# --log: one JSON object per step
run_egg log.out log.err --data d.txt "${TINY[@]}" --steps 5 --val-every 2 --log run.jsonl
if [ $RC -ne 0 ]; then fail log_json_lines "exit $RC: $(head -c 200 log.err)"
else
    why=$(python3 - run.jsonl <<'EOF'
import json, math, sys
lines = open(sys.argv[1]).read().splitlines()
if len(lines) != 5: print(f"{len(lines)} lines, want 5"); sys.exit()
for i, l in enumerate(lines, 1):
    try: o = json.loads(l)
    except Exception as e: print(f"line {i} is not JSON: {e}: {l[:80]}"); sys.exit()
    if not isinstance(o, dict) or o.get("step") != i: print(f"line {i}: step {o.get('step')!r}, want {i}"); sys.exit()
    for k in ("train_bpb", "tok_per_s"):
        if not isinstance(o.get(k), (int, float)) or not math.isfinite(o[k]): print(f"line {i}: {k} = {o.get(k)!r}"); sys.exit()
    if (i % 2 == 0 or i == 5) and not isinstance(o.get("val_bpb"), (int, float)): print(f"line {i}: no val_bpb"); sys.exit()
EOF
)
    if [ -n "$why" ]; then fail log_json_lines "$why"; else pass log_json_lines; fi
fi

# SIGTERM mid-run: exit 0, "stopping" line, final line, a checkpoint of the step reached
mkdir -p sig
"$EGG" --data d.txt "${TINY[@]}" --steps 100000000 --print-every 50 --checkpoint-dir sig/ck >sig/out 2>sig/err &
pid=$!
LIB_BG="$LIB_BG $pid"
if wait_for sig/out '^step ' 30; then
    sleep 0.3
    kill -TERM $pid
    wait $pid
    rc=$?
else
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    rc=-1
fi
sig_steps=$(field_of sig/out steps)
sig_ck=$(ls sig/ck/ckpt_*.egg 2>/dev/null | tail -n 1)
if [ "$rc" -ne 0 ]; then fail sigterm_clean_stop "exit $rc (stderr: $(head -c 200 sig/err))"
elif ! grep -q '^egg: stopping after step .*SIGTERM' sig/out; then fail sigterm_clean_stop "no 'stopping after step ... (SIGTERM)' line"
elif ! final_line sig/out | grep -qE "$FINAL_RE"; then fail sigterm_clean_stop "no final line: $(tail -n 1 sig/out)"
elif [ -z "$sig_ck" ]; then fail sigterm_clean_stop "no checkpoint written to --checkpoint-dir"
elif [ "$(basename "$sig_ck")" != "$(printf 'ckpt_%010d.egg' "$sig_steps")" ]; then fail sigterm_clean_stop "checkpoint $(basename "$sig_ck") is not of the final step $sig_steps"
elif ls -A sig/ck | grep -q tmp; then fail sigterm_clean_stop "temporary file left: $(ls -A sig/ck | tr '\n' ' ')"
else pass sigterm_clean_stop
fi
# ... and that checkpoint resumes: same step count and checksum as a straight run
if [ -n "$sig_ck" ] && [ -n "$sig_steps" ]; then
    run_egg sigr.out sigr.err --data d.txt "${TINY[@]}" --steps $((sig_steps + 3)) --resume "$sig_ck"
    r_sum=$(checksum_of sigr.out)
    run_egg sigs.out sigs.err --data d.txt "${TINY[@]}" --steps $((sig_steps + 3))
    s_sum=$(checksum_of sigs.out)
    if [ -z "$r_sum" ]; then fail sigterm_checkpoint_resumes "resume failed: $(head -c 200 sigr.err)"
    elif [ "$r_sum" != "$s_sum" ]; then fail sigterm_checkpoint_resumes "resumed to step $((sig_steps + 3)): $r_sum, straight run $s_sum"
    else pass sigterm_checkpoint_resumes
    fi
else
    skip sigterm_checkpoint_resumes "no checkpoint from the SIGTERM run"
fi

# --time-limit stops cleanly
t0=$(now)
run_egg tl.out tl.err --data d.txt "${TINY[@]}" --steps 100000000 --time-limit 1
dt=$(elapsed "$t0")
if [ $RC -ne 0 ]; then fail time_limit "exit $RC: $(head -c 200 tl.err)"
elif ! grep -q '^egg: stopping after step .*time-limit' tl.out; then fail time_limit "no 'stopping after step ... (--time-limit)' line"
elif ! final_line tl.out | grep -qE "$FINAL_RE"; then fail time_limit "no final line"
elif awk -v t="$dt" 'BEGIN { exit !(t > 10) }'; then fail time_limit "took ${dt}s for --time-limit 1"
else pass time_limit
fi

# --resume a checkpoint of step 4 with --steps 4: nothing to do, prints the final line
# (train_bpb is nan: no step ran), same checksum as the run that wrote it
run_egg r0.out r0.err --data d.txt "${TINY[@]}" --steps 4 --resume "$CK"
RE0='^egg: done steps=4 checksum=[0-9a-f]{16} train_bpb=(nan|-?[0-9]+\.[0-9]{4}) val_bpb=-?[0-9]+\.[0-9]{4} tok_per_s=[0-9]+$'
if [ $RC -ne 0 ]; then fail resume_at_final_step "exit $RC: $(head -c 200 r0.err)"
elif ! final_line r0.out | grep -qE "$RE0"; then fail resume_at_final_step "final line '$(final_line r0.out)'"
elif [ "$(checksum_of r0.out)" != "$CK4_SUM" ]; then fail resume_at_final_step "checksum $(checksum_of r0.out), the 4-step run had $CK4_SUM"
else pass resume_at_final_step
fi

# sampling a trained checkpoint without training it: the resume above with --sample-every prints one sample
# of the loaded model, and greedy it is the sample the training run printed at that step from the same weights
SMP=(--sample-every 4 --temperature 0 --prompt "the " --sample-len 40)
run_egg s4.out s4.err --data d.txt "${TINY[@]}" --steps 4 --checkpoint-dir cks "${SMP[@]}"
want=$(grep -a '^egg: sample step=4: ' s4.out)
run_egg s0.out s0.err --data d.txt "${TINY[@]}" --steps 4 --checkpoint-dir cks --resume latest "${SMP[@]}" --sample-every 1
got=$(grep -a '^egg: sample ' s0.out)
if [ $RC -ne 0 ]; then fail sample_from_checkpoint "exit $RC: $(head -c 200 s0.err)"
elif [ -z "$want" ]; then fail sample_from_checkpoint "the training run printed no sample at step 4"
elif [ "$got" != "$want" ]; then fail sample_from_checkpoint "resumed sample '$got', the training run's '$want'"
elif grep -q '^step ' s0.out; then fail sample_from_checkpoint "the resumed run trained"
else pass sample_from_checkpoint
fi

lib_finish
