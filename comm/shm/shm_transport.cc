#include "comm/shm/shm_transport.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "comm/reduce.h"
#include "comm/store.h"
#include "comm/transports.h"
#include "common/cores.h"
#include "common/error.h"

namespace tpb {

namespace {

constexpr std::uint64_t kMagic = 0x7470623a73686d31ull;  // "tpb:shm1"
constexpr std::uint64_t kMsgMagic = 0x7470626d73676864ull;
constexpr std::uint64_t kPullMagic = 0x7470626d7367706cull;  // single copy: the receiver reads the sender's buffer
constexpr std::size_t kLine = 64;

struct alignas(kLine) Counter {
  std::atomic<std::uint64_t> v{0};
};
struct alignas(kLine) Word {
  std::atomic<std::uint32_t> v{0};
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "shm needs lock-free 64-bit atomics");
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "shm needs lock-free 32-bit atomics");

struct alignas(kLine) ChannelHeader {
  Counter head;    // bytes ever written by the sender
  Counter tail;    // bytes ever consumed by the receiver
  Counter pulled;  // single-copy messages the receiver has read in full
  Word pullOk;     // set by the receiver at setup when it can read the sender's memory
};

// A message's first line. A single-copy message is this line alone: `addr` is where its bytes
// lie in the sender's address space.
struct alignas(kLine) MsgHeader {
  std::uint64_t magic;
  std::uint64_t bytes;
  std::uint64_t addr;
};
static_assert(sizeof(MsgHeader) == kLine, "message header is one cache line");

constexpr std::size_t roundUp(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// Message headers sit at 64-aligned ring offsets, so one never wraps.
void writeHeader(char* ring, std::size_t pos, std::size_t bytes, const void* pullFrom = nullptr) {
  const MsgHeader h{pullFrom ? kPullMagic : kMsgMagic, bytes, reinterpret_cast<std::uintptr_t>(pullFrom)};
  std::memcpy(ring + pos, &h, sizeof h);
}

// Reads the header at `pos` and checks it against the `posted` byte count of rank `me`'s
// `what` ("receive", "forwarding receive") from rank `from`. Returns where a single-copy
// message lies in the sender, 0 for one that follows in the ring.
std::uint64_t checkHeader(const char* ring, std::size_t pos, int from, int me, std::size_t posted,
                          const char* what) {
  MsgHeader h;
  std::memcpy(&h, ring + pos, sizeof h);
  if (h.magic != kMsgMagic && (h.magic != kPullMagic || h.addr == 0))
    TPB_THROW(Error, "shm: corrupt message header from rank " << from);
  if (h.bytes != posted)
    TPB_THROW(Error, "shm: rank " << from << " sent " << h.bytes << " bytes but rank " << me << " posted a "
                                  << what << " of " << posted);
  return h.magic == kPullMagic ? h.addr : 0;
}

// Copies `bytes` from `remote` in process `pid` to `local`; false (errno set) where the kernel
// refuses. The kernel may stop short of the whole span, so this goes on until it is read.
bool readPeer(pid_t pid, void* local, std::uint64_t remote, std::size_t bytes) {
  std::size_t done = 0;
  while (done < bytes) {
    iovec l{static_cast<char*>(local) + done, bytes - done};
    iovec r{reinterpret_cast<void*>(static_cast<std::uintptr_t>(remote + done)), bytes - done};
    const ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n <= 0) {
      if (n == 0) errno = EFAULT;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

long futexWait(std::atomic<std::uint32_t>* addr, std::uint32_t expected,
               std::chrono::nanoseconds ns) {
  timespec ts{static_cast<time_t>(ns.count() / 1000000000), static_cast<long>(ns.count() % 1000000000)};
  // Shared (not FUTEX_PRIVATE) because the word lives in memory mapped by several processes.
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), FUTEX_WAIT, expected, &ts,
                 nullptr, 0);
}

void futexWake(std::atomic<std::uint32_t>* addr) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), FUTEX_WAKE, INT_MAX, nullptr,
          nullptr, 0);
}

}  // namespace

// Layout: [Segment header][ChannelHeader + ring] x size (the slot of the owner itself unused).
struct ShmTransport::Segment {
  std::uint64_t magic;
  std::uint32_t size;
  std::uint32_t rank;
  std::uint64_t channelBytes;
  std::int64_t pid;       // the owner's process
  std::uint64_t mapping;  // where the owner mapped this segment: what peers read to try single copy
  Word doorbell;  // futex word: bumped by anyone who changes one of this rank's channels
  Word waiters;   // how many threads of the owner sleep on the doorbell
};

