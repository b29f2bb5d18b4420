#include "comm/nccl/nccl_transport.h"

#include <cstring>
#include <exception>
#include <thread>

#include "comm/cuda/cuda_check.h"
#include "comm/cuda/devices.h"
#include "comm/cuda/gpu_trace.h"
#include "comm/cuda/reduce_cuda.h"
#include "comm/group_request.h"
#include "comm/store.h"
#include "comm/transports.h"
#include "common/error.h"

namespace tpb {

// One launched (or still queued) NCCL group. Every request posted into it shares it.
struct NcclTransport::Group {
  cudaEvent_t done = nullptr;  // recorded after the group's operations and sums
  bool launched = false;
  bool complete = false;
  ~Group() {
    // Destroying an event that is still pending is allowed; CUDA releases it once it fires.
    if (done) cudaEventDestroy(done);
  }
};

namespace {

using NcclRequest = GroupRequest<NcclTransport>;

// Scratch offsets are rounded up so every message in the arena starts 256-byte aligned: the
// sum kernel then takes its float4 path whenever dst is 16-byte aligned too.
constexpr std::size_t kScratchAlign = 256;

std::string peerText(int peer) { return peer < 0 ? std::string("all ranks") : "rank " + std::to_string(peer); }

}  // namespace

NcclTransport::NcclTransport(Store& store, const std::string& runId, int rank, int size,
                             int cudaDevice, std::chrono::milliseconds timeout)
    : Transport(rank, size, Device::Cuda, timeout), device_(cudaDevice),
      open_(std::make_shared<Group>()) {
  int visible = 0;
  const cudaError_t countErr = cudaGetDeviceCount(&visible);
  if (countErr != cudaSuccess || visible == 0) {
    TPB_THROW(Error, "nccl transport, rank " << rank << ": no usable CUDA GPU ("
                                             << (countErr != cudaSuccess ? cudaGetErrorString(countErr)
                                                                         : "cudaGetDeviceCount found none")
                                             << ")");
  }
  device_ = rankCudaDevice(cudaDevice, visible);  // cuda:0 where this rank sees its own GPU only
  if (device_ < 0) {
    TPB_THROW(Error, "nccl transport, rank " << rank << ": LOCAL_RANK " << cudaDevice
                                             << " has no GPU (" << visible
                                             << " visible); NCCL needs one GPU per rank on a node");
  }
  // The device must be current before the communicator is made: NCCL binds it to the current GPU.
  TPB_CUDA_CHECK(cudaSetDevice(device_));
  loadReduceSumKernel();  // not at the first irecvReduce, beside a running NCCL kernel

  ncclUniqueId id;
  const std::string key = "nccl/" + runId + "/unique_id";
  if (rank == 0) {
    TPB_NCCL_CHECK(ncclGetUniqueId(&id));
    store.set(key, std::string(reinterpret_cast<const char*>(&id), sizeof id));
  } else {
    const std::string bytes = store.get(key);
    TPB_CHECK(bytes.size() == sizeof id, "store key " << key << " holds " << bytes.size()
                                                      << " bytes, not an ncclUniqueId ("
                                                      << sizeof id << " bytes)");
    std::memcpy(&id, bytes.data(), sizeof id);
  }
  TPB_NCCL_CHECK(ncclCommInitRank(&comm_, size, id, rank));

  try {
    TPB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TPB_CUDA_CHECK(cudaEventCreateWithFlags(&upstream_, cudaEventDisableTiming));
    TPB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&barrierBuf_), sizeof(int)));
    TPB_CUDA_CHECK(cudaMemset(barrierBuf_, 0, sizeof(int)));
    if (size > 1) {
      // Connect every pair now, with one symmetric group (one byte to and from every peer). NCCL
      // sets up point-to-point connections on first use, which needs both peers to take part;
      // the parameter server's first groups are one-sided (rank 0 receives from one worker while
      // that worker's group also holds receives from rank 0), and doing the setup here keeps
      // that exchange out of the timed loop as well.
      // Owned, so a wait that throws (a peer that never connects) does not leak it; after an
      // abort the stream is idle and freeing it is safe.
      void* raw = nullptr;
      TPB_CUDA_CHECK(cudaMalloc(&raw, 2 * static_cast<std::size_t>(size)));
      const std::unique_ptr<char, void (*)(char*)> bytes(static_cast<char*>(raw),
                                                         [](char* b) { cudaFree(b); });
      std::vector<std::unique_ptr<Request>> reqs;
      for (int p = 0; p < size; ++p) {
        if (p == rank) continue;
        reqs.push_back(irecv(p, bytes.get() + p, 1));
        reqs.push_back(isend(p, bytes.get() + size + p, 1));
      }
      for (auto& r : reqs) r->wait();
    }
  } catch (...) {
    // The destructor does not run for a throwing constructor: release here.
    failed_ = true;
    shutdown();
    throw;
  }
}

