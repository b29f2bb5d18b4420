#include "comm/gloo/gloo_transport.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "comm/gloo/gloo_process_group.h"
#include "comm/store_c10d.h"
#include "comm/transports.h"
#include "common/error.h"

namespace tpb {

struct GlooTransport::Impl {
  GlooGroup pg;
};

namespace {

at::Tensor byteView(const void* buf, std::size_t bytes) {
  return at::from_blob(const_cast<void*>(buf), {static_cast<int64_t>(bytes)},
                       at::TensorOptions().dtype(at::kByte));
}

class GlooRequest final : public Request {
 public:
  GlooRequest(c10::intrusive_ptr<compat::Work> work, at::Tensor keep, const char* what, int peer,
              std::chrono::milliseconds timeout)
      : work_(std::move(work)), keep_(std::move(keep)), what_(what), peer_(peer), timeout_(timeout) {}
  void wait() override {
    if (!work_) return;
    bool ok = false;
    try {
      ok = work_->wait(timeout_);
    } catch (const std::exception& e) {
      TPB_THROW(Error, "gloo " << what_ << " rank " << peer_ << " failed: " << e.what());
    }
    if (!ok)
      TPB_THROW(TimeoutError, "gloo " << what_ << " rank " << peer_ << " timed out after "
                                      << timeout_.count() << " ms");
    work_.reset();
  }

 private:
  c10::intrusive_ptr<compat::Work> work_;
  at::Tensor keep_;
  const char* what_;
  int peer_;
  std::chrono::milliseconds timeout_;
};

// Posts a send or receive. Gloo throws at once, not at the wait, when the pair to that peer has
// already failed (e.g. "Read error [host]:port: Connection reset by peer"): the error names the
// peer's rank as a failed wait does, since ranks on one host share its address.
template <class Post>
c10::intrusive_ptr<compat::Work> post(Post&& postIt, const char* what, int peer) {
  try {
    return postIt();
  } catch (const std::exception& e) {
    TPB_THROW(Error, "gloo " << what << " rank " << peer << " failed: " << e.what());
  }
}

}  // namespace

GlooTransport::GlooTransport(Store& store, const std::string& prefix, const std::string& host,
                             int rank, int size, std::chrono::milliseconds timeout)
    : Transport(rank, size, Device::Cpu, timeout), impl_(std::make_unique<Impl>()) {
  if (size == 1) return;
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, nativeStore(store));
  impl_->pg = makeGlooGroup(prefixed, host, rank, size, timeout, "gloo transport setup");
}

GlooTransport::~GlooTransport() = default;

std::unique_ptr<Request> GlooTransport::isend(int peer, const void* buf, std::size_t bytes) {
  checkPeer(peer, "isend");
  if (bytes == 0) return std::make_unique<DoneRequest>();
  countSend(bytes);
  std::vector<at::Tensor> t{byteView(buf, bytes)};
  auto work = post([&] { return impl_->pg->send(t, peer, /*tag=*/0); }, "send to", peer);
  return std::make_unique<GlooRequest>(std::move(work), t[0], "send to", peer, timeout());
}

std::unique_ptr<Request> GlooTransport::irecv(int peer, void* buf, std::size_t bytes) {
  checkPeer(peer, "irecv");
  if (bytes == 0) return std::make_unique<DoneRequest>();
  countRecv(bytes);
  std::vector<at::Tensor> t{byteView(buf, bytes)};
  auto work = post([&] { return impl_->pg->recv(t, peer, /*tag=*/0); }, "recv from", peer);
  return std::make_unique<GlooRequest>(std::move(work), t[0], "recv from", peer, timeout());
}

TransportInfo glooTransportInfo() {
  TransportInfo t;
  t.name = "gloo";
  t.order = 30;
  t.description = "Gloo TCP pairs through c10d ProcessGroupGloo send/recv (any number of nodes)";
  t.unsupported = [](Device device, int, int) -> std::string {
    return device == Device::Cpu ? std::string() : std::string("gloo moves host memory only");
  };
  t.make = [](const TransportArgs& a) -> std::unique_ptr<Transport> {
    return std::make_unique<GlooTransport>(a.store, "gloo/" + a.runId + "/", a.host, a.rank, a.size,
                                           a.timeout);
  };
  return t;
}
TPB_REGISTER_TRANSPORT(glooTransportInfo);

}  // namespace tpb