namespace {
constexpr std::size_t kSegHeader = roundUp(sizeof(ShmTransport::Segment), 4096);
}

enum OpKind { kSend = 0, kRecv = 1, kRecvReduce = 2, kRecvReduceSend = 3, kRecvCopySend = 4 };

struct ShmTransport::Op {
  int kind;
  int peer;  // sends: the receiver; everything else: the sender
  char* buf;  // send: source; recv, recvReduce: destination; forwarding: keep/dst (may be null)
  std::size_t bytes;
  std::size_t done = 0;
  bool headerDone = false;
  bool complete = false;
  // Single copy: a send's number among its pair's single-copy sends (0: through the ring); a
  // receive's source in the sender's address space (0: the ring).
  std::uint64_t pullSeq = 0;
  std::uint64_t pullFrom = 0;
  // Forwarding only.
  int to = -1;                    // where the message goes on to
  const float* local = nullptr;   // recvReduceSend: this rank's addend
  bool outHeaderDone = false;
  int refs = 0;  // its request, plus each queue it sits in
  bool forwards() const { return kind == kRecvReduceSend || kind == kRecvCopySend; }
};

void ShmTransport::unref(Op* op) {
  if (--op->refs > 0) return;
  op->~Op();
  SlotPool::give(op);
}

namespace {

// Lives in a slot of its transport's request pool: `delete` through unique_ptr<Request> reaches
// the class's operator delete (the destructor is virtual), which hands the slot back.
class ShmRequest final : public Request {
 public:
  static void* operator new(std::size_t, SlotPool& pool) { return pool.take(); }
  static void operator delete(void* p) { SlotPool::give(p); }
  static void operator delete(void* p, SlotPool&) { SlotPool::give(p); }  // if the constructor throws

  ShmRequest(ShmTransport& t, ShmTransport::Op* op) : t_(t), op_(op) {}
  ~ShmRequest() override { ShmTransport::unref(op_); }
  void wait() override { t_.waitFor(*op_); }

 private:
  ShmTransport& t_;
  ShmTransport::Op* op_;
};

ChannelHeader* channel(ShmTransport::Segment* seg, std::size_t channelBytes, int src) {
  char* base = reinterpret_cast<char*>(seg) + kSegHeader;
  return reinterpret_cast<ChannelHeader*>(base + src * (sizeof(ChannelHeader) + channelBytes));
}
char* ringData(ChannelHeader* ch) { return reinterpret_cast<char*>(ch + 1); }

void* mapSegment(const std::string& name, std::size_t bytes, bool create) {
  int fd = shm_open(name.c_str(), create ? (O_CREAT | O_EXCL | O_RDWR) : O_RDWR, 0600);
  if (fd < 0) {
    int e = errno;
    TPB_THROW(Error, "shm_open(" << name << "): " << std::strerror(e));
  }
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(name.c_str());
    TPB_THROW(Error, "ftruncate(" << name << ", " << bytes << "): " << std::strerror(e)
                                  << " (is /dev/shm large enough?)");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != bytes) {
    close(fd);
    TPB_THROW(Error, "shm segment " << name << " has size " << st.st_size << ", expected " << bytes
                                    << " (ranks disagree on the channel size?)");
  }
  // MAP_POPULATE: fault every page in now, at setup. Otherwise the first trip of each message
  // through a ring pays a page fault per 4 KiB, which shows up as a slow first few hundred
  // iterations of small messages.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) TPB_THROW(Error, "mmap(" << name << "): " << std::strerror(e));
  return p;
}

}  // namespace

std::string ShmTransport::segmentName(const std::string& runId, int rank, int block) {
  return "/tpbench-" + runId + "-r" + std::to_string(rank) + (block >= 0 ? "-s" + std::to_string(block) : "");
}

void ShmTransport::removeSegments(const std::string& runId, int size) {
  for (int r = 0; r < size; ++r)
    for (int b = -1; b < kMaxSymmetric; ++b) shm_unlink(segmentName(runId, r, b).c_str());
}

