#!/usr/bin/env python3
# Speed and quality reference for `xmc train` with method=unidec: UniDEC written plainly in PyTorch-Python
# (Debian python3-torch), in the style of the DEXML reference. Bag-of-words encoder (TF-IDF-free mean of word
# vectors + residual layer), DE head L2norm(tanh(Linear)), CLF head L2norm(Linear), free classifier table Psi
# (its own learning rate), random batches; per query beta sampled positives and eta hard negatives from its
# exact top-S shortlist over DE label embeddings (positives removed), refreshed every tau epochs and drawn
# without replacement over the window; pool = union; symmetric SupCon on both heads, lambda = 0.5.
# Then P@1/P@5 of the concat mode ([de, clf] vs [de labels, norm Psi]) on the whole test set (filter pairs removed).
# Prints "unidec (P@1, P@5) <seconds>".
# Usage: python3 pytorch_unidec.py DIR EPOCHS [batch d lr classifier_lr tau beta eta S refresh]
import torch, random, re, time, sys
torch.set_num_threads(2)
D = sys.argv[1]; epochs = int(sys.argv[2])
bs, d, lr, clr, tau, beta, eta, S, refresh = (int(sys.argv[3]) if len(sys.argv) > 3 else 512, int(sys.argv[4]) if len(sys.argv) > 4 else 128,
    float(sys.argv[5]) if len(sys.argv) > 5 else 3e-3, float(sys.argv[6]) if len(sys.argv) > 6 else 0.01,
    float(sys.argv[7]) if len(sys.argv) > 7 else 0.05, int(sys.argv[8]) if len(sys.argv) > 8 else 3,
    int(sys.argv[9]) if len(sys.argv) > 9 else 6, int(sys.argv[10]) if len(sys.argv) > 10 else 100, int(sys.argv[11]) if len(sys.argv) > 11 else 5)
def rd(p): return [l.rstrip('\n') for l in open(D + '/' + p, encoding='utf-8')]
def rxy(p):
    L = rd(p); n, l = map(int, L[0].split()); return [[int(t.split(':')[0]) for t in x.split()] for x in L[1:n + 1]], l
lbl, trn, tst = rd('lbl.raw.txt'), rd('trn.raw.txt'), rd('tst.raw.txt')
Ytr, L = rxy('trn_X_Y.txt'); Yte, _ = rxy('tst_X_Y.txt')
filt = {}
try:
    for line in rd('filter_labels_test.txt'):
        if line.strip(): a, b = map(int, line.split()); filt.setdefault(a, set()).add(b)
except FileNotFoundError: pass
tok = lambda t: re.findall(r'[a-z0-9]+', t.lower())
from collections import Counter
cnt = Counter(w for t in trn + lbl for w in tok(t))
vocab = {w: i + 1 for i, (w, c) in enumerate(cnt.most_common()) if c >= 2}
ids = lambda t: [vocab[w] for w in tok(t) if w in vocab][:64] or [0]
trn_i = [ids(t) for t in trn]; tst_i = [ids(t) for t in tst]; lbl_i = [ids(t) for t in lbl]
print('train', len(trn), 'test', len(tst), 'L', L, 'V', len(vocab), flush=True)
norm = lambda x: torch.nn.functional.normalize(x, dim=-1)
class Model(torch.nn.Module):
    def __init__(s, V, d, L):
        super().__init__(); s.e = torch.nn.EmbeddingBag(V, d, mode='mean'); s.l = torch.nn.Linear(d, d)
        s.g1 = torch.nn.Linear(d, d); s.g2 = torch.nn.Linear(d, d); s.psi = torch.nn.Parameter(torch.randn(L, d) / d ** 0.5)
    def phi(s, lists):
        idt = torch.tensor([i for l in lists for i in l]); offs = torch.tensor([0] + [len(l) for l in lists[:-1]]).cumsum(0)
        h = s.e(idt, offs); return h + torch.relu(s.l(h))
    def de(s, h): return norm(torch.tanh(s.g1(h)))
    def clf(s, h): return norm(s.g2(h))
def supcon(s, P):  # mean over anchors with positives of -mean_p log softmax
    logp = s - torch.logsumexp(s, 1, keepdim=True); n = P.sum(1); keep = n > 0
    return (-(logp * P).sum(1)[keep] / n[keep]).mean()
def sym(s, P): return 0.5 * supcon(s, P) + 0.5 * supcon(s.T, P.T)
def run():
    torch.manual_seed(0); random.seed(0)
    m = Model(len(vocab) + 1, d, L)
    opt = torch.optim.AdamW([{'params': [p for n, p in m.named_parameters() if n != 'psi']}, {'params': [m.psi], 'lr': clr, 'weight_decay': 0}], lr=lr)
    rows = [i for i in range(len(trn)) if Ytr[i]]; window = None
    for ep in range(epochs):
        if ep % refresh == 0:  # exact top-S shortlists over DE embeddings, positives removed, shuffled once per window
            with torch.no_grad():
                z = torch.cat([m.de(m.phi(lbl_i[i:i + 4096])) for i in range(0, L, 4096)]); window = []
                for b in range(0, len(trn_i), 4096):
                    sc = torch.cat([m.de(m.phi(trn_i[b:b + 4096]))]) @ z.T
                    for r in range(sc.shape[0]): sc[r, Ytr[b + r]] = -1e9
                    top = sc.topk(min(S, L), dim=1).indices.tolist()
                    for r in top: random.shuffle(r); window.append(r)
        off = (ep % refresh) * eta
        random.shuffle(rows)
        for b in range(0, len(rows), bs):
            idx = rows[b:b + bs]
            pos = [l for i in idx for l in random.sample(Ytr[i], min(beta, len(Ytr[i])))]
            neg = [l for i in idx for l in (window[i] * 2)[off:off + eta]]
            pool = sorted(set(pos) | set(neg)); col = {l: j for j, l in enumerate(pool)}
            P = torch.zeros(len(idx), len(pool))
            for r, i in enumerate(idx):
                for l in Ytr[i]:
                    if l in col: P[r, col[l]] = 1
            hq = m.phi([trn_i[i] for i in idx]); hl = m.phi([lbl_i[l] for l in pool])
            loss_de = sym(m.de(hq) @ m.de(hl).T / tau, P)
            loss_clf = sym(m.clf(hq) @ norm(m.psi[pool]).T / tau, P)
            loss = 0.5 * loss_de + 0.5 * loss_clf
            opt.zero_grad(); loss.backward(); opt.step()
    with torch.no_grad():
        hz = torch.cat([m.phi(lbl_i[i:i + 4096]) for i in range(0, L, 4096)])
        z = torch.cat([m.de(hz), norm(m.psi)], 1); hits1 = hits5 = 0
        for b in range(0, len(tst_i), 2048):
            h = m.phi(tst_i[b:b + 2048]); sc = torch.cat([m.de(h), m.clf(h)], 1) @ z.T
            for r in range(sc.shape[0]):
                for l in filt.get(b + r, ()): sc[r, l] = -1e9
            top = sc.topk(5, dim=1).indices.tolist()
            for r, t in enumerate(top):
                y = set(Yte[b + r]); hits1 += t[0] in y; hits5 += len(set(t) & y)
    return round(hits1 / len(tst), 4), round(hits5 / 5 / len(tst), 4)
t = time.time(); print('unidec', run(), round(time.time() - t, 1), flush=True)
