"""tests/tpb_store_gloo.py HOST PORT SCRIPTS_DIR — two processes meet through scripts/tpb_store.py
in tpbench's store (the secret from TPB_JOB_SECRET) as torch_ddp's children do across hosts:
init_process_group("gloo") over a PrefixStore of it, then one all_reduce. Prints the sum rank 0
got; exits non-zero when either process fails. Run by tests/store_server_test.cc."""
import datetime
import os
import sys


def rank_main(rank, host, port):
    import torch
    import torch.distributed as dist
    import tpb_store

    timeout = datetime.timedelta(seconds=30)
    conn = tpb_store.Connection(host, port, os.environ["TPB_JOB_SECRET"], 30)
    base = tpb_store.torch_store(dist, conn, timeout)
    dist.init_process_group("gloo", store=dist.PrefixStore("test/", base), rank=rank, world_size=2, timeout=timeout)
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    if rank == 0:
        print(int(t.item()), flush=True)
    dist.destroy_process_group()


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    sys.path.insert(0, sys.argv[3])
    pid = os.fork()  # before torch is imported: each process its own
    if pid == 0:
        code = 0
        try:
            rank_main(1, host, port)
        except BaseException as e:
            print(f"rank 1: {e}", file=sys.stderr)
            code = 1
        os._exit(code)
    ok = True
    try:
        rank_main(0, host, port)
    except Exception as e:
        print(f"rank 0: {e}", file=sys.stderr)
        ok = False
    _, status = os.waitpid(pid, 0)
    sys.exit(0 if ok and status == 0 else 1)


if __name__ == "__main__":
    main()