NcclTransport::~NcclTransport() { shutdown(); }

namespace {

class CudaEventTimer final : public IntervalTimer {
 public:
  explicit CudaEventTimer(cudaStream_t stream) : stream_(stream) {
    TPB_CUDA_CHECK(cudaEventCreate(&start_));
    if (cudaEventCreate(&stop_) != cudaSuccess) {
      cudaEventDestroy(start_);
      TPB_THROW(Error, "cudaEventCreate failed");
    }
  }
  ~CudaEventTimer() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  const char* method() const override { return "cuda_events"; }
  void start() override { TPB_CUDA_CHECK(cudaEventRecord(start_, stream_)); }
  void queueStop() override {
    TPB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    stopQueued_ = true;
  }
  double stopUs() override {
    if (!stopQueued_) TPB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    stopQueued_ = false;
    TPB_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    TPB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms) * 1000.0;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  bool stopQueued_ = false;
};

}  // namespace

std::unique_ptr<IntervalTimer> NcclTransport::makeTimer() {
  makeCurrent();  // the events belong to this transport's GPU
  return std::make_unique<CudaEventTimer>(stream_);
}

void NcclTransport::shutdown() {
  // Nothing here may throw. A clean shutdown waits for the stream and destroys the communicator;
  // after any failure (or while an exception unwinds) the peers may be gone, and ncclCommDestroy
  // could wait for them forever, so the communicator is aborted instead.
  if (comm_ && !failed_ && std::uncaught_exceptions() == 0) {
    try {
      auto g = std::make_shared<Group>();
      flush();
      g->done = takeEvent();
      TPB_CUDA_CHECK(cudaEventRecord(g->done, stream_));
      g->launched = true;
      waitGroup(*g, "shutdown", -1);
    } catch (...) {
      failed_ = true;
    }
  }
  if (comm_) {
    if (failed_ || std::uncaught_exceptions() > 0)
      abortComm();
    else
      ncclCommDestroy(comm_);
    comm_ = nullptr;
  }
  cudaSetDevice(device_);
  pending_.clear();
  open_.reset();
  for (cudaEvent_t e : freeEvents_) cudaEventDestroy(e);
  freeEvents_.clear();
  if (scratch_ && stream_) cudaFreeAsync(scratch_, stream_);
  scratch_ = nullptr;
  if (barrierBuf_) cudaFree(barrierBuf_);
  barrierBuf_ = nullptr;
  if (upstream_) cudaEventDestroy(upstream_);
  upstream_ = nullptr;
  if (hostStage_) cudaFree(hostStage_);
  hostStage_ = nullptr;
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }
}

void NcclTransport::makeCurrent() const {
  // cudaSetDevice is per host thread; the stream and the sum kernel must run on our GPU.
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != device_) TPB_CUDA_CHECK(cudaSetDevice(device_));
}

void NcclTransport::checkUsable() const {
  if (aborted_)
    TPB_THROW(Error, "nccl transport (rank " << rank() << "): the communicator was aborted after an "
                                                            "earlier failure");
}

void NcclTransport::orderAfterDefaultStream() {
  // Recording and waiting are both asynchronous: the host does not block here. The event can be
  // re-recorded at once: a stream wait captures the work the event stands for when it is issued.
  TPB_CUDA_CHECK(cudaEventRecord(upstream_, cudaStreamLegacy));
  TPB_CUDA_CHECK(cudaStreamWaitEvent(stream_, upstream_, 0));
}

