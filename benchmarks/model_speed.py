"""Tokens per second for one training step's forward plus backward (`loss_and_grads`).

    python benchmarks/model_speed.py                 # both configs, float32 and float64
    python benchmarks/model_speed.py --repeats 9 --min-time 0.5

Two configurations, each in float32 and float64:
  default  the documented model (vocab 65, T 16, d 32, F 128, 2 layers, 4 heads), batch 32
  large    batch 8, T 128, d 256, F 1024, 4 layers, 4 heads (vocab 65)

Each cell is the median over --repeats timed repeats, after a warm-up; a repeat runs the step
enough times to last about --min-time seconds. Where PyTorch is importable the same model (same
weights, same batch) also runs in PyTorch on the CPU, with as many threads as NumPy's BLAS uses,
as forward + loss.backward(), in blocks of repeats that take turns with NumPy's (median_seconds
says why blocks); the table then shows the ratio numpy / torch (above 1: NumPy faster). PyTorch
is never a dependency of the project: it is only measured against.

OpenBLAS reads OPENBLAS_CORETYPE at start-up; the line printed above the table names the kernel
NumPy's BLAS runs, since a forced older core type slows it down.

"faults/step" counts minor page faults per step: memory that glibc handed back to the kernel
after one step and takes again, zero-filled, in the next. On this kind of machine they can cost
as much as the arithmetic at the default size. Importing PyTorch changes glibc's thresholds for
the whole process, so NumPy's count (and time) with PyTorch loaded can differ from --no-torch;
MALLOC_MMAP_THRESHOLD_=268435456 MALLOC_TRIM_THRESHOLD_=1073741824 in the environment keeps
glibc from handing the memory back, and brings --no-torch to the same times.
"""
import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model.config import ModelConfig                      # noqa: E402
from model.transformer import init_params, loss_and_grads  # noqa: E402

SETTLE = 0.5     # seconds of quiet before each block of timed repeats

CONFIGS = {
    "default": (dict(vocab_size=65), 32),
    "large": (dict(vocab_size=65, seq_len=128, emb_dim=256, ff_dim=1024, num_layers=4, num_heads=4), 8),
}


