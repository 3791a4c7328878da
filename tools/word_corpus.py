#!/usr/bin/env python3
"""word_corpus.py OUT NWORDS — a synthetic text of NWORDS common English words
(random.seed(3), so every run writes the same bytes) for benchmarks and GPU
checks, where speed does not depend on the text: make bench (tests/bench.sh),
tools/gpu_session.sh, tools/gpu_multi.sh, tools/gpu_faults.sh and
tools/gpu_roofline.sh."""
import random
import sys

WORDS = "the of and to in a is that for it as was with be by on not he this are or his from at which".split()


def main():
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        print("usage: word_corpus.py OUT NWORDS", file=sys.stderr)
        sys.exit(2)
    random.seed(3)
    with open(sys.argv[1], "w") as f:
        f.write(" ".join(random.choice(WORDS) for _ in range(int(sys.argv[2]))))


if __name__ == "__main__":
    main()