cudaEvent_t NcclTransport::takeEvent() {
  if (!freeEvents_.empty()) {
    cudaEvent_t e = freeEvents_.back();
    freeEvents_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  // Timing is off: such events are cheaper to record and query.
  TPB_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

std::unique_ptr<Request> NcclTransport::post(OpKind kind, int peer, void* buf, std::size_t bytes,
                                             const char* what) {
  checkPeer(peer, what);
  checkUsable();
  if (bytes == 0) return std::make_unique<DoneRequest>();
  if (kind == OpKind::Send) countSend(bytes);
  else countRecv(bytes);
  PendingOp op{kind, peer, buf, bytes, 0};
  if (kind == OpKind::RecvReduce) {
    op.scratchOffset = scratchUsed_;
    scratchUsed_ += (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
  }
  pending_.push_back(op);
  return std::make_unique<NcclRequest>(*this, open_, what, peer);
}

std::unique_ptr<Request> NcclTransport::isend(int peer, const void* buf, std::size_t bytes) {
  return post(OpKind::Send, peer, const_cast<void*>(buf), bytes, "send to");
}

std::unique_ptr<Request> NcclTransport::irecv(int peer, void* buf, std::size_t bytes) {
  return post(OpKind::Recv, peer, buf, bytes, "recv from");
}

std::unique_ptr<Request> NcclTransport::irecvReduce(int peer, float* dst, std::size_t count) {
  return post(OpKind::RecvReduce, peer, dst, count * sizeof(float), "recvReduce from");
}

void NcclTransport::flush() {
  if (pending_.empty()) return;
  checkUsable();
  makeCurrent();
  if (scratchUsed_ > scratchBytes_) {
    // Stream-ordered: the old arena is released only after the work already queued has used it.
    if (scratch_) TPB_CUDA_CHECK(cudaFreeAsync(scratch_, stream_));
    scratch_ = nullptr;
    scratchBytes_ = 0;
    TPB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch_), scratchUsed_, stream_));
    scratchBytes_ = scratchUsed_;
  }
  char* scratch = reinterpret_cast<char*>(scratch_);
  orderAfterDefaultStream();
  // On the GPU timeline (--trace): from the group's start on the stream, after the work it was
  // ordered behind, to the end of its sums.
  trace::GpuSpan span("nccl send/recv", trace::Category::Comm, trace::Track::GpuComm, device_, stream_, "ops",
                      static_cast<std::int64_t>(pending_.size()));

  // An error inside the group must still close it, or NCCL's group state stays open for every
  // later call; the first error is reported after ncclGroupEnd.
  TPB_NCCL_CHECK(ncclGroupStart());
  ncclResult_t first = ncclSuccess;
  const char* firstWhat = "";
  for (const PendingOp& op : pending_) {
    ncclResult_t r = ncclSuccess;
    switch (op.kind) {
      case OpKind::Send:
        r = ncclSend(op.buf, op.bytes, ncclUint8, op.peer, comm_, stream_);
        break;
      case OpKind::Recv:
        r = ncclRecv(op.buf, op.bytes, ncclUint8, op.peer, comm_, stream_);
        break;
      case OpKind::RecvReduce:
        r = ncclRecv(scratch + op.scratchOffset, op.bytes, ncclUint8, op.peer, comm_, stream_);
        break;
    }
    if (r != ncclSuccess && first == ncclSuccess) {
      first = r;
      firstWhat = op.kind == OpKind::Send ? "ncclSend" : "ncclRecv";
    }
  }
  const ncclResult_t end = ncclGroupEnd();
  if (first != ncclSuccess || end != ncclSuccess) {
    // The requests of this group can never complete: abort, so that waiting on them (or on
    // anything later) reports the failure instead of hanging.
    pending_.clear();
    scratchUsed_ = 0;
    abortComm();
    if (first != ncclSuccess) ncclCheck(first, firstWhat, __FILE__, __LINE__);
    TPB_NCCL_CHECK(end);
  }
  // The sums run after the whole group, in stream order; they cannot be placed inside it
  // (a kernel launched between ncclGroupStart and ncclGroupEnd would run before the receives).
  for (const PendingOp& op : pending_) {
    if (op.kind == OpKind::RecvReduce)
      reduceSumCuda(static_cast<float*>(op.buf), reinterpret_cast<const float*>(scratch + op.scratchOffset),
                    op.bytes / sizeof(float), stream_);
  }
  pending_.clear();
  scratchUsed_ = 0;
  auto g = std::move(open_);
  open_ = std::make_shared<Group>();
  g->done = takeEvent();
  TPB_CUDA_CHECK(cudaEventRecord(g->done, stream_));
  g->launched = true;
}

void NcclTransport::abortComm() {
  failed_ = true;
  if (comm_ && !aborted_) {
    // Ends the kernels that wait for a peer which is not coming, so the stream and this process
    // can shut down; the communicator is unusable afterwards.
    ncclCommAbort(comm_);
    comm_ = nullptr;
    aborted_ = true;
  }
}

void NcclTransport::abortAndThrow(bool timedOut, const std::string& msg) {
  abortComm();
  if (timedOut) TPB_THROW(TimeoutError, msg);
  TPB_THROW(Error, msg);
}