void* ShmTransport::allocateSymmetric(std::size_t bytes) {
  TPB_CHECK(blocksMade_ < kMaxSymmetric, "shm: at most " << kMaxSymmetric << " symmetric blocks per run");
  const int id = blocksMade_++;
  SymmetricBlock b;
  b.bytes = roundUp(std::max<std::size_t>(bytes, 1), 4096);
  b.at.assign(size(), nullptr);
  const std::string mine = segmentName(runId_, rank(), id);
  const std::string key = "shm/" + runId_ + "/s" + std::to_string(id) + "/";
  try {
    // A new segment is zero-filled, and MAP_POPULATE faults it in before anything is timed.
    b.at[rank()] = static_cast<char*>(mapSegment(mine, b.bytes, /*create=*/true));
    store_.set(key + "ready/" + std::to_string(rank()), std::to_string(b.bytes));
    for (int r = 0; r < size(); ++r) {
      if (r == rank()) continue;
      const std::string theirs = store_.get(key + "ready/" + std::to_string(r));
      TPB_CHECK(theirs == std::to_string(b.bytes), "shm: rank " << r << " allocated a symmetric block of " << theirs
                                                                 << " bytes where rank " << rank() << " allocated "
                                                                 << b.bytes);
      b.at[r] = static_cast<char*>(mapSegment(segmentName(runId_, r, id), b.bytes, false));
    }
    store_.add(key + "mapped", 1);
    const auto deadline = std::chrono::steady_clock::now() + timeout();
    while (store_.add(key + "mapped", 0) < size()) {
      if (std::chrono::steady_clock::now() > deadline)
        TPB_THROW(TimeoutError, "shm: not every rank mapped symmetric block " << id << " within "
                                                                             << timeout().count() << " ms");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    shm_unlink(mine.c_str());
  } catch (...) {
    shm_unlink(mine.c_str());
    for (char* p : b.at)
      if (p) munmap(p, b.bytes);
    throw;
  }
  blocks_.push_back(std::move(b));
  return blocks_.back().at[rank()];
}

void* ShmTransport::peerAddress(int peer, const void* local) const {
  checkPeer(peer, "peerAddress");
  const char* p = static_cast<const char*>(local);
  for (const SymmetricBlock& b : blocks_) {
    const char* base = b.at[rank()];
    if (p >= base && p < base + b.bytes) return b.at[peer] + (p - base);
  }
  return nullptr;
}

void ShmTransport::freeSymmetric(void* block) {
  for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
    if (it->at[rank()] != block) continue;
    for (char* p : it->at) munmap(p, it->bytes);
    blocks_.erase(it);
    return;
  }
}

