"""A client of tpbench's own rendezvous store (comm/store_wire.h, comm/store_server.h), in Python's
standard library, so that torch_ddp's children meet in the store tpbench's launcher already serves
on --master_addr, behind the job's secret, instead of a c10d TCPStore that one child would host
(PyTorch 1.13's binds every address of the host and admits anyone).

Connection speaks the wire: the challenge-response under the job's secret first, then framed
requests (u32 count, then per string a u32 length and the bytes, big-endian). torch_store() wraps
one in a torch.distributed.Store subclass, which ProcessGroupGloo takes as any c10d store.
"""

import hashlib
import hmac
import secrets
import socket
import struct
import threading
import time

HELLO = b"TPBSTORE1"
NONCE_SIZE = 32
ACCEPTED, REJECTED = b"Y", b"N"
OK, TIMEOUT = b"k", b"t"
DAY_MS = 86400000  # the server's cap on one wait; c10d's "no timeout" (0) means that long
MAX_REPLY = 64 << 20


class StoreError(RuntimeError):
    pass


def proof(secret, role, server_nonce, client_nonce):
    """What comm/store_wire.cc's proof() computes: HMAC-SHA256 under the secret."""
    msg = b"tpbench store " + role.encode() + b"\n" + server_nonce + client_nonce
    return hmac.new(secret.encode(), msg, hashlib.sha256).digest()


class Connection:
    """One authenticated connection; requests are serialized (Gloo may call from several threads)."""

    def __init__(self, host, port, secret, timeout_s):
        self.where = f"{host}:{port}"
        self.timeout_s = timeout_s
        self.lock = threading.Lock()
        # A store pushes out the oldest connections still in their handshake when strangers flood
        # it (comm/store_server.h): a connection closed before the answer is made again.
        deadline, pause = time.monotonic() + timeout_s, 0.005
        while True:
            self.sock = self._connect(host, port, max(deadline - time.monotonic(), 0.01))
            try:
                if self._introduce(secret):
                    return
            except BaseException:
                self.sock.close()
                raise
            self.sock.close()
            if time.monotonic() + pause >= deadline:
                raise StoreError(f"the rendezvous store at {self.where} did not greet (not a tpbench store, or it "
                                 "closed every connection until the timeout)")
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    def _connect(self, host, port, timeout_s):
        # Retried until the timeout, as comm/store_wire.cc's connectTo: the server may come later.
        deadline, pause, last = time.monotonic() + timeout_s, 0.01, None
        while True:
            try:
                s = socket.create_connection((host, port), timeout=max(deadline - time.monotonic(), 0.01))
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return s
            except OSError as e:
                last = e
            if time.monotonic() + pause >= deadline:
                raise StoreError(f"cannot connect to the rendezvous store at {self.where}: {last}")
            time.sleep(pause)
            pause = min(pause * 2, 0.5)

    def _read(self, n):
        buf = bytearray()
        while len(buf) < n:
            got = self.sock.recv(n - len(buf))
            if not got:
                raise StoreError(f"the rendezvous store at {self.where} closed the connection")
            buf += got
        return bytes(buf)

    def _introduce(self, secret):
        """True once both ends proved the secret; False where the server closed first."""
        self.sock.settimeout(self.timeout_s)
        try:
            hello = self._read(len(HELLO) + NONCE_SIZE)
        except (OSError, StoreError):
            return False
        if hello[:len(HELLO)] != HELLO:
            raise StoreError(f"the rendezvous store at {self.where} did not greet (not a tpbench store)")
        server_nonce, client_nonce = hello[len(HELLO):], secrets.token_bytes(NONCE_SIZE)
        try:
            self.sock.sendall(client_nonce + proof(secret, "client", server_nonce, client_nonce))
            answer = self._read(1)
        except (OSError, StoreError):
            return False
        if answer != ACCEPTED:
            raise StoreError(f"the rendezvous store at {self.where} refused this process: its job secret differs")
        if not hmac.compare_digest(self._read(32), proof(secret, "server", server_nonce, client_nonce)):
            raise StoreError(f"the rendezvous store at {self.where} did not prove it holds the job secret")
        return True

    def call(self, parts, wait_ms=0):
        """Sends one request (a list of bytes) and returns the reply's values; a server that waits
        wait_ms for keys gets that long plus twice the store's timeout to answer, as StoreClient."""
        out = [struct.pack(">I", len(parts))]
        for p in parts:
            out += [struct.pack(">I", len(p)), p]
        with self.lock:
            if self.sock is None:
                raise StoreError(f"the connection to the rendezvous store at {self.where} was lost earlier")
            try:
                self.sock.settimeout(wait_ms / 1000.0 + 2 * self.timeout_s)
                self.sock.sendall(b"".join(out))
                reply = self._read_message()
            except (OSError, StoreError) as e:
                self.sock.close()
                self.sock = None
                raise StoreError(f"the rendezvous store at {self.where}: {e}") from None
        if reply[0] == TIMEOUT:
            raise StoreError(f"rendezvous store: keys not set within {wait_ms} ms")
        if reply[0] != OK:
            why = reply[1].decode(errors="replace") if len(reply) > 1 else "?"
            raise StoreError(f"the rendezvous store refused a request: {why}")
        return reply[1:]

    def _read_message(self):
        (count,) = struct.unpack(">I", self._read(4))
        if count == 0 or count > 4:
            raise StoreError("malformed reply")
        parts, total = [], 0
        for _ in range(count):
            (n,) = struct.unpack(">I", self._read(4))
            total += n
            if total > MAX_REPLY:
                raise StoreError("reply too large")
            parts.append(self._read(n))
        return parts

    def close(self):
        with self.lock:
            if self.sock is not None:
                self.sock.close()
                self.sock = None


def _bytes(v):
    return v.encode() if isinstance(v, str) else bytes(v)


def _ms(timeout):
    """Milliseconds of a timedelta (or seconds); 0 is c10d's "no timeout"."""
    s = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
    return max(int(s * 1000), 0)


def torch_store(dist, conn, timeout):
    """A torch.distributed.Store over `conn`: PyTorch 1.13 forwards c10d::Store's virtual calls
    to a Python subclass (its trampoline), so ProcessGroupGloo takes it as any store."""

    class TpbStore(dist.Store):
        def __init__(self):
            super().__init__()
            self.wait_ms = _ms(timeout)

        def set(self, key, value):
            conn.call([b"s", _bytes(key), _bytes(value)])

        def get(self, key):
            return conn.call([b"g", _bytes(key), str(self.wait_ms).encode()], self.wait_ms or DAY_MS)[0]

        def add(self, key, value):
            return int(conn.call([b"a", _bytes(key), str(int(value)).encode()])[0])

        def compare_set(self, key, expected, desired):
            return conn.call([b"x", _bytes(key), _bytes(expected), _bytes(desired)])[0]

        def delete_key(self, key):
            return conn.call([b"d", _bytes(key)])[0] == b"1"

        def check(self, keys):
            return conn.call([b"c"] + [_bytes(k) for k in keys])[0] == b"1"

        def wait(self, keys, timeout=None):
            ms = self.wait_ms if timeout is None else _ms(timeout)
            conn.call([b"w", str(ms).encode()] + [_bytes(k) for k in keys], ms or DAY_MS)

        def num_keys(self):
            return int(conn.call([b"n"])[0])

        def set_timeout(self, timeout):
            self.wait_ms = _ms(timeout)

    return TpbStore()
