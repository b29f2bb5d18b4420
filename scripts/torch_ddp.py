#!/usr/bin/env python3
"""scripts/torch_ddp.py — PyTorch's own DistributedDataParallel (--mode ddp) or DataParallel
(--mode dp) training tpbench's MLP, or with --network one of its networks (a ResNet-style CNN, a
GPT- or BERT-style transformer, rebuilt module for module by make_network): the measured references `tpbench run --strategy torch_ddp`
and `torch_dp` run (strategies/torch_reference.cc starts one of these per rank and reads what it
reports). Needs nothing but torch (no numpy, no torchvision, no network).

Everything that decides the arithmetic comes from tpbench, in IDX files in --data (big-endian,
as MNIST's): train-images.idx (float32 [n, 784], already normalised), train-labels.idx (uint8),
test-images.idx / test-labels.idx (the first test_size samples; for a network: images float32
[n, C, H, W] or tokens int32 [n, T], labels int32 [n] or a language model's next tokens [n, T]),
weights.idx (float32, every parameter flattened in order fc0.weight, fc0.bias, fc1.weight, ...,
or the network's parameters() order, which is tpbench's), and --order, this rank's
sample indices per epoch (int32 [epochs, samples], what tpbench's DistributedSampler gives the
rank). So the model starts from tpbench's weights and sees tpbench's batches in tpbench's order:
after K steps its weights equal `tpbench run --strategy single` at the global batch.

The loop is the idiomatic fast one, as scripts/torch_single.py: per step index_select of the
batch's rows from in-memory tensors (a DataLoader would add per-sample Python collation and
measure that instead), forward, cross-entropy, zero_grad(set_to_none=True), backward, SGD step
(torch.optim.SGD, the same rule as tpbench's flat SGD); the loss is summed on the device and read
once per epoch. Per epoch, like tpbench: the ranks meet (dist.barrier), the clock runs over the
steps only, and rank 0 evaluates after the clock stops.

  ddp: torch.distributed over a FileStore at --store_file when every rank is on one host (nothing
       listens for it), else over the store tpbench's launcher serves at --store_addr:--store_port,
       its keys under --store_prefix: tpbench's own (scripts/tpb_store.py; the job's secret from
       TPB_JOB_SECRET in the environment, never the command line), or under torchrun its agent's
       c10d TCPStore (--store_protocol c10d). No child hosts a store; Gloo (on the interface tpbench names in GLOO_SOCKET_IFNAME: lo on one host) on
       the CPU, NCCL on cuda:--device_index;
       DistributedDataParallel(bucket_cap_mb=--bucket_mb). comm_s on the CPU is DDP's exposed
       communication: from the moment the step's last gradient is computed (a tensor hook on every
       parameter notes the time; DDP's own reducer, hooks and buckets are left as they are) to
       backward()'s return, which DDP holds until every bucket's allreduce is done. On a GPU
       backward returns without waiting for NCCL, so compute_s and comm_s are null there.
  dp:  one process, DataParallel over cuda:--device_index .. +--n_devices-1, global batches of
       --batch_size x --n_devices rows; compute_s and comm_s are null (scatter, replicate and
       reduce happen inside forward and backward).

Reports to tpbench, one JSON object per line on file descriptor --report_fd: {"event": "epoch", ...} per
epoch (rank 0, the figures of all ranks: wall_s the slowest rank's, compute_s and comm_s the
mean, train_loss the mean over all steps), {"event": "done"} after --params_out (this rank's
final weights, IDX float32) is written. --probe reports {"event": "probe", "torch", "cuda", "gpus", "gloo", "nccl"}
and exits: how tpbench finds out whether it can run at all.

Exit: 0 done, 1 a failure (traceback on stderr), 2 bad usage or torch missing.
"""
import argparse
import array
import json
import math
import os
import struct
import sys
import time

# IDX type codes: (array typecode, torch dtype name, bytes per element).
IDX_TYPES = {0x08: ("B", "uint8", 1), 0x0C: ("i", "int32", 4), 0x0D: ("f", "float32", 4),
             0x0E: ("d", "float64", 8)}