ShmTransport::ShmTransport(Store& store, const std::string& runId, int rank, int size,
                           std::chrono::milliseconds timeout, ShmOptions options)
    : Transport(rank, size, Device::Cpu, timeout),
      opt_(options),
      store_(store),
      runId_(runId),
      spin_(static_cast<unsigned>(size) <= std::max(1u, availableCores())),
      segs_(size, nullptr),
      ops_(SlotPool::create(sizeof(Op))),
      requests_(SlotPool::create(sizeof(ShmRequest))),
      sendQ_(size),
      recvQ_(size),
      sendHead_(size, 0),
      recvTail_(size, 0),
      pullQ_(size),
      pullsPosted_(size, 0),
      pullsDone_(size, 0),
      pids_(size, 0),
      canPull_(size, 0) {
  TPB_CHECK(opt_.channelBytes >= 4 * kLine && opt_.channelBytes % kLine == 0,
            "shm channel size must be a multiple of " << kLine << " bytes, got " << opt_.channelBytes);
  opt_.sliceBytes = std::max(kLine, roundUp(std::min(opt_.sliceBytes, opt_.channelBytes / 2), kLine));
  if (size == 1) return;
  segBytes_ = kSegHeader + static_cast<std::size_t>(size) * (sizeof(ChannelHeader) + opt_.channelBytes);
  const std::string mine = segmentName(runId, rank);
  const std::string key = "shm/" + runId + "/";
  try {
    void* p = mapSegment(mine, segBytes_, /*create=*/true);
    auto* seg = new (p) Segment{};
    seg->size = static_cast<std::uint32_t>(size);
    seg->rank = static_cast<std::uint32_t>(rank);
    seg->channelBytes = opt_.channelBytes;
    seg->pid = getpid();
    seg->mapping = reinterpret_cast<std::uintptr_t>(p);
    for (int src = 0; src < size; ++src) new (channel(seg, opt_.channelBytes, src)) ChannelHeader{};
    // Where Yama restricts ptrace to descendants, let the ranks' common parent (tpbench's
    // launcher, mpirun's daemon, torchrun's agent) and so the sibling ranks read this process.
    if (opt_.singleCopy) prctl(PR_SET_PTRACER, static_cast<unsigned long>(getppid()), 0, 0, 0);
    std::atomic_thread_fence(std::memory_order_release);
    seg->magic = kMagic;
    segs_[rank] = seg;
    // Each rank says where it may run: bound to one core each (--bind core) or free to run
    // anywhere, the ranks have a core each when their masks name at least as many cores as ranks.
    const std::string cpus = affinityList();
    store.set(key + "ready/" + std::to_string(rank), cpus);
    std::vector<std::string> masks{cpus};
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      masks.push_back(store.get(key + "ready/" + std::to_string(r)));
      segs_[r] = static_cast<Segment*>(mapSegment(segmentName(runId, r), segBytes_, false));
      TPB_CHECK(segs_[r]->magic == kMagic && segs_[r]->rank == static_cast<std::uint32_t>(r),
                "shm segment of rank " << r << " is not initialised");
      pids_[r] = static_cast<pid_t>(segs_[r]->pid);
      // Single copy from r where the kernel lets this rank read r's memory (a container's
      // seccomp policy or Yama may not): read the magic at the head of r's own mapping.
      std::uint64_t magic = 0;
      if (opt_.singleCopy && readPeer(pids_[r], &magic, segs_[r]->mapping, sizeof magic) && magic == kMagic)
        channel(seg, opt_.channelBytes, r)->pullOk.v.store(1, std::memory_order_release);
    }
    if (const unsigned shared = distinctCpus(masks); shared > 0) spin_ = static_cast<unsigned>(size) <= shared;
    // Everyone has mapped everything: the names are no longer needed, so nothing can leak.
    store.add(key + "mapped", 1);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (store.add(key + "mapped", 0) < size) {
      if (std::chrono::steady_clock::now() > deadline)
        TPB_THROW(TimeoutError, "shm setup: not every rank mapped its peers within "
                                    << timeout.count() << " ms");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    shm_unlink(mine.c_str());
    // Every receiver has tried its peers (before it counted itself mapped).
    for (int r = 0; r < size; ++r)
      if (r != rank)
        canPull_[r] = channel(segs_[r], opt_.channelBytes, rank)->pullOk.v.load(std::memory_order_acquire) != 0;
    scratch_.resize(opt_.sliceBytes / sizeof(float));
  } catch (...) {
    shm_unlink(mine.c_str());
    for (auto* s : segs_)
      if (s) munmap(s, segBytes_);
    ops_->release();
    requests_->release();
    throw;
  }
}

ShmTransport::~ShmTransport() {
  for (auto& queues : {&sendQ_, &recvQ_, &pullQ_})
    for (auto& q : *queues)
      for (; !q.empty(); q.pop()) unref(q.front());
  for (auto* s : segs_)
    if (s) munmap(s, segBytes_);
  for (auto& b : blocks_)
    for (char* p : b.at) munmap(p, b.bytes);
  ops_->release();
  requests_->release();
}

// An op held by the request about to be made for it; zero bytes complete at once.
ShmTransport::Op* ShmTransport::newOp(int kind, int peer, void* buf, std::size_t bytes) {
  Op* op = new (ops_->take()) Op{};
  op->kind = kind;
  op->peer = peer;
  op->buf = static_cast<char*>(buf);
  op->bytes = bytes;
  op->refs = 1;
  op->complete = bytes == 0;
  return op;
}

std::unique_ptr<Request> ShmTransport::request(Op* op) {
  return std::unique_ptr<Request>(new (*requests_) ShmRequest(*this, op));
}

ShmTransport::Op* ShmTransport::post(int peer, int kind, void* buf, std::size_t bytes) {
  Op* op = newOp(kind, peer, buf, bytes);
  if (op->complete) return op;
  (kind == kSend ? sendQ_ : recvQ_)[peer].push(op);
  ++op->refs;
  ++pending_;
  return op;
}

