#include "comm/grouped/grouped_transport.h"

#include "comm/group_request.h"
#include "comm/reduce.h"
#include "comm/shm/shm_transport.h"
#include "comm/transports.h"
#include "common/error.h"

namespace tpb {

// One launched (or still queued) group. Every request posted into it shares it; `complete` and
// `launched` are guarded by the transport's mutex.
struct GroupedTransport::Group {
  std::vector<Op> ops;
  bool launched = false;
  bool complete = false;
};

namespace {

// The announcements need no room: one byte in flight per receive.
ShmOptions controlOptions() {
  ShmOptions o;
  o.channelBytes = 64u << 10;
  return o;
}

const std::uint8_t kClearToSend = 0xc5;

}  // namespace

GroupedTransport::GroupedTransport(Store& store, const std::string& runId, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : Transport(rank, size, Device::Cpu, timeout),
      data_(std::make_unique<ShmTransport>(store, dataRunId(runId), rank, size, timeout)),
      control_(std::make_unique<ShmTransport>(store, controlRunId(runId), rank, size, timeout, controlOptions())),
      open_(std::make_shared<Group>()) {
  stream_ = std::thread([this] { streamLoop(); });
}

GroupedTransport::~GroupedTransport() {
  // As the nccl transport's shutdown: what was posted but never waited is launched and run to
  // its end, unless the stream already failed (its peers may be gone) or an exception unwinds.
  try {
    if (std::uncaught_exceptions() == 0 && !abandoned_) flush();
  } catch (...) {
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (std::uncaught_exceptions() > 0 || abandoned_) launched_.clear();
  }
  cv_.notify_all();
  stream_.join();
}

std::unique_ptr<Request> GroupedTransport::post(OpKind kind, int peer, void* buf, std::size_t bytes,
                                                const char* what) {
  checkPeer(peer, what);
  if (bytes == 0) return std::make_unique<DoneRequest>();
  if (kind == OpKind::Send) countSend(bytes);
  else countRecv(bytes);
  open_->ops.push_back({kind, peer, buf, bytes});
  return std::make_unique<GroupRequest<GroupedTransport>>(*this, open_, what, peer);
}

std::unique_ptr<Request> GroupedTransport::isend(int peer, const void* buf, std::size_t bytes) {
  return post(OpKind::Send, peer, const_cast<void*>(buf), bytes, "send to");
}

std::unique_ptr<Request> GroupedTransport::irecv(int peer, void* buf, std::size_t bytes) {
  return post(OpKind::Recv, peer, buf, bytes, "recv from");
}

std::unique_ptr<Request> GroupedTransport::irecvReduce(int peer, float* dst, std::size_t count) {
  return post(OpKind::RecvReduce, peer, dst, count * sizeof(float), "recvReduce from");
}

void GroupedTransport::flush() {
  if (open_->ops.empty()) return;
  std::shared_ptr<Group> g = std::move(open_);
  open_ = std::make_shared<Group>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    g->launched = true;
    if (failure_) return;  // waiting on it rethrows the failure
    launched_.push_back(std::move(g));
  }
  cv_.notify_all();
}

void GroupedTransport::markFailed() {
  std::lock_guard<std::mutex> lock(mu_);
  abandoned_ = true;
  launched_.clear();
}

void GroupedTransport::barrier() {
  flush();  // as before a collective: what is queued goes first
  Transport::barrier();
}

void GroupedTransport::waitGroup(Group& g, const char* what, int peer) {
  if (!g.launched) flush();
  std::unique_lock<std::mutex> lock(mu_);
  // The stream throws TimeoutError itself when a peer stops answering (shm's waits are bounded),
  // so this only guards against a stream that stopped without throwing: it fails when no group
  // at all has completed for twice the timeout, which a stream that is waiting on a peer never
  // reaches first.
  const auto limit = 2 * timeout() + std::chrono::seconds(5);
  for (;;) {
    const std::uint64_t seen = completed_;
    if (cv_.wait_for(lock, limit, [&] { return g.complete || failure_ || completed_ != seen; })) {
      if (g.complete || failure_) break;
      continue;
    }
    TPB_THROW(TimeoutError, "grouped " << what << " rank " << peer << " (rank " << rank() << " of " << size()
                                       << "): its stream made no progress for "
                                       << std::chrono::duration_cast<std::chrono::milliseconds>(limit).count()
                                       << " ms");
  }
  if (!g.complete) std::rethrow_exception(failure_);
}

void GroupedTransport::streamLoop() {
  for (;;) {
    std::shared_ptr<Group> g;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !launched_.empty(); });
      if (launched_.empty()) return;
      g = std::move(launched_.front());
      launched_.pop_front();
    }
    try {
      runGroup(g->ops);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      failure_ = std::current_exception();
      launched_.clear();
      cv_.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      g->complete = true;
      ++completed_;
    }
    cv_.notify_all();
  }
}

void GroupedTransport::runGroup(const std::vector<Op>& ops) {
  // The group is active: every receive is announced to its sender at once. Every operation's
  // bytes are posted at once too and progress together, as NCCL progresses a group's operations
  // together (waiting for one send's announcement before posting the next would stall a group
  // whose later send needs the peer to receive its earlier one first). A send is complete only
  // once its receiver's announcement has come as well, so the group, and the stream behind it,
  // wait for the receiving group to be running, as on NCCL.
  std::vector<std::unique_ptr<Request>> moving, clearances;
  std::vector<std::vector<float>> sums(ops.size());
  std::vector<std::uint8_t> heard(ops.size(), 0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind == OpKind::Send) {
      clearances.push_back(control_->irecv(op.peer, &heard[i], 1));
      moving.push_back(data_->isend(op.peer, op.buf, op.bytes));
      continue;
    }
    moving.push_back(control_->isend(op.peer, &kClearToSend, 1));
    void* into = op.buf;
    if (op.kind == OpKind::RecvReduce) {
      sums[i].resize(op.bytes / sizeof(float));
      into = sums[i].data();
    }
    moving.push_back(data_->irecv(op.peer, into, op.bytes));
  }
  for (auto& r : moving) r->wait();
  for (auto& r : clearances) r->wait();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == OpKind::Send)
      TPB_CHECK(heard[i] == kClearToSend, "grouped send to rank " << ops[i].peer << ": bad announcement " << int(heard[i]));
    if (ops[i].kind == OpKind::RecvReduce) reduceSum(static_cast<float*>(ops[i].buf), sums[i].data(), sums[i].size());
  }
}

TransportInfo groupedTransportInfo() {
  TransportInfo t;
  t.name = "grouped";
  t.order = 20;
  t.description =
      "shm run under NCCL's group semantics (posts deferred to a wait or flush, one group at a time per rank, "
      "sends wait for their receive): shows on the CPU how a schedule would run over nccl";
  t.unsupported = [](Device device, int size, int localSize) -> std::string {
    if (device != Device::Cpu) return "grouped moves host memory only";
    if (localSize != size) return "grouped needs every rank on one node";
    return {};
  };
  t.make = [](const TransportArgs& a) -> std::unique_ptr<Transport> {
    return std::make_unique<GroupedTransport>(a.store, a.runId, a.rank, a.size, a.timeout);
  };
  t.cleanup = [](const std::string& runId, int worldSize) {
    ShmTransport::removeSegments(GroupedTransport::dataRunId(runId), worldSize);
    ShmTransport::removeSegments(GroupedTransport::controlRunId(runId), worldSize);
  };
  return t;
}
TPB_REGISTER_TRANSPORT(groupedTransportInfo);

}  // namespace tpb