def parse_args(argv):
    p = argparse.ArgumentParser(description="PyTorch's DDP / DataParallel on tpbench's MLP, data and order.")
    p.add_argument("--probe", action="store_true", help="report torch's version and devices, then exit")
    p.add_argument("--report_fd", type=int, default=1, help="file descriptor for the JSON lines (default 1)")
    p.add_argument("--mode", choices=["ddp", "dp"], default="ddp")
    p.add_argument("--data", help="directory of tpbench's IDX files")
    p.add_argument("--order", help="this rank's sample order, IDX int32 [epochs, samples]")
    p.add_argument("--params_out", help="where to write the final weights (IDX float32)")
    p.add_argument("--hidden", default="512,512")
    p.add_argument("--network", default="", help="a workload other than the mlp: its spec as JSON")
    p.add_argument("--batch_size", type=int, default=64, help="per device")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max_steps", type=int, default=-1, help="optimizer steps in all; -1: no limit")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--bucket_mb", type=float, default=25.0)
    p.add_argument("--evaluate", type=int, default=1)
    p.add_argument("--eval_batch", type=int, default=1000, help="test samples per forward when evaluating")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--device_index", type=int, default=0)
    p.add_argument("--n_devices", type=int, default=1, help="dp: replicas")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=1)
    p.add_argument("--store_addr", default="127.0.0.1")
    p.add_argument("--store_port", type=int, default=0)
    p.add_argument("--store_prefix", default="", help="this point's keys in the store")
    p.add_argument("--store_protocol", choices=["tpbench", "c10d"], default="tpbench")
    p.add_argument("--store_file", default="", help="rendezvous in this file (one host) instead of a TCPStore")
    p.add_argument("--timeout_s", type=float, default=300)
    a = p.parse_args(argv)
    if not a.probe:
        for name in ("data", "order", "params_out"):
            if not getattr(a, name):
                p.error(f"--{name} is required")
        if a.batch_size < 1 or a.eval_batch < 1 or a.epochs < 0 or a.n_devices < 1 or not 0 <= a.rank < a.world:
            p.error("--batch_size, --eval_batch, --epochs, --n_devices, --rank and --world are out of range")
    return a


class Reporter:
    def __init__(self, fd):
        self.fd = fd

    def send(self, **obj):
        line = (json.dumps(obj, allow_nan=False) + "\n").encode()
        while line:
            line = line[os.write(self.fd, line):]


def read_idx(path, torch):
    """An IDX file as a tensor (the body byte-swapped from big-endian on little-endian hosts)."""
    with open(path, "rb") as f:
        head = f.read(4)
        if len(head) != 4 or head[0] or head[1] or head[2] not in IDX_TYPES:
            raise ValueError(f"{path}: not an IDX file of a supported type")
        code, rank = head[2], head[3]
        dims = struct.unpack(">" + "I" * rank, f.read(4 * rank))
        typecode, dtype, size = IDX_TYPES[code]
        count = 1
        for d in dims:
            count *= d
        body = array.array(typecode)
        if body.itemsize != size:
            raise ValueError(f"array typecode {typecode} is {body.itemsize} bytes here, IDX needs {size}")
        body.fromfile(f, count)  # raises EOFError when the file is short
        if f.read(1):
            raise ValueError(f"{path}: longer than its header says")
    if size > 1 and sys.byteorder == "little":
        body.byteswap()
    t = torch.frombuffer(body, dtype=getattr(torch, dtype)) if count else torch.empty(0, dtype=getattr(torch, dtype))
    return t.reshape(dims).clone()  # own the memory: `body` goes away


def write_idx_float(path, t):
    body = array.array("f", t.detach().float().cpu().reshape(-1).tolist())
    if sys.byteorder == "little":
        body.byteswap()
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(bytes([0, 0, 0x0D, 1]) + struct.pack(">I", len(body)))
        body.tofile(f)
    os.replace(tmp, path)


def probe(rep):
    import torch
    import torch.distributed as dist
    avail = dist.is_available()
    rep.send(event="probe", torch=torch.__version__, cuda=bool(torch.cuda.is_available()),
             gpus=torch.cuda.device_count() if torch.cuda.is_available() else 0,
             gloo=bool(avail and dist.is_gloo_available()), nccl=bool(avail and dist.is_nccl_available()))


def make_model(nn, widths):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def groups_for(channels):
    """GroupNorm's groups as tpbench's: the largest divisor of `channels` up to 32."""
    for g in range(min(32, channels), 0, -1):
        if channels % g == 0:
            return g
    return 1