std::unique_ptr<Request> ShmTransport::isend(int peer, const void* buf, std::size_t bytes) {
  checkPeer(peer, "isend");
  countSend(bytes);
  Op* op = post(peer, kSend, const_cast<void*>(buf), bytes);
  // Half a ring and more is read by the receiver from `buf` itself where it can be: one copy
  // instead of two, and the message moves while this rank computes.
  if (!op->complete && bytes >= singleCopyMin() && canPull_[peer]) op->pullSeq = ++pullsPosted_[peer];
  auto req = request(op);
  // Eager: copy what the ring takes now (or announce a single-copy message). Data moves only
  // when this rank drives progress, so a sender that goes on computing (a pipeline stage after
  // sending its activations) would otherwise hold the message back until its next wait, and
  // the receiver would idle meanwhile.
  progress();
  return req;
}

std::unique_ptr<Request> ShmTransport::irecv(int peer, void* buf, std::size_t bytes) {
  checkPeer(peer, "irecv");
  countRecv(bytes);
  return request(post(peer, kRecv, buf, bytes));
}

std::unique_ptr<Request> ShmTransport::irecvReduce(int peer, float* dst, std::size_t count) {
  checkPeer(peer, "irecvReduce");
  countRecv(count * sizeof(float));
  return request(post(peer, kRecvReduce, dst, count * sizeof(float)));
}

std::size_t ShmTransport::fusedForwardLimit() const {
  // A ring of forwarding ops stalls if a rank's outgoing ring cannot take the message it is
  // forwarding while the one before it still sits there unread: keep two, plus headers, in it.
  return (opt_.channelBytes / 2 - 2 * kLine) / kLine * kLine;
}

ShmTransport::Op* ShmTransport::postForward(int kind, int from, int to, const float* local, char* keep,
                                            std::size_t bytes) {
  countRecv(bytes);
  countSend(bytes);
  Op* op = newOp(kind, from, keep, bytes);
  op->to = to;
  op->local = local;
  if (op->complete) return op;
  recvQ_[from].push(op);
  sendQ_[to].push(op);
  op->refs += 2;
  pending_ += 2;
  return op;
}

std::unique_ptr<Request> ShmTransport::irecvReduceSend(int from, const float* local, float* keep,
                                                       std::size_t count, int to) {
  checkPeer(from, "irecvReduceSend");
  checkPeer(to, "irecvReduceSend");
  TPB_CHECK(local != nullptr || count == 0, "irecvReduceSend needs this rank's addend");
  return request(postForward(kRecvReduceSend, from, to, local, reinterpret_cast<char*>(keep), count * sizeof(float)));
}

std::unique_ptr<Request> ShmTransport::irecvCopySend(int from, float* dst, std::size_t count, int to) {
  checkPeer(from, "irecvCopySend");
  checkPeer(to, "irecvCopySend");
  return request(postForward(kRecvCopySend, from, to, nullptr, reinterpret_cast<char*>(dst), count * sizeof(float)));
}

void ShmTransport::ring(int peer) {
  Segment* s = segs_[peer];
  s->doorbell.v.fetch_add(1, std::memory_order_seq_cst);
  if (s->waiters.v.load(std::memory_order_seq_cst) > 0) futexWake(&s->doorbell.v);
}

bool ShmTransport::progressSend(Op& op) {
  const std::size_t cap = opt_.channelBytes;
  ChannelHeader* ch = channel(segs_[op.peer], cap, rank());
  char* data = ringData(ch);
  std::uint64_t head = sendHead_[op.peer];
  const std::uint64_t tail = ch->tail.v.load(std::memory_order_acquire);
  std::size_t space = cap - static_cast<std::size_t>(head - tail);
  bool moved = false;
  if (!op.headerDone) {
    if (space < kLine) return false;
    writeHeader(data, head % cap, op.bytes, op.pullSeq ? op.buf : nullptr);
    head += kLine;
    space -= kLine;
    op.headerDone = true;
    moved = true;
  }
  if (op.pullSeq) {  // announced; the receiver reads it and counts it in `pulled` (progress())
    sendHead_[op.peer] = head;
    ch->head.v.store(head, std::memory_order_release);
    ring(op.peer);
    return true;
  }
  const std::size_t remaining = op.bytes - op.done;
  std::size_t n, advance;
  if (remaining <= opt_.sliceBytes && roundUp(remaining, kLine) <= space) {
    n = remaining;  // the last piece: padded so the next header stays cache-line aligned
    advance = roundUp(n, kLine);
  } else {
    n = std::min({remaining, opt_.sliceBytes, space});
    n -= n % kLine;  // partial pieces keep head 64-aligned, so every float stays whole
    advance = n;
  }
  if (n > 0) {
    const std::size_t pos = head % cap;
    const std::size_t first = std::min(n, cap - pos);
    std::memcpy(data + pos, op.buf + op.done, first);
    if (n > first) std::memcpy(data, op.buf + op.done + first, n - first);
    op.done += n;
    head += advance;
    moved = true;
  }
  if (moved) {
    sendHead_[op.peer] = head;
    ch->head.v.store(head, std::memory_order_release);
    ring(op.peer);
  }
  if (op.done == op.bytes) op.complete = true;
  return moved;
}

