#!/usr/bin/env bash
# t_tools.sh — the user-facing tools around egg_mgpu:
#   tools/plot_log.sh  : a real --log renders to a non-empty PNG; bad logs fail
#   tools/egg_tokens.py: text -> .bin trains (bits per token) and matches the
#                        same bytes as text; ids with vocab > 256 -> uint16 file
#                        that egg_mgpu accepts.
#   tools/ncu_bytes.py : an Nsight Compute CSV (program output around it, the
#                        units row, thousands separators) summed per kernel;
#                        the expected table is worked out by hand below;
#                        --names lists the launches.
# Independent goldens: the .bin header is decoded here with od, the PNG
# signature is checked byte for byte, and a .bin of a text's bytes must train
# to exactly the text's checksum (same token stream, different loader).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$LIB_ROOT
CHECKS=(plot_png plot_default_name plot_bad_log plot_missing_log tokens_text_header tokens_text_trains
        tokens_text_equals_txt tokens_ids_u16_header tokens_ids_u16_trains tokens_ids_bad_id ncu_bytes_table ncu_bytes_names ncu_bytes_missing_metric)
lib_init tools || skip_all "egg_mgpu not built (run make)" "${CHECKS[@]}"

# u32 / u64 little-endian field of a file at a byte offset (od, not the tool under test)
u32_at() { od -An -t u4 -j "$2" -N 4 --endian=little "$1" | tr -d ' '; }
u64_at() { od -An -t u8 -j "$2" -N 8 --endian=little "$1" | tr -d ' '; }
magic_of() { head -c 8 "$1" | od -An -c | tr -s ' ' | sed 's/^ //; s/ $//'; }
size_of() { stat -c %s "$1"; }

gen_words corpus.txt 3000 7

# ----------------------------------------------------------------- plot_log.sh
if ! command -v gnuplot >/dev/null 2>&1; then
    for c in plot_png plot_default_name plot_bad_log plot_missing_log; do skip "$c" "gnuplot not installed (apt-get install gnuplot-nox)"; done
else
    run_egg run.out run.err --data corpus.txt "${TINY[@]}" --steps 12 --val-every 4 --log run.jsonl
    nlines=$(wc -l <run.jsonl 2>/dev/null || echo 0)
    if [ "$RC" -ne 0 ] || [ "$nlines" -ne 12 ]; then
        fail plot_png "the training run for the log failed (rc $RC, $nlines log lines): $(head -c 200 run.err)"
    else
        bash "$ROOT/tools/plot_log.sh" run.jsonl curve.png >plot.out 2>plot.err
        prc=$?
        sig=$(head -c 8 curve.png 2>/dev/null | od -An -t x1 | tr -d ' \n')
        if [ $prc -ne 0 ]; then fail plot_png "exit $prc: $(head -c 200 plot.err)"
        elif [ ! -s curve.png ]; then fail plot_png "no PNG written"
        elif [ "$sig" != 89504e470d0a1a0a ]; then fail plot_png "curve.png is not a PNG (signature $sig)"
        elif [ "$(size_of curve.png)" -lt 2000 ]; then fail plot_png "PNG suspiciously small ($(size_of curve.png) bytes)"
        elif ! grep -q '12 steps, 3 validation points' plot.out; then fail plot_png "expected 12 steps and 3 validations, got: $(cat plot.out)"
        else pass plot_png; fi
    fi
    # default output name: run.jsonl -> run.png
    if bash "$ROOT/tools/plot_log.sh" run.jsonl >/dev/null 2>&1 && [ -s run.png ]; then pass plot_default_name
    else fail plot_default_name "plot_log.sh run.jsonl did not write run.png"; fi
    # a log that is not egg's JSONL: non-zero exit, one error line, no PNG
    printf '{"step":1,"train_bpb":5.1}\nthis is not json\n{"step":3,"train_bpb":5.0}\n' >bad.jsonl
    bash "$ROOT/tools/plot_log.sh" bad.jsonl bad.png >/dev/null 2>bad.err
    brc=$?
    if [ $brc -eq 0 ]; then fail plot_bad_log "exit 0 on a malformed log"
    elif [ -e bad.png ]; then fail plot_bad_log "wrote bad.png despite the error"
    elif ! grep -q '^plot_log.sh: error: bad.jsonl:2:' bad.err; then fail plot_bad_log "error does not name line 2: $(head -c 200 bad.err)"
    else pass plot_bad_log; fi
    bash "$ROOT/tools/plot_log.sh" missing.jsonl >/dev/null 2>miss.err
    mrc=$?
    if [ $mrc -eq 2 ] && grep -q 'missing.jsonl: file not found' miss.err; then pass plot_missing_log
    else fail plot_missing_log "want exit 2 and 'file not found', got $mrc: $(head -c 200 miss.err)"; fi