void NcclTransport::waitGroup(Group& g, const char* what, int peer) {
  if (g.complete) return;
  if (!g.launched) flush();
  checkUsable();
  TPB_CHECK(g.launched && g.done, "nccl " << what << " " << peerText(peer) << ": its group was never launched");
  makeCurrent();
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t polls = 0;; ++polls) {
    const cudaError_t e = cudaEventQuery(g.done);
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) {
      abortComm();
      TPB_CUDA_CHECK(e);
    }
    // Spin first (a small message completes in microseconds), then let other threads run.
    if (polls < 2048) continue;
    std::this_thread::yield();
    if (polls % 256 != 0) continue;
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess &&
        async != ncclInProgress) {
      abortAndThrow(false, "nccl " + std::string(what) + " " + peerText(peer) + " failed: " +
                               ncclGetErrorString(async) + " (a peer may have died); communicator aborted");
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited > timeout()) {
      abortAndThrow(true, "nccl " + std::string(what) + " " + peerText(peer) + " (rank " +
                              std::to_string(rank()) + " of " + std::to_string(size()) +
                              ") timed out after " + std::to_string(timeout().count()) +
                              " ms; communicator aborted");
    }
  }
  g.complete = true;
  freeEvents_.push_back(g.done);
  g.done = nullptr;
}

std::unique_ptr<Request> NcclTransport::startCollective(const char* what, const CollectiveOp& op) {
  checkUsable();
  flush();  // keep the transport's queued point-to-point operations ahead of the collective
  makeCurrent();
  orderAfterDefaultStream();
  trace::GpuSpan span(what, trace::Category::Comm, trace::Track::GpuComm, device_, stream_);
  const ncclResult_t r = op(comm_, stream_);
  if (r != ncclSuccess) {
    abortComm();
    ncclCheck(r, what, __FILE__, __LINE__);
  }
  auto g = std::make_shared<Group>();
  g->done = takeEvent();
  TPB_CUDA_CHECK(cudaEventRecord(g->done, stream_));
  g->launched = true;
  return std::make_unique<NcclRequest>(*this, std::move(g), what, -1);
}

void NcclTransport::runCollective(const char* what, const CollectiveOp& op) {
  startCollective(what, op)->wait();
}

void* NcclTransport::hostStage(std::size_t bytes) {
  makeCurrent();
  if (bytes > hostStageBytes_) {
    if (hostStage_) TPB_CUDA_CHECK(cudaFree(hostStage_));
    hostStage_ = nullptr;
    hostStageBytes_ = 0;
    TPB_CUDA_CHECK(cudaMalloc(&hostStage_, bytes));
    hostStageBytes_ = bytes;
  }
  return hostStage_;
}

void NcclTransport::sendHost(int peer, const void* buf, std::size_t bytes) {
  if (bytes == 0) return;
  void* d = hostStage(bytes);
  // Synchronous copy on the default stream; the send is ordered after it (orderAfterDefaultStream)
  // and waited for before the stage can be reused.
  TPB_CUDA_CHECK(cudaMemcpy(d, buf, bytes, cudaMemcpyHostToDevice));
  send(peer, d, bytes);
}

void NcclTransport::recvHost(int peer, void* buf, std::size_t bytes) {
  if (bytes == 0) return;
  void* d = hostStage(bytes);
  recv(peer, d, bytes);  // returns once the data is on the device
  TPB_CUDA_CHECK(cudaMemcpy(buf, d, bytes, cudaMemcpyDeviceToHost));
}

void NcclTransport::barrier() {
  if (size() == 1) return;
  runCollective("barrier (ncclAllReduce)", [this](ncclComm_t c, cudaStream_t s) {
    return ncclAllReduce(barrierBuf_, barrierBuf_, 1, ncclInt32, ncclSum, c, s);
  });
}

NcclTransport& ncclTransportOf(Transport& t, const char* who) {
  auto* nccl = dynamic_cast<NcclTransport*>(&t);
  if (!nccl)
    TPB_THROW(Error, who << " on cuda runs on the nccl transport's communicator, but this run's transport is "
                         << t.name());
  return *nccl;
}

// Compiled (so registered) only where NCCL is, so `tpbench list` shows what can run.
TransportInfo ncclTransportInfo() {
  TransportInfo t;
  t.name = "nccl";
  t.order = 50;
  t.description =
      "NCCL ncclSend/ncclRecv between GPUs, one GPU per rank (cuda:LOCAL_RANK; cuda:0 if it sees one)";
  t.unsupported = [](Device device, int, int) -> std::string {
    return device == Device::Cuda ? std::string()
                                  : std::string("nccl moves GPU memory only; use --device cuda");
  };
  t.make = [](const TransportArgs& a) -> std::unique_ptr<Transport> {
    const int localRank = a.localRank < 0 ? a.rank : a.localRank;
    return std::make_unique<NcclTransport>(a.store, a.runId, a.rank, a.size, localRank, a.timeout);
  };
  return t;
}
TPB_REGISTER_TRANSPORT(ncclTransportInfo);

}  // namespace tpb