bool ShmTransport::progressRecv(Op& op) {
  const std::size_t cap = opt_.channelBytes;
  ChannelHeader* ch = channel(segs_[rank()], cap, op.peer);
  const char* data = ringData(ch);
  std::uint64_t tail = recvTail_[op.peer];
  const std::uint64_t head = ch->head.v.load(std::memory_order_acquire);
  std::size_t avail = static_cast<std::size_t>(head - tail);
  bool moved = false;
  if (!op.headerDone) {
    if (avail < kLine) return false;
    op.pullFrom = checkHeader(data, tail % cap, op.peer, rank(), op.bytes, "receive");
    tail += kLine;
    avail -= kLine;
    op.headerDone = true;
    moved = true;
  }
  if (op.pullFrom) {
    if (moved) {
      recvTail_[op.peer] = tail;
      ch->tail.v.store(tail, std::memory_order_release);
    }
    pull(op, ch);
    return true;
  }
  const std::size_t remaining = op.bytes - op.done;
  std::size_t n = std::min({remaining, opt_.sliceBytes, avail});
  // avail is always a multiple of 64 (the sender pads), so n is too unless it is the tail end.
  const std::size_t advance = (n == remaining) ? roundUp(n, kLine) : n;
  if (n > 0) {
    const std::size_t pos = tail % cap;
    const std::size_t first = std::min(n, cap - pos);
    if (op.kind == kRecvReduce) {
      // Offsets are multiples of 64 (and the wrap point is too), so pieces hold whole floats.
      float* dst = reinterpret_cast<float*>(op.buf + op.done);
      reduceSum(dst, reinterpret_cast<const float*>(data + pos), first / sizeof(float));
      if (n > first)
        reduceSum(dst + first / sizeof(float), reinterpret_cast<const float*>(data),
                  (n - first) / sizeof(float));
    } else {
      std::memcpy(op.buf + op.done, data + pos, first);
      if (n > first) std::memcpy(op.buf + op.done + first, data, n - first);
    }
    op.done += n;
    tail += advance;
    moved = true;
  }
  if (moved) {
    recvTail_[op.peer] = tail;
    ch->tail.v.store(tail, std::memory_order_release);
    ring(op.peer);
  }
  if (op.done == op.bytes) op.complete = true;
  return moved;
}

void ShmTransport::readSlice(const Op& op, void* into, std::size_t n) {
  if (readPeer(pids_[op.peer], into, op.pullFrom + op.done, n)) return;
  const int e = errno;
  TPB_THROW(Error, "shm: reading rank " << op.peer << "'s message (" << op.bytes << " bytes) from its memory: "
                                        << std::strerror(e) << "; is that rank alive?");
}

void ShmTransport::pull(Op& op, void* channelHeader) {
  // A slice per call, as through the ring, so other ops are served between them.
  const std::size_t n = std::min(op.bytes - op.done, opt_.sliceBytes);
  const bool reduce = op.kind == kRecvReduce;
  readSlice(op, reduce ? static_cast<void*>(scratch_.data()) : op.buf + op.done, n);
  if (reduce) reduceSum(reinterpret_cast<float*>(op.buf + op.done), scratch_.data(), n / sizeof(float));
  op.done += n;
  if (op.done < op.bytes) return;
  op.complete = true;
  pulledAll(op.peer, channelHeader);
}

void ShmTransport::pulledAll(int from, void* channelHeader) {
  static_cast<ChannelHeader*>(channelHeader)->pulled.v.store(++pullsDone_[from], std::memory_order_release);
  ring(from);
}

