#!/usr/bin/env python3
"""scripts/torch_single.py — PyTorch's own training loop for the model tpbench trains, on one GPU:
the yardstick for `tpbench run --strategy single --device cuda` (same model, batch and epoch
count; compare samples/s). Needs nothing but torch: no torchvision, no network.

  python3 scripts/torch_single.py [--batch_size 64] [--epochs 3] [--train_size 60000]
                                  [--hidden 512,512] [--lr 0.01] [--momentum 0] [--seed 1]
                                  [--device cuda:0] [--json FILE]

Model: MLP 784-H1-...-10 (nn.Linear with ReLU between; --hidden gives the widths), cross-entropy
loss, torch.optim.SGD. The training data are random float32 features [N, 784] and int64 labels in
[0, 10), generated on the GPU: their content does not matter for throughput (nothing is learned,
so no accuracy is reported), only their shape and where they live — like tpbench's synthetic
set, which is also resident on the device.

The loop is the idiomatic fast one: per epoch a permutation made on the device (before the
clock starts, as tpbench builds its epoch's index before its own), then per batch index_select
of the rows on the device, forward, loss, zero_grad(set_to_none=True), backward, step. The loss
is accumulated on the device and read once per epoch, never per step, so the host only queues
work. Each epoch is timed with time.perf_counter around torch.cuda.synchronize() on both ends.
samples/s counts every sample of the epoch (the last batch may be partial, as in tpbench).

Prints one line per epoch, then a JSON object as the last line (and to --json FILE when given):
torch and CUDA versions, device name, the settings, per-epoch samples/s, and the median samples/s
over epochs 2..E (epoch 1 is warm-up: cuBLAS handles, kernel selection, the allocator's pool);
with --epochs 1 the median is epoch 1's figure and the JSON says so.

Exit: 0 trained, 2 bad usage, PyTorch missing, or no CUDA device available.
"""
import argparse
import json
import os
import statistics
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="PyTorch's own single-GPU training of tpbench's MLP, for a samples/s comparison "
                    "with `tpbench run --strategy single --device cuda`.")
    p.add_argument("--batch_size", type=int, default=64, help="batch size (default 64)")
    p.add_argument("--epochs", type=int, default=3, help="epochs; the first is warm-up (default 3)")
    p.add_argument("--train_size", type=int, default=60000, help="training samples (default 60000)")
    p.add_argument("--hidden", default="512,512", help="hidden layer widths of MLP 784-...-10 (default 512,512)")
    p.add_argument("--lr", type=float, default=0.01, help="SGD learning rate (default 0.01)")
    p.add_argument("--momentum", type=float, default=0.0, help="SGD momentum (default 0)")
    p.add_argument("--seed", type=int, default=1, help="seed of weights, data and order (default 1)")
    p.add_argument("--device", default="cuda:0", help="CUDA device (default cuda:0)")
    p.add_argument("--json", metavar="FILE", help="also write the JSON summary to FILE")
    a = p.parse_args(argv)
    if a.batch_size < 1:
        p.error(f"--batch_size: must be at least 1, got {a.batch_size}")
    if a.epochs < 1:
        p.error(f"--epochs: must be at least 1, got {a.epochs}")
    if a.train_size < 1:
        p.error(f"--train_size: must be at least 1, got {a.train_size}")
    try:
        a.hidden_sizes = [int(h) for h in a.hidden.split(",") if h.strip()]
    except ValueError:
        p.error(f"--hidden: expected comma-separated integers, got '{a.hidden}'")
    if not a.hidden_sizes or min(a.hidden_sizes) < 1:
        p.error(f"--hidden: expected positive widths, got '{a.hidden}'")
    return a


def fail(msg):
    print(f"torch_single: {msg}", file=sys.stderr)
    sys.exit(2)


def main(argv):
    a = parse_args(argv)
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError as e:
        fail(f"cannot import torch ({e}): install PyTorch with CUDA")
    if not torch.cuda.is_available():
        fail(f"CUDA is not available to PyTorch {torch.__version__} (CUDA build: {torch.version.cuda}; "
             f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")
    try:
        dev = torch.device(a.device)
    except RuntimeError as e:
        fail(f"--device {a.device}: {e}")
    if dev.type != "cuda":
        fail(f"--device {a.device}: this yardstick runs on CUDA only")
    if dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    if dev.index >= torch.cuda.device_count():
        fail(f"--device {a.device}: only {torch.cuda.device_count()} CUDA device(s) visible")
    torch.cuda.set_device(dev)

    torch.manual_seed(a.seed)
    widths = [784] + a.hidden_sizes + [10]
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)

    # Random data on the device: content is irrelevant to throughput (see the header).
    gen = torch.Generator(device=dev)
    gen.manual_seed(a.seed)
    n, bs = a.train_size, a.batch_size
    x = torch.rand(n, 784, device=dev, dtype=torch.float32, generator=gen)
    y = torch.randint(0, 10, (n,), device=dev, dtype=torch.int64, generator=gen)
    steps = (n + bs - 1) // bs

    name = torch.cuda.get_device_name(dev)
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) on {dev} ({name}): MLP {'-'.join(map(str, widths))}, "
          f"SGD lr={a.lr} momentum={a.momentum}, batch {bs}, {n} samples ({steps} steps) x {a.epochs} epochs",
          flush=True)

    rates, walls, losses = [], [], []
    model.train()
    for epoch in range(1, a.epochs + 1):
        perm = torch.randperm(n, device=dev, generator=gen)
        loss_sum = torch.zeros((), device=dev, dtype=torch.float64)
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        for begin in range(0, n, bs):
            idx = perm[begin:begin + bs]
            xb = x.index_select(0, idx)
            yb = y.index_select(0, idx)
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach()
        torch.cuda.synchronize(dev)
        wall = time.perf_counter() - t0
        mean_loss = loss_sum.item() / steps  # the epoch's one read of a device value
        walls.append(wall)
        rates.append(n / wall)
        losses.append(mean_loss)
        print(f"epoch {epoch}/{a.epochs}: {wall:.3f} s, {rates[-1]:.0f} samples/s, train loss {mean_loss:.4f}"
              f"{' (warm-up)' if epoch == 1 and a.epochs > 1 else ''}", flush=True)

    if a.epochs > 1:
        median = statistics.median(rates[1:])
        over = f"epochs 2..{a.epochs}"
    else:
        median = rates[0]
        over = "epoch 1 only (--epochs 1: no warm-up epoch to leave out)"
    print(f"median {median:.0f} samples/s over {over}")
    result = {
        "schema": "tpbench.torch_single/1",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": str(dev),
        "device_name": name,
        "model": "mlp-" + "-".join(map(str, widths)),
        "batch_size": bs,
        "epochs": a.epochs,
        "train_size": n,
        "lr": a.lr,
        "momentum": a.momentum,
        "seed": a.seed,
        "epoch_wall_s": walls,
        "samples_per_s": rates,
        "train_loss": losses,
        "median_samples_per_s": median,
        "median_over": over,
    }
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
        os.replace(tmp, a.json)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
