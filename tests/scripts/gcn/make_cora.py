"""Write a synthetic Cora in the real archive's format (cora/cora.content: paper id, 1433
binary word features, class name; cora/cora.cites: cited id, citing id) as cora.tgz.

Same sizes as Cora (2708 papers, 1433 words, 7 classes, 5429 citations); each class
favours its own words and most citations stay inside a class, so a GCN can learn it.
python make_cora.py OUT_DIR [seed]"""
import io
import os
import sys
import tarfile

import numpy as np

CLASSES = ["Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
           "Reinforcement_Learning", "Rule_Learning", "Theory"]


def make(out_dir, seed=0, n=2708, words=1433, n_edges=5429, homophily=0.8):
    rng = np.random.default_rng(seed)
    ids = rng.choice(np.arange(30, 1_200_000), size=n, replace=False)
    labels = rng.integers(0, len(CLASSES), n)
    topic = rng.integers(0, len(CLASSES), words)            # each word leans to one class
    p = np.where(topic[None, :] == labels[:, None], 0.03, 0.008)
    feats = (rng.random((n, words)) < p).astype(np.int64)
    by_class = [np.flatnonzero(labels == c) for c in range(len(CLASSES))]
    src = rng.integers(0, n, n_edges)
    same = rng.random(n_edges) < homophily
    dst = np.where(same, [rng.choice(by_class[labels[s]]) for s in src], rng.integers(0, n, n_edges))
    content = "".join(f"{ids[i]}\t" + "\t".join(map(str, feats[i])) + f"\t{CLASSES[labels[i]]}\n" for i in range(n))
    cites = "".join(f"{ids[a]}\t{ids[b]}\n" for a, b in zip(dst, src))
    path = os.path.join(out_dir, "cora.tgz")
    with tarfile.open(path, "w:gz") as tf:
        for name, text in (("cora/cora.content", content), ("cora/cora.cites", cites)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


if __name__ == "__main__":
    print(make(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0))