fi

# ---------------------------------------------------------------- egg_tokens.py
if ! command -v python3 >/dev/null 2>&1; then
    for c in tokens_text_header tokens_text_trains tokens_text_equals_txt tokens_ids_u16_header tokens_ids_u16_trains tokens_ids_bad_id; do
        skip "$c" "python3 not installed"
    done
    lib_finish
fi
TOK=$ROOT/tools/egg_tokens.py

# text mode: uint8 tokens, vocab 256, n = bytes of the input
python3 "$TOK" text corpus.txt corpus.bin >tok.out 2>tok.err
trc=$?
n=$(size_of corpus.txt)
if [ $trc -ne 0 ] || [ ! -s corpus.bin ]; then fail tokens_text_header "egg_tokens.py text failed: $(head -c 200 tok.err)"
elif [ "$(magic_of corpus.bin)" != 'E G G T O K S \0' ]; then fail tokens_text_header "bad magic: $(magic_of corpus.bin)"
elif [ "$(u32_at corpus.bin 8)/$(u32_at corpus.bin 12)/$(u32_at corpus.bin 16)/$(u32_at corpus.bin 20)/$(u64_at corpus.bin 24)" != "1/1/256/0/$n" ]; then
    fail tokens_text_header "header version/bpt/vocab/reserved/n = $(u32_at corpus.bin 8)/$(u32_at corpus.bin 12)/$(u32_at corpus.bin 16)/$(u32_at corpus.bin 20)/$(u64_at corpus.bin 24), want 1/1/256/0/$n"
elif [ "$(size_of corpus.bin)" -ne $((32 + n)) ] || ! cmp -s <(tail -c +33 corpus.bin) corpus.txt; then
    fail tokens_text_header "body is not the input bytes"
else pass tokens_text_header; fi

run_egg bin.out bin.err --data corpus.bin "${TINY[@]}" --steps 6
if [ "$RC" -ne 0 ]; then fail tokens_text_trains "egg_mgpu exit $RC on corpus.bin: $(head -c 200 bin.err)"
elif ! final_line bin.out | grep -Eq "$FINAL_RE"; then fail tokens_text_trains "no valid final line: $(final_line bin.out)"
elif ! grep -q '^egg: data corpus.bin: .* tokens' bin.out || ! grep -Eq '^step +6 .* bpt ' bin.out; then
    fail tokens_text_trains "expected token counts and bits per token (bpt): $(grep -E '^(egg: data|step)' bin.out | head -c 300)"
else pass tokens_text_trains; fi

run_egg txt.out txt.err --data corpus.txt "${TINY[@]}" --steps 6
a=$(checksum_of txt.out) b=$(checksum_of bin.out)
if [ -z "$a" ] || [ "$a" != "$b" ]; then fail tokens_text_equals_txt "text checksum '$a' != .bin checksum '$b' (same bytes, same token stream)"
else pass tokens_text_equals_txt; fi

# ids mode with vocab > 256: uint16 tokens
awk 'BEGIN { s = 1; for (i = 0; i < 2000; i++) { s = (s * 16807) % 2147483647; printf "%d%s", s % 300, (i % 20 == 19) ? "\n" : " " } }' >ids.txt
python3 "$TOK" ids ids.txt ids.bin --vocab 300 >ids.out 2>ids.err
irc=$?
if [ $irc -ne 0 ] || [ ! -s ids.bin ]; then fail tokens_ids_u16_header "egg_tokens.py ids failed ($irc): $(head -c 200 ids.err)"
elif [ "$(u32_at ids.bin 12)/$(u32_at ids.bin 16)/$(u64_at ids.bin 24)" != "2/300/2000" ] || [ "$(size_of ids.bin)" -ne $((32 + 4000)) ]; then
    fail tokens_ids_u16_header "bpt/vocab/n = $(u32_at ids.bin 12)/$(u32_at ids.bin 16)/$(u64_at ids.bin 24), size $(size_of ids.bin); want 2/300/2000, 4032"
else
    # the body, read back with od, equals the ids in order
    if cmp -s <(od -An -v -t u2 --endian=little -j 32 ids.bin | tr -s ' ' '\n' | sed '/^$/d') <(tr -s ' \n' '\n\n' <ids.txt | sed '/^$/d'); then
        pass tokens_ids_u16_header
    else fail tokens_ids_u16_header "uint16 body differs from the ids"; fi
fi

