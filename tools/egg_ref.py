#!/usr/bin/env python3
"""Independent reimplementation of docs/ALGORITHM.md (pure Python, tiny models),
written from the document alone; tests/t_reference.sh holds egg_mgpu to it.
usage: ref.py DATA H L T POP STEPS [--rank r] [--group g] [--fitness sign|norm]
       [--val-len n] [--val-windows n] [--seed s] [--alpha a] [--threshold t] [--sigma-shift s] [--noise-reuse n]
prints: checksum, train_bpb (last step), val_bpb (end)"""
import sys, math, argparse
from statistics import NormalDist

M64 = (1 << 64) - 1
GOLDEN = 0x9e3779b97f4a7c15

def mix64(z):
    z &= M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)

def noise_key(seed, epoch, tensor, pair):
    k = mix64(seed ^ 0x6567675f6e6f6973)
    k = mix64(k ^ ((epoch << 32) | tensor))
    return mix64(k + pair * GOLDEN)

def noise(key, idx):
    h = mix64(key + ((idx + 1) & 0xffffffff) * GOLDEN) & 0x0000ffffffffffff
    return sum((h >> (4 * i)) & 15 for i in range(12)) - 90

def clip8(v): return -127 if v < -127 else (127 if v > 127 else v)

def ceil_log2(n):
    c = 0
    while (1 << c) < n: c += 1
    return c

def tdiv(a, b):  # C truncating division
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q