def blas_info():
    """(threads, description) of NumPy's BLAS; threadpoolctl is optional."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        n = int(os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or os.cpu_count())
        return n, f"BLAS threads assumed {n} (install threadpoolctl to read them)"
    for pool in threadpool_info():
        if pool["user_api"] == "blas":
            return pool["num_threads"], (f"{pool['internal_api']} {pool.get('version')}, "
                                         f"kernel {pool.get('architecture')}, {pool['num_threads']} threads")
    return os.cpu_count(), "no BLAS pool found"


def median_seconds(steps, repeats, min_time, rounds=2):
    """Median seconds per call of each step(), and minor page faults per call.

    The steps run in blocks of repeats, not alternating repeat by repeat: OpenBLAS's and PyTorch's
    worker threads keep spinning for a while after their last call, and on 2 cores a step that
    starts while the other library still spins runs slowly (PyTorch lost up to 40% that way). So each block first sleeps SETTLE seconds, then warms up
    (which also sizes the repeats), then times its repeats. The blocks take `rounds` turns each
    (numpy, torch, numpy, torch, ...), so a load that comes and goes hits them both."""
    calls = [None] * len(steps)
    times, faults = [[] for _ in steps], [0.0 for _ in steps]
    per_round = [repeats // rounds + (r < repeats % rounds) for r in range(rounds)]
    for n_rep in per_round:
        for i, step in enumerate(steps):
            time.sleep(SETTLE)
            step()
            t0 = time.perf_counter()
            step()
            if calls[i] is None:
                calls[i] = max(1, int(min_time / max(time.perf_counter() - t0, 1e-6)))
            for _ in range(n_rep):
                f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                t0 = time.perf_counter()
                for _ in range(calls[i]):
                    step()
                times[i].append((time.perf_counter() - t0) / calls[i])
                faults[i] += (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / calls[i] / repeats
    return [statistics.median(t) for t in times], faults


def torch_step_fn(torch, params, ids, targets, cfg):
    """The same pre-LN decoder in PyTorch, written with the same operations as model/: returns a
    closure that runs forward + backward, and the loss of the first call (to check it matches)."""
    F = torch.nn.functional
    dt = getattr(torch, cfg.dtype)
    P = {k: torch.tensor(v, dtype=dt, requires_grad=True) for k, v in params.items()}
    ids_t, tgt_t = torch.as_tensor(ids, dtype=torch.long), torch.as_tensor(targets, dtype=torch.long)
    B, T = ids.shape
    d, h = cfg.emb_dim, cfg.num_heads
    hidden = ~torch.tril(torch.ones(T, T, dtype=torch.bool))

    def ln(X, name):
        return F.layer_norm(X, (d,), P[name + "_g"], P[name + "_b"], cfg.ln_eps)

    def heads(M):
        return M.view(B, T, h, d // h).transpose(1, 2)

    def loss_fn():
        X = P["tok_emb"][ids_t] + P["pos_emb"][:T]
        for l in range(cfg.num_layers):
            b = f"b{l}."
            Xn = ln(X, b + "ln1")
            Q, K, V = (heads(Xn @ P[b + "w" + w] + P[b + "b" + w]) for w in "qkv")
            S = (Q @ K.transpose(-1, -2)) / (d // h) ** 0.5
            A = torch.softmax(S.masked_fill(hidden, float("-inf")), dim=-1)
            O = (A @ V).transpose(1, 2).reshape(B, T, d)
            X = X + O @ P[b + "wo"] + P[b + "bo"]
            Z = ln(X, b + "ln2") @ P[b + "ff1_w"] + P[b + "ff1_b"]
            X = X + torch.relu(Z) @ P[b + "ff2_w"] + P[b + "ff2_b"]
        logits = ln(X, "lnf") @ P["head_w"] + P["head_b"]
        return F.cross_entropy(logits.reshape(B * T, -1), tgt_t.reshape(-1))

    def step():
        for p in P.values():
            p.grad = None
        loss = loss_fn()
        loss.backward()
        return loss

    return step, float(step().detach())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.3, help="seconds per timed repeat")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch even if importable")
    args = ap.parse_args(argv)

    threads, blas = blas_info()
    torch = None
    if not args.no_torch:
        try:
            import torch
            torch.set_num_threads(threads)
        except ImportError:
            pass
    print(f"numpy {np.__version__} ({blas})"
          + (f"; torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch else "; torch skipped (--no-torch)" if args.no_torch else "; torch not importable"))
    print(f"median of {args.repeats} repeats of >= {args.min_time} s each, after a warm-up; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores at the start")

    head = "| config | B x T | dtype | numpy tok/s | numpy ms/step | numpy faults/step |"
    rule = "| --- | --- | --- | ---: | ---: | ---: |"
    if torch:
        head += " torch tok/s | torch ms/step | torch faults/step | numpy/torch |"
        rule += " ---: | ---: | ---: | ---: |"
    print()
    print(head)
    print(rule, flush=True)
    for name in args.configs:
        kw, B = CONFIGS[name]
        for dtype in args.dtypes:
            cfg = ModelConfig(**kw, dtype=dtype)
            rng = np.random.default_rng(0)
            params = init_params(cfg, rng)
            T = cfg.seq_len
            ids = rng.integers(0, cfg.vocab_size, size=(B, T))
            targets = rng.integers(0, cfg.vocab_size, size=(B, T))
            loss_np = loss_and_grads(params, ids, targets, cfg)[0]
            steps = [lambda: loss_and_grads(params, ids, targets, cfg)]
            if torch:
                step, loss_t = torch_step_fn(torch, params, ids, targets, cfg)
                tol = 1e-9 if dtype == "float64" else 1e-4
                if abs(loss_t - loss_np) > tol * max(1.0, abs(loss_np)):
                    raise SystemExit(f"{name} {dtype}: torch loss {loss_t} != numpy loss {loss_np}: not the same model")
                steps.append(step)
            (t_np, *t_pt), (f_np, *f_pt) = median_seconds(steps, args.repeats, args.min_time)
            row = f"| {name} | {B} x {T} | {dtype} | {B * T / t_np:,.0f} | {1e3 * t_np:.2f} | {f_np:,.0f} |"
            if torch:
                row += f" {B * T / t_pt[0]:,.0f} | {1e3 * t_pt[0]:.2f} | {f_pt[0]:,.0f} | {t_pt[0] / t_np:.2f} |"
            print(row, flush=True)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end (this benchmark alone adds up to 2)")


if __name__ == "__main__":
    main()
