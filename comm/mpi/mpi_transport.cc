#include "comm/mpi/mpi_transport.h"

#include <sched.h>

#include <algorithm>

#include <vector>

#include "comm/mpi/mpi_runtime.h"
#include "comm/transports.h"
#include "common/error.h"

namespace tpb {

namespace {

constexpr int kTag = 0;  // one tag: MPI's non-overtaking rule then orders each pair's messages

// One posted send or receive: the MPI requests of its pieces (one unless above kMaxMessage).
class MpiRequest final : public Request {
 public:
  MpiRequest(bool isRecv, int peer, std::chrono::milliseconds timeout)
      : isRecv_(isRecv), peer_(peer), timeout_(timeout) {}

  ~MpiRequest() override {
    // Destroyed unwaited (an exception elsewhere, or after a timeout): the buffer may be about to
    // go, so stop what can be stopped. A receive not yet matched is cancelled; a send cannot be,
    // and is only released. Never throws.
    for (MPI_Request& r : reqs_) {
      if (r == MPI_REQUEST_NULL) continue;
      if (isRecv_) MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
  }

  // Posts one piece; `post` is MPI_Isend or MPI_Irecv bound to everything but the request.
  template <typename Post>
  void add(std::size_t pieceBytes, const Post& post) {
    reqs_.push_back(MPI_REQUEST_NULL);
    sizes_.push_back(static_cast<int>(pieceBytes));
    const int rc = post(static_cast<int>(pieceBytes), &reqs_.back());
    if (rc != MPI_SUCCESS)
      TPB_THROW(Error, "mpi " << what() << " rank " << peer_ << ": posting failed: " << mpi::errorText(rc));
  }

  void wait() override {
    if (done_) return;
    mpi::checkThread("mpi transport wait");
    std::vector<MPI_Status> status(reqs_.size());
    const auto start = std::chrono::steady_clock::now();
    int flag = 0;
    for (unsigned spins = 0;; ++spins) {
      const int rc = MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag, status.data());
      if (rc != MPI_SUCCESS) {
        done_ = true;  // failed requests are freed by MPI; do not touch them again
        reqs_.clear();
        fail(rc, status);
      }
      if (flag) break;
      // A short spin catches a peer that is about to deliver; then give the core away, which
      // matters when ranks outnumber cores (--oversubscribe).
      if (spins >= 256) sched_yield();
      if ((spins & 63) == 63 && std::chrono::steady_clock::now() - start > timeout_)
        TPB_THROW(TimeoutError, "mpi " << what() << " rank " << peer_ << " timed out after " << timeout_.count()
                                       << " ms (is rank " << peer_ << " alive and posting the matching "
                                       << (isRecv_ ? "send" : "receive") << "?)");
    }
    done_ = true;
    if (!isRecv_) return;
    for (std::size_t i = 0; i < status.size(); ++i) {
      int got = 0;
      MPI_Get_count(&status[i], MPI_BYTE, &got);
      if (got != sizes_[i])
        TPB_THROW(Error, "mpi recv from rank " << peer_ << ": size mismatch: " << got << " bytes arrived where "
                                               << sizes_[i] << " were posted");
    }
  }

 private:
  const char* what() const { return isRecv_ ? "recv from" : "send to"; }

  [[noreturn]] void fail(int rc, const std::vector<MPI_Status>& status) const {
    int cls = rc;
    if (rc == MPI_ERR_IN_STATUS) {
      for (const MPI_Status& s : status)
        if (s.MPI_ERROR != MPI_SUCCESS && s.MPI_ERROR != MPI_ERR_PENDING) cls = s.MPI_ERROR;
    }
    int errClass = cls;
    MPI_Error_class(cls, &errClass);
    if (errClass == MPI_ERR_TRUNCATE)
      TPB_THROW(Error, "mpi recv from rank " << peer_ << ": size mismatch: the message is longer than the "
                                             << "bytes posted (" << mpi::errorText(cls) << ")");
    TPB_THROW(Error, "mpi " << what() << " rank " << peer_ << " failed: " << mpi::errorText(cls));
  }

  bool isRecv_;
  int peer_;
  std::chrono::milliseconds timeout_;
  bool done_ = false;
  std::vector<MPI_Request> reqs_;
  std::vector<int> sizes_;
};

}  // namespace

MpiTransport::MpiTransport(int rank, int size, std::chrono::milliseconds timeout)
    : Transport(rank, size, Device::Cpu, timeout) {
  comm_ = mpi::makeComm(rank, size, "mpi transport");
}

MpiTransport::~MpiTransport() { mpi::freeComm(&comm_); }

std::unique_ptr<Request> MpiTransport::isend(int peer, const void* buf, std::size_t bytes) {
  checkPeer(peer, "isend");
  if (bytes == 0) return std::make_unique<DoneRequest>();
  mpi::checkThread("mpi transport isend");
  countSend(bytes);  // one message, however many MPI pieces carry it
  auto req = std::make_unique<MpiRequest>(false, peer, timeout());
  const char* p = static_cast<const char*>(buf);
  for (std::size_t off = 0; off < bytes; off += kMaxMessage) {
    req->add(std::min(kMaxMessage, bytes - off), [&](int n, MPI_Request* r) {
      return MPI_Isend(p + off, n, MPI_BYTE, peer, kTag, comm_, r);
    });
  }
  return req;
}

std::unique_ptr<Request> MpiTransport::irecv(int peer, void* buf, std::size_t bytes) {
  checkPeer(peer, "irecv");
  if (bytes == 0) return std::make_unique<DoneRequest>();
  mpi::checkThread("mpi transport irecv");
  countRecv(bytes);
  auto req = std::make_unique<MpiRequest>(true, peer, timeout());
  char* p = static_cast<char*>(buf);
  for (std::size_t off = 0; off < bytes; off += kMaxMessage) {
    req->add(std::min(kMaxMessage, bytes - off), [&](int n, MPI_Request* r) {
      return MPI_Irecv(p + off, n, MPI_BYTE, peer, kTag, comm_, r);
    });
  }
  return req;
}

// Compiled (so registered) only where MPI is; its ranks are started through mpirun.
TransportInfo mpiTransportInfo() {
  TransportInfo t;
  t.name = "mpi";
  t.order = 40;
  t.description =
      "MPI_Isend/MPI_Irecv between ranks started by mpirun (tpbench --launcher mpirun, or mpirun around tpbench)";
  t.unsupported = [](Device device, int, int) -> std::string {
    return device == Device::Cpu ? std::string() : std::string("mpi moves host memory only");
  };
  t.make = [](const TransportArgs& a) -> std::unique_ptr<Transport> {
    return std::make_unique<MpiTransport>(a.rank, a.size, a.timeout);
  };
  t.needsMpiLauncher = true;
  return t;
}
TPB_REGISTER_TRANSPORT(mpiTransportInfo);

}  // namespace tpb