# loss tables, exact
def iroot16_floor(n):
    lo, hi = 0, 1 << ((n.bit_length() + 15) // 16 + 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if mid ** 16 <= n: lo = mid
        else: hi = mid - 1
    return lo
EXP2 = [iroot16_floor(1 << (64 + i)) for i in range(256)]
LOG2C = []
for m in range(16):
    f = iroot16_floor(1 << (1008 + m)); LOG2C.append(f if f ** 16 == 1 << (1008 + m) else f + 1)

def floor16_log2(S):
    k = S.bit_length() - 1
    mant = S << (63 - k)
    return 16 * k + sum(1 for j in range(1, 16) if mant >= LOG2C[j])

def loglik(logits, tgt):
    S = sum(EXP2[l + 128] for l in logits)
    return (logits[tgt] + 128) - (floor16_log2(S) - 64)

def hash_update(h, b):
    i = 0
    while i + 8 <= len(b):
        w = int.from_bytes(b[i:i + 8], 'little')
        h = ((h ^ w) * 0x100000001b3) & M64
        h ^= h >> 29
        i += 8
    for x in b[i:]:
        h = ((h ^ x) * 0x100000001b3) & M64
    return h

def main():
    ap = argparse.ArgumentParser()
    for a in ["data"]: ap.add_argument(a)
    for a in ["H", "L", "T", "pop", "steps"]: ap.add_argument(a, type=int)
    ap.add_argument("--rank", type=int, default=1); ap.add_argument("--group", type=int, default=2)
    ap.add_argument("--fitness", default="sign"); ap.add_argument("--val-len", type=int, default=256)
    ap.add_argument("--val-windows", type=int, default=32); ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--alpha", type=float, default=4.0); ap.add_argument("--threshold", type=int, default=-1)
    ap.add_argument("--sigma-shift", type=int, default=4); ap.add_argument("--noise-reuse", type=int, default=1)
    ap.add_argument("--val-frac", type=float, default=0.01)
    a = ap.parse_args()
    data = open(a.data, 'rb').read()
    V, H, L, T, pop, r, seed = 256, a.H, a.L, a.T, a.pop, a.rank, a.seed
    ps = 4 + a.sigma_shift
    P = pop // 2
    # tensors
    tens = [("emb", "mat", V, H)]
    for l in range(L):
        for nm in ["ln1", "Wf", "Uf", "bf", "Wh", "Uh", "bh", "ln2", "up", "down"]:
            if nm in ("ln1", "ln2", "bf", "bh"): tens.append((nm, "vec", H, 1))
            elif nm == "up": tens.append((nm, "mat", 4 * H, H))
            elif nm == "down": tens.append((nm, "mat", H, 4 * H))
            else: tens.append((nm, "mat", H, H))
    tens.append(("ln_out", "vec", H, 1)); tens.append(("head", "mat", V, H))
    W = []
    for tid, (nm, kind, R, C) in enumerate(tens):
        if kind == "vec": W.append([16 if nm.startswith("ln") else 0] * R)
        else:
            key = noise_key(seed, 0xFFFFFFFF, tid, 0)
            W.append([clip8(noise(key, i)) for i in range(R * C)])
    def lid(l, k): return 1 + 10 * l + k

    def pair_noise(epoch, k):
        out = {}
        for tid, (nm, kind, R, C) in enumerate(tens):
            key = noise_key(seed, epoch, tid, k)
            if kind == "vec":
                out[tid] = ([noise(key, i) for i in range(R)], [noise(key, R + i) for i in range(R)])
            else:
                A = [[noise(key, o * r + j) for j in range(r)] for o in range(R)] if tid != 0 else None
                B = [[noise(key, R * r + i * r + j) for j in range(r)] for i in range(C)]
                out[tid] = (A, B, key)
        return out

    def mm(tid, x, pert):
        nm, kind, N, K = tens[tid]
        w = W[tid]
        s = 4 + (ceil_log2(K) + 1) // 2
        y = []
        if pert is not None:
            nz, sg = pert
            A, B, _ = nz[tid]
            t = [sg * sum(x[kk] * B[kk][j] for kk in range(K)) for j in range(r)]
        for o in range(N):
            acc = sum(x[kk] * w[o * K + kk] for kk in range(K))
            if pert is not None:
                p = sum(t[j] * A[o][j] for j in range(r))
                acc += p >> ps
            y.append(clip8(acc >> s))
        return y

    def ln(x, w):
        d = max(1, sum(abs(v) for v in x) // H)
        return [clip8(tdiv(x[i] * w[i], d)) for i in range(H)]

    def vec(tid, pert):
        if pert is None: return W[tid]
        nz, sg = pert
        n1, n2 = nz[tid]
        return [clip8(W[tid][i] + ((sg * n1[i] * n2[i]) >> ps)) for i in range(H)]

    def embed(tok, pert):
        row = W[0][tok * H:(tok + 1) * H]
        if pert is None: return list(row)
        nz, sg = pert
        _, B, key = nz[0]
        av = [sg * noise(key, tok * r + j) for j in range(r)]
        return [clip8(row[i] + (sum(av[j] * B[i][j] for j in range(r)) >> ps)) for i in range(H)]

    def step_tok(state, tok, tgt, pert):
        if tok == 0:
            for l in range(L): state[l] = [0] * H
        x = embed(tok, pert)
        for l in range(L):
            h = state[l]
            xn = ln(x, vec(lid(l, 0), pert))
            a1 = mm(lid(l, 1), xn, pert); a2 = mm(lid(l, 2), h, pert); bf = vec(lid(l, 3), pert)
            f = [clip8(a1[i] + a2[i] + bf[i]) for i in range(H)]
            g = [((f[i] + 127) * h[i]) >> 8 for i in range(H)]
            c1 = mm(lid(l, 4), xn, pert); c2 = mm(lid(l, 5), g, pert); bh = vec(lid(l, 6), pert)
            c = [clip8(c1[i] + c2[i] + bh[i]) for i in range(H)]
            hn = [clip8(h[i] + (((f[i] + 127) * (c[i] - h[i])) >> 8)) for i in range(H)]
            state[l] = hn
            x = [clip8(hn[i] + x[i]) for i in range(H)]
            xn = ln(x, vec(lid(l, 7), pert))
            m = mm(lid(l, 9), mm(lid(l, 8), xn, pert), pert)
            x = [clip8(m[i] + x[i]) for i in range(H)]
        xn = ln(x, vec(lid(L, 0), pert))
        logits = mm(len(tens) - 1, xn, pert)
        return loglik(logits, tgt)

    # split
    n = len(data)
    nv = int(math.floor(n * a.val_frac))
    if nv < 2: nv = 2 if n >= 4 else 0
    train, val = data[:n - nv], data[n - nv:]
    nt = len(train)
    G = pop // a.group
    salt = mix64(seed ^ 0x646174615f6f7264)
    states = [[[0] * H for _ in range(L)] for _ in range(pop)]
    step = 0
    train_bpb = float('nan')
    for step in range(a.steps):
        epoch = step // a.noise_reuse
        wins = []
        for g in range(G):
            if nt - 1 >= G * T:
                S = (nt - 1) // (G * T); seg = step % S; cyc = step // S
                row = (g + mix64(salt + cyc * GOLDEN) % G) % G
                start = row * S * T + seg * T; reset = seg == 0
            else:
                start = mix64(salt ^ mix64(((step << 24) ^ g) & M64)) % (nt - T); reset = True
            wins.append((train[start:start + T + 1], reset))
        scores = []
        noises = {}
        for m in range(pop):
            k = m // 2; sg = 1 if m % 2 == 0 else -1
            if k not in noises: noises[k] = pair_noise(epoch, k)
            w, reset = wins[m // a.group]
            if reset: states[m] = [[0] * H for _ in range(L)]
            sc = 0
            for t in range(T):
                sc += step_tok(states[m], w[t], w[t + 1], (noises[k], sg))
            scores.append(sc)
        d = [scores[2 * k] - scores[2 * k + 1] for k in range(P)]
        if a.fitness == "sign":
            f = [(x > 0) - (x < 0) for x in d]
        else:
            mu = max(1, sum(abs(x) for x in d) // P)
            f = [((x > 0) - (x < 0)) * min(2, (4 * abs(x) + mu) // (2 * mu)) for x in d]
        if a.threshold >= 0: tau = a.threshold
        else:
            al = a.alpha if a.alpha <= 1 else 1 / ((2 ** a.alpha - 1) * step / 1000 + 1)
            tau = 0 if al >= 1 else math.floor(16 * NormalDist().inv_cdf(1 - al / 2))
        entries = [(k, 1 if f[k] > 0 else -1) for k in range(P) for _ in range(abs(f[k]))]
        thr = tau * math.isqrt(P) * 256
        for tid, (nm, kind, R, C) in enumerate(tens):
            if kind == "vec":
                for i in range(R):
                    z = 0
                    for (k, sgn) in entries:
                        n1, n2 = noises[k][tid]
                        z += sgn * n1[i] * n2[i]
                    if z != 0 and 16 * abs(z) >= thr:
                        W[tid][i] = clip8(W[tid][i] + (1 if z > 0 else -1))
            else:
                ent = []
                for (k, sgn) in entries:
                    A, B, key = noises[k][tid]
                    if A is None: A = [[noise(key, o * r + j) for j in range(r)] for o in range(R)]
                    ent.append((sgn, A, B))
                for o in range(R):
                    for i in range(C):
                        z = 0
                        for (sgn, A, B) in ent:
                            z += sgn * sum(A[o][j] * B[i][j] for j in range(r))
                        if z != 0 and 16 * abs(z) >= thr:
                            W[tid][o * C + i] = clip8(W[tid][o * C + i] + (1 if z > 0 else -1))
        train_bpb = -sum(scores) / (16 * pop * T)
    nsteps = a.steps
    # validation
    nvv = len(val)
    ln_ = min(a.val_len, nvv - 1)
    nw = max(1, min(a.val_windows, (nvv - 1) // ln_))
    tot = 0
    for w in range(nw):
        s0 = (nvv - 1 - ln_) * w // (nw - 1) if nw > 1 else 0
        win = val[s0:s0 + ln_ + 1]
        st = [[0] * H for _ in range(L)]
        for t in range(ln_):
            tot += step_tok(st, win[t], win[t + 1], None)
    val_bpb = -tot / (16 * nw * ln_)
    h = 0xcbf29ce484222325
    h = hash_update(h, b"".join(v.to_bytes(4, 'little') for v in (V, H, L)))
    h = hash_update(h, bytes((x & 0xff) for t in W for x in t))
    h = hash_update(h, nsteps.to_bytes(8, 'little', signed=True))
    print("checksum=%016x train_bpb=%.4f val_bpb=%.4f" % (mix64(h), train_bpb, val_bpb))

main()