bool ShmTransport::progressForward(Op& op) {
  // Only at the head of both its queues: every earlier message on either pair goes first.
  if (recvQ_[op.peer].empty() || recvQ_[op.peer].front() != &op || sendQ_[op.to].empty() ||
      sendQ_[op.to].front() != &op)
    return false;
  const std::size_t cap = opt_.channelBytes;
  ChannelHeader* in = channel(segs_[rank()], cap, op.peer);
  ChannelHeader* out = channel(segs_[op.to], cap, rank());
  const char* inData = ringData(in);
  char* outData = ringData(out);
  std::uint64_t tail = recvTail_[op.peer], head = sendHead_[op.to];
  std::size_t avail = static_cast<std::size_t>(in->head.v.load(std::memory_order_acquire) - tail);
  std::size_t space = cap - static_cast<std::size_t>(head - out->tail.v.load(std::memory_order_acquire));
  bool readIn = false, wroteOut = false;
  if (!op.headerDone && avail >= kLine) {
    op.pullFrom = checkHeader(inData, tail % cap, op.peer, rank(), op.bytes, "forwarding receive");
    tail += kLine;
    avail -= kLine;
    op.headerDone = readIn = true;
  }
  if (!op.outHeaderDone && space >= kLine) {
    writeHeader(outData, head % cap, op.bytes);
    head += kLine;
    space -= kLine;
    op.outHeaderDone = wroteOut = true;
  }
  if (op.headerDone && op.outHeaderDone) {
    // Both rings stay 64-byte aligned: partial pieces are whole lines, and only the message's
    // last piece is padded (its sender padded it too, so the padding is there to skip).
    // A single-copy message comes a slice at a time from the sender's buffer, through scratch_.
    const std::size_t remaining = op.bytes - op.done;
    std::size_t n = std::min({remaining, opt_.sliceBytes, op.pullFrom ? remaining : avail, space});
    if (n < remaining || roundUp(n, kLine) > space) n = std::min(n, space) / kLine * kLine;
    const std::size_t advance = n == remaining ? roundUp(n, kLine) : n;
    if (op.pullFrom && n > 0) readSlice(op, scratch_.data(), n);
    for (std::size_t m = 0; m < n;) {
      const std::size_t inPos = (tail + m) % cap, outPos = (head + m) % cap;
      const std::size_t len = std::min({n - m, op.pullFrom ? n - m : cap - inPos, cap - outPos});
      const float* src = op.pullFrom ? scratch_.data() + m / sizeof(float)
                                     : reinterpret_cast<const float*>(inData + inPos);
      float* dst = reinterpret_cast<float*>(outData + outPos);
      const std::size_t k = len / sizeof(float), at = (op.done + m) / sizeof(float);
      if (op.kind == kRecvReduceSend) {
        addInto(dst, src, op.local + at, k);
      } else {
        std::memcpy(dst, src, len);
      }
      if (op.buf) std::memcpy(op.buf + op.done + m, dst, len);
      m += len;
    }
    if (n > 0) {
      op.done += n;
      if (!op.pullFrom) {
        tail += advance;
        readIn = true;
      }
      head += advance;
      wroteOut = true;
    }
    if (op.done == op.bytes) {
      op.complete = true;
      if (op.pullFrom) pulledAll(op.peer, in);
    }
  }
  if (readIn) {
    recvTail_[op.peer] = tail;
    in->tail.v.store(tail, std::memory_order_release);
    ring(op.peer);
  }
  if (wroteOut) {
    sendHead_[op.to] = head;
    out->head.v.store(head, std::memory_order_release);
    ring(op.to);
  }
  return readIn || wroteOut;
}