run_egg ids_run.out ids_run.err --data ids.bin "${TINY[@]}" --steps 4
if [ "$RC" -ne 0 ]; then fail tokens_ids_u16_trains "egg_mgpu exit $RC on ids.bin: $(head -c 200 ids_run.err)"
elif ! grep -q 'vocab 300' ids_run.out; then fail tokens_ids_u16_trains "model vocab is not 300: $(head -n 1 ids_run.out)"
elif ! final_line ids_run.out | grep -Eq "$FINAL_RE"; then fail tokens_ids_u16_trains "no valid final line"
else pass tokens_ids_u16_trains; fi

# an id >= --vocab: exit 2, one error line, no output file left behind
echo "1 2 300 4" >badids.txt
python3 "$TOK" ids badids.txt badids.bin --vocab 300 >/dev/null 2>badids.err
brc=$?
if [ $brc -eq 2 ] && [ ! -e badids.bin ] && [ ! -e badids.bin.tmp ] && grep -q '^egg_tokens.py: error: .*300' badids.err; then
    pass tokens_ids_bad_id
else fail tokens_ids_bad_id "want exit 2, an error naming 300 and no file; got $brc: $(head -c 200 badids.err)"; fi

# ----------------------------------------------------------------- ncu_bytes.py
# two launches of k_a (1,500 + 500 Mbyte read, 2,000 + 1,000 Kbyte written, 100 + 400 us) and one of k_b (0.5 Mbyte,
# 500 Kbyte, 50 us), scaled by 2, at 2e12 bytes/s: k_a 4.00 GB read, 0.006 GB written, 1.000 ms, 4.006e9 / 1e-3 s =
# 4.01 TB/s; k_b 0.001 + 0.001 GB in 0.1 ms = 0.02 TB/s; in all 4.001 + 0.007 GB = 4.008e9 bytes: 2.004 ms at 2e12
cat >ncu.csv <<'CSV'
==PROF== Connected to process 1 (/x/egg_mgpu)
egg_mgpu 0.1.0: EGG-256x6 vocab 256
"ID","Kernel Name","Block Size","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum"
"","","","Mbyte","Kbyte","usecond"
"0","void k_a<256, 1>(MMArgs, int)","(128, 1, 1)","1,500","2,000","100"
"1","k_b(int *)","(32, 1, 1)","0.5","500","50"
"2","void k_a<256, 1>(MMArgs, int)","(128, 1, 1)","500","1,000","400"
==PROF== Disconnected from process 1
CSV
python3 "$ROOT/tools/ncu_bytes.py" --scale 2 --bw 2e12 ncu.csv >ncu.out 2>ncu.err
nrc=$?
# shellcheck disable=SC2016 # the backticks are the table's markdown
want_a='| `void k_a<256, 1>` | 2 | 4.00 | 0.01 | 1.000 | 4.01 |'
# shellcheck disable=SC2016
want_b='| `k_b` | 1 | 0.00 | 0.00 | 0.100 | 0.02 |'
want_t='total: 4.00 GB read, 0.01 GB written, 1.100 ms of kernels; the bytes take 2.004 ms at 2e+12 bytes/s'
if [ $nrc -ne 0 ]; then fail ncu_bytes_table "exit $nrc: $(head -c 200 ncu.err)"
elif [ "$(sed -n 3p ncu.out)" != "$want_a" ] || [ "$(sed -n 4p ncu.out)" != "$want_b" ] || [ "$(sed -n 5p ncu.out)" != "$want_t" ]; then
    fail ncu_bytes_table "got: $(tr '\n' '/' <ncu.out)"
else pass ncu_bytes_table; fi
# --names: each launch's kernel in launch order, the parameter lists cut (make test-gpu's NVTX check reads it)
if [ "$(python3 "$ROOT/tools/ncu_bytes.py" --names ncu.csv 2>&1 | tr '\n' '/')" = 'void k_a<256, 1>/k_b/void k_a<256, 1>/' ]; then pass ncu_bytes_names
else fail ncu_bytes_names "got: $(python3 "$ROOT/tools/ncu_bytes.py" --names ncu.csv 2>&1 | tr '\n' '/')"; fi
# a CSV without the write counter: exit 2, one line naming it
grep -v '^"[0-9]' ncu.csv | sed 's/dram__bytes_write.sum/lts__t_bytes.sum/' >ncu_bad.csv
python3 "$ROOT/tools/ncu_bytes.py" ncu_bad.csv >/dev/null 2>ncu_bad.err
nrc=$?
if [ $nrc -eq 2 ] && [ "$(wc -l <ncu_bad.err)" -eq 1 ] && grep -q '^ncu_bytes.py: error: .*dram__bytes_write.sum' ncu_bad.err; then
    pass ncu_bytes_missing_metric
else fail ncu_bytes_missing_metric "want exit 2 and one line naming dram__bytes_write.sum; got $nrc: $(head -c 200 ncu_bad.err)"; fi

lib_finish