def make_network(torch, nn, spec):
    """tpbench's workload/network.h networks, module for module: the same submodules registered
    in the same order (so parameters() lists them as tpbench's flat buffer does) and the same
    arithmetic in forward. `spec` is the JSON tpbench passes (--network)."""
    F = nn.functional

    def conv_unit(owner, name, norm_name, cin, cout, kernel, stride):
        setattr(owner, name, nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, bias=False))
        setattr(owner, norm_name, nn.BatchNorm2d(cout) if spec["norm"] == "batch"
                else nn.GroupNorm(groups_for(cout), cout))
        return lambda x: getattr(owner, norm_name)(getattr(owner, name)(x))

    class Stem(nn.Module):
        def __init__(self):
            super().__init__()
            self.unit = conv_unit(self, "conv1", "bn1", spec["in_channels"], spec["width"],
                                  7 if spec["imagenet_stem"] else 3, 2 if spec["imagenet_stem"] else 1)

        def forward(self, x):
            x = torch.relu(self.unit(x))
            return F.max_pool2d(x, 3, 2, 1) if spec["imagenet_stem"] else x

    class Residual(nn.Module):
        def __init__(self, cin, planes, stride, bottleneck):
            super().__init__()
            out = 4 * planes if bottleneck else planes
            shapes = ([(cin, planes, 1, 1), (planes, planes, 3, stride), (planes, out, 1, 1)] if bottleneck
                      else [(cin, planes, 3, stride), (planes, planes, 3, 1)])
            self.units = [conv_unit(self, f"conv{i + 1}", f"bn{i + 1}", *shape) for i, shape in enumerate(shapes)]
            self.down = (conv_unit(self, "downsample_conv", "downsample_bn", cin, out, 1, stride)
                         if stride != 1 or cin != out else None)
            self.out = out

        def forward(self, x):
            y = x
            for i, unit in enumerate(self.units):
                y = unit(y)
                if i + 1 < len(self.units):
                    y = torch.relu(y)
            return torch.relu(y + (self.down(x) if self.down else x))

    class ResnetHead(nn.Module):
        def __init__(self, cin):
            super().__init__()
            self.fc = nn.Linear(cin, spec["classes"])

        def forward(self, x):
            return self.fc(x.mean((2, 3)))

    def attention(q, k, v, heads, causal):
        b, t, width = q.shape
        d = width // heads

        def split(x):
            return x.reshape(b, t, heads, d).transpose(1, 2)
        scores = torch.matmul(split(q), split(k).transpose(-2, -1)) * (1.0 / math.sqrt(d))
        if causal:
            future = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        return torch.matmul(torch.softmax(scores, -1), split(v)).transpose(1, 2).reshape(b, t, width)

    h, ffn = spec.get("hidden", 0), spec.get("ffn", 0)

    class GptEmbedding(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(spec["vocab"], h)
            self.wpe = nn.Embedding(spec["positions"], h)

        def forward(self, ids):
            return self.wte(ids) + self.wpe(torch.arange(ids.size(1), device=ids.device))

    class GptLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(h, eps=1e-5)
            self.c_attn = nn.Linear(h, 3 * h)
            self.attn_c_proj = nn.Linear(h, h)
            self.ln_2 = nn.LayerNorm(h, eps=1e-5)
            self.c_fc = nn.Linear(h, ffn)
            self.mlp_c_proj = nn.Linear(ffn, h)

        def forward(self, x):
            q, k, v = self.c_attn(self.ln_1(x)).chunk(3, -1)
            x = x + self.attn_c_proj(attention(q, k, v, spec["heads"], True))
            return x + self.mlp_c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GptHead(nn.Module):
        def __init__(self, embedding):
            super().__init__()
            self.ln_f = nn.LayerNorm(h, eps=1e-5)
            self.tied = [embedding]  # a list: the tied weight is the embedding's, not registered twice

        def forward(self, x):
            return torch.matmul(self.ln_f(x), self.tied[0].wte.weight.t())

    class BertEmbedding(nn.Module):
        def __init__(self):
            super().__init__()
            self.word_embeddings = nn.Embedding(spec["vocab"], h)
            self.position_embeddings = nn.Embedding(spec["positions"], h)
            self.token_type_embeddings = nn.Embedding(spec["token_types"], h)
            self.LayerNorm = nn.LayerNorm(h, eps=1e-12)

        def forward(self, ids):
            t = ids.size(1)
            positions = torch.arange(t, device=ids.device)
            types = torch.div(positions * spec["token_types"], t, rounding_mode="floor")
            return self.LayerNorm(self.word_embeddings(ids) + self.position_embeddings(positions)
                                  + self.token_type_embeddings(types))

    class BertLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.query = nn.Linear(h, h)
            self.key = nn.Linear(h, h)
            self.value = nn.Linear(h, h)
            self.attention_output = nn.Linear(h, h)
            self.attention_LayerNorm = nn.LayerNorm(h, eps=1e-12)
            self.intermediate = nn.Linear(h, ffn)
            self.output = nn.Linear(ffn, h)
            self.output_LayerNorm = nn.LayerNorm(h, eps=1e-12)

        def forward(self, x):
            a = attention(self.query(x), self.key(x), self.value(x), spec["heads"], False)
            x = self.attention_LayerNorm(x + self.attention_output(a))
            return self.output_LayerNorm(x + self.output(F.gelu(self.intermediate(x))))

    class BertHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.pooler = nn.Linear(h, h)
            self.classifier = nn.Linear(h, spec["classes"])

        def forward(self, x):
            return self.classifier(torch.tanh(self.pooler(x.select(1, 0))))

    blocks = []
    if spec["kind"] == "resnet":
        blocks.append(Stem())
        cin = spec["width"]
        for s, count in enumerate(spec["stage_blocks"]):
            for b in range(count):
                blocks.append(Residual(cin, spec["width"] << s, 2 if s > 0 and b == 0 else 1, spec["bottleneck"]))
                cin = blocks[-1].out
        blocks.append(ResnetHead(cin))
    elif spec["kind"] == "gpt":
        blocks.append(GptEmbedding())
        blocks += [GptLayer() for _ in range(spec["layers"])]
        blocks.append(GptHead(blocks[0]))
    elif spec["kind"] == "bert":
        blocks.append(BertEmbedding())
        blocks += [BertLayer() for _ in range(spec["layers"])]
        blocks.append(BertHead())
    else:
        raise ValueError(f"unknown network kind {spec['kind']!r}")
    return nn.Sequential(*blocks)


def load_weights(torch, model, flat):
    params = list(model.parameters())
    total = sum(p.numel() for p in params)
    if flat.numel() != total:
        raise ValueError(f"weights.idx holds {flat.numel()} values, the model has {total} parameters")
    offset = 0
    with torch.no_grad():
        for p in params:
            p.copy_(flat[offset:offset + p.numel()].view_as(p))
            offset += p.numel()


def train(a, rep):
    import datetime
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(1)  # one device per rank, as tpbench's ranks
    ddp = a.mode == "ddp"
    timeout = datetime.timedelta(seconds=a.timeout_s)
    if ddp and a.store_file:
        # One host: a file in the point's private directory, so the rendezvous listens nowhere.
        store = dist.FileStore(a.store_file, a.world)
        store.set_timeout(timeout)
    elif ddp:
        # Several hosts: a client of the store tpbench's launcher serves (nothing listens here).
        # `base` stays referenced while training: the Python half of a Python store must outlive
        # the C++ references ProcessGroupGloo keeps to it.
        if a.store_protocol == "c10d":
            base = dist.TCPStore(a.store_addr, a.store_port, a.world, False, timeout=timeout)
        else:
            import tpb_store
            conn = tpb_store.Connection(a.store_addr, a.store_port, os.environ.get("TPB_JOB_SECRET", ""),
                                        a.timeout_s)
            base = tpb_store.torch_store(dist, conn, timeout)
        store = dist.PrefixStore(a.store_prefix, base)
    dev = torch.device("cuda", a.device_index) if a.device == "cuda" else torch.device("cpu")
    if a.device == "cuda":
        torch.cuda.set_device(dev)
    if a.network:
        model = make_network(torch, nn, json.loads(a.network))
    else:
        model = make_model(nn, [784] + [int(h) for h in a.hidden.split(",")] + [10])
    load_weights(torch, model, read_idx(os.path.join(a.data, "weights.idx"), torch))
    model.to(dev)
    def inputs(t):  # tokens come as int32 (IDX has no int64); embeddings take int64
        return t.long() if t.dtype == torch.int32 else t
    x = inputs(read_idx(os.path.join(a.data, "train-images.idx"), torch)).to(dev)
    y = read_idx(os.path.join(a.data, "train-labels.idx"), torch).long().to(dev)
    tx = inputs(read_idx(os.path.join(a.data, "test-images.idx"), torch)).to(dev)
    ty = read_idx(os.path.join(a.data, "test-labels.idx"), torch).long().to(dev)
    order = read_idx(a.order, torch).long().to(dev)
    if order.dim() != 2 or order.size(0) < a.epochs:
        raise ValueError(f"{a.order}: expected [{a.epochs}, samples] indices, got {list(order.shape)}")
    plain = model  # evaluated, and written out, without the wrapper

    last_grad = [0.0]
    measure_comm = ddp and a.device == "cpu"
    if ddp:
        dist.init_process_group("nccl" if a.device == "cuda" else "gloo", store=store, rank=a.rank,
                                world_size=a.world, timeout=timeout)
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=[a.device_index] if a.device == "cuda" else None, bucket_cap_mb=a.bucket_mb)
        if measure_comm:
            def note(grad):
                last_grad[0] = time.perf_counter()
            for p in plain.parameters():
                p.register_hook(note)
        rows = a.batch_size
    else:
        ids = list(range(a.device_index, a.device_index + a.n_devices))
        model = nn.DataParallel(model, device_ids=ids, output_device=a.device_index)
        rows = a.batch_size * a.n_devices
    opt = torch.optim.SGD(plain.parameters(), lr=a.lr, momentum=a.momentum)

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize(dev)

    total_steps = 0

    def steps_left():
        return a.max_steps < 0 or total_steps < a.max_steps

    model.train()
    for epoch in range(a.epochs):
        if not steps_left():
            break
        idx = order[epoch]
        n = idx.numel()
        loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
        compute = comm = 0.0
        steps = samples = 0
        sync()
        if ddp:
            dist.barrier()
        t0 = time.perf_counter()
        for begin in range(0, n, rows):
            if not steps_left():
                break
            c0 = time.perf_counter()
            sel = idx[begin:begin + rows]
            out = model(x.index_select(0, sel))
            loss = F.cross_entropy(out.reshape(-1, out.size(-1)), y.index_select(0, sel).reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            c1 = time.perf_counter()
            opt.step()
            loss_sum += loss.detach()
            c2 = time.perf_counter()
            if measure_comm:
                wait = max(0.0, c1 - max(last_grad[0], c0))
                comm += wait
                compute += c2 - c0 - wait
            steps += 1
            samples += sel.numel()
            total_steps += 1
        loss_total = loss_sum.item()  # on a GPU this waits for the epoch's last step
        wall = time.perf_counter() - t0
        figures = torch.tensor([compute, comm, loss_total, steps, samples], dtype=torch.float64, device=dev)
        # A step is one optimizer step of the model, which every rank takes: the epoch's count is
        # the largest rank's, not the sum (the loss is the mean over every rank's steps).
        most = torch.tensor([wall, steps], dtype=torch.float64, device=dev)
        if ddp:
            dist.all_reduce(figures)
            dist.all_reduce(most, op=dist.ReduceOp.MAX)
        if a.rank != 0:
            continue
        ranks = a.world if ddp else 1
        compute, comm, loss_total, rank_steps, samples = figures.tolist()
        wall, steps = most.tolist()
        accuracy, eval_s = None, None
        if a.evaluate and ty.numel() > 0:
            e0 = time.perf_counter()
            plain.eval()  # a BatchNorm evaluates with its running statistics
            with torch.no_grad():
                correct = 0
                step = a.eval_batch
                for begin in range(0, ty.size(0), step):
                    logits = plain(tx[begin:begin + step])
                    correct += int((logits.argmax(-1) == ty[begin:begin + step]).sum().item())
            plain.train()
            accuracy, eval_s = correct / ty.numel(), time.perf_counter() - e0
        rep.send(event="epoch", epoch=epoch + 1, wall_s=wall,
                 compute_s=compute / ranks if measure_comm else None,
                 comm_s=comm / ranks if measure_comm else None,
                 train_loss=loss_total / rank_steps if rank_steps else 0.0, test_accuracy=accuracy, eval_s=eval_s,
                 steps=int(steps), samples=int(samples))
    sync()
    write_idx_float(a.params_out, torch.cat([p.detach().reshape(-1).cpu() for p in plain.parameters()]))
    if ddp:
        dist.barrier()  # no rank tears the group down while another still uses it
        dist.destroy_process_group()
    rep.send(event="done")


def main(argv):
    a = parse_args(argv)
    rep = Reporter(a.report_fd)
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"torch_ddp: cannot import torch ({e}) with {sys.executable}", file=sys.stderr)
        return 2
    if a.probe:
        probe(rep)
    else:
        train(a, rep)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