bool ShmTransport::progress() {
  bool moved = false;
  for (int p = 0; p < size(); ++p) {
    // Alternate sends and receives slice by slice, so a sendRecv streams both ways at once. A
    // forwarding op is driven from whichever of its two queues reaches it; once complete it is
    // popped from each as that queue comes round.
    auto& sq = sendQ_[p];
    while (!sq.empty()) {
      Op& op = *sq.front();
      if (!op.complete) moved |= op.forwards() ? progressForward(op) : progressSend(op);
      if (!op.complete && !(op.pullSeq && op.headerDone)) break;
      sq.pop();
      if (op.complete) {
        unref(&op);
        --pending_;
      } else {
        pullQ_[p].push(&op);  // announced: the sends behind it go on while the receiver reads it
      }
    }
    auto& pq = pullQ_[p];
    if (!pq.empty()) {
      const std::uint64_t pulled =
          channel(segs_[p], opt_.channelBytes, rank())->pulled.v.load(std::memory_order_acquire);
      for (; !pq.empty() && pq.front()->pullSeq <= pulled; pq.pop()) {
        pq.front()->complete = true;
        unref(pq.front());
        --pending_;
        moved = true;
      }
    }
    auto& rq = recvQ_[p];
    while (!rq.empty()) {
      Op& op = *rq.front();
      if (!op.complete) moved |= op.forwards() ? progressForward(op) : progressRecv(op);
      if (!op.complete) break;
      rq.pop();
      unref(&op);
      --pending_;
    }
  }
  return moved;
}
void ShmTransport::waitFor(const Op& op) {
  using clock = std::chrono::steady_clock;
  // Poll before sleeping: a futex wake-up costs tens to hundreds of microseconds on a VM, and a
  // rank that sleeps in a barrier starts the next timed iteration that much late. When every
  // rank has a core, poll with a pause between polls. When ranks outnumber cores, the peer this
  // rank waits for may be waiting for this rank's core, so give it up between polls
  // (sched_yield, as Open MPI does when oversubscribed): the peer runs at once instead of after
  // a futex round trip, and the rank is back as soon as the scheduler comes round to it.
  const auto pollFor = std::chrono::microseconds(2000);
  auto lastMove = clock::now();
  Segment* me = segs_[rank()];
  unsigned polls = 0;
  while (!op.complete) {
    if (progress()) {
      lastMove = clock::now();
      continue;
    }
    if (++polls % 64 != 0 || clock::now() - lastMove < pollFor) {
      if (spin_) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } else {
        sched_yield();
      }
      continue;
    }
    me->waiters.v.fetch_add(1, std::memory_order_seq_cst);
    const std::uint32_t seen = me->doorbell.v.load(std::memory_order_seq_cst);
    const bool moved = progress();
    if (!moved && !op.complete) futexWait(&me->doorbell.v, seen, std::chrono::milliseconds(20));
    me->waiters.v.fetch_sub(1, std::memory_order_seq_cst);
    if (moved) {
      lastMove = clock::now();
    } else if (clock::now() - lastMove > timeout()) {
      const std::string what = op.kind == kSend ? "send to rank " + std::to_string(op.peer)
                               : op.forwards()  ? "forward from rank " + std::to_string(op.peer) +
                                                      " to rank " + std::to_string(op.to)
                                                 : "recv from rank " + std::to_string(op.peer);
      TPB_THROW(TimeoutError, "shm " << what << " made no progress for " << timeout().count() << " ms ("
                                     << op.done << " of " << op.bytes
                                     << " bytes done); is that rank alive?");
    }
  }
}

bool shmSingleCopyFromEnv() {
  const char* v = std::getenv("TPB_SHM_SINGLE_COPY");
  if (!v || !*v || std::strcmp(v, "1") == 0) return true;
  if (std::strcmp(v, "0") == 0) return false;
  TPB_THROW(UsageError, "TPB_SHM_SINGLE_COPY: must be 0 or 1, got '" << v << "'");
}

TransportInfo shmTransportInfo() {
  TransportInfo t;
  t.name = "shm";
  t.order = 10;
  t.description = "POSIX shared memory between the ranks of one node (from scratch)";
  t.symmetricMemory = true;
  t.unsupported = [](Device device, int size, int localSize) -> std::string {
    if (device != Device::Cpu) return "shm moves host memory only";
    if (localSize != size) return "shm needs every rank on one node; use gloo across nodes";
    return {};
  };
  t.make = [](const TransportArgs& a) -> std::unique_ptr<Transport> {
    ShmOptions o;
    o.singleCopy = shmSingleCopyFromEnv();
    return std::make_unique<ShmTransport>(a.store, a.runId, a.rank, a.size, a.timeout, o);
  };
  t.cleanup = [](const std::string& runId, int worldSize) { ShmTransport::removeSegments(runId, worldSize); };
  return t;
}
TPB_REGISTER_TRANSPORT(shmTransportInfo);

}  // namespace tpb
