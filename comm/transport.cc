#include "comm/transport.h"

#include <cstdint>
#include <functional>

#include "comm/reduce.h"
#include "common/error.h"

namespace tpb {

const char* deviceName(Device d) { return d == Device::Cuda ? "cuda" : "cpu"; }

namespace {

class SteadyClockTimer final : public IntervalTimer {
 public:
  const char* method() const override { return "steady_clock"; }
  void start() override { t0_ = std::chrono::steady_clock::now(); }
  double stopUs() override {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace

std::unique_ptr<IntervalTimer> Transport::makeTimer() { return std::make_unique<SteadyClockTimer>(); }

Transport::Transport(int rank, int size, Device device, std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), device_(device), timeout_(timeout) {
  TPB_CHECK(size >= 1 && rank >= 0 && rank < size, "rank " << rank << " of " << size);
}

void Transport::checkPeer(int peer, const char* op) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    TPB_THROW(Error, name() << " " << op << ": invalid peer " << peer << " (rank " << rank_
                            << " of " << size_ << ")");
  }
}

std::vector<float> Transport::takeScratch(std::size_t count) {
  for (auto it = scratch_.begin(); it != scratch_.end(); ++it) {
    if (it->capacity() >= count) {
      std::vector<float> v = std::move(*it);
      scratch_.erase(it);
      v.resize(count);
      return v;
    }
  }
  return std::vector<float>(count);
}

void Transport::giveScratch(std::vector<float> v) {
  if (scratch_.size() < 16) scratch_.push_back(std::move(v));
}

namespace {
// Receives into scratch, then adds the scratch into dst when waited.
class ScratchReduceRequest final : public Request {
 public:
  ScratchReduceRequest(Transport& t, float* dst, std::vector<float> scratch,
                       std::unique_ptr<Request> inner,
                       std::function<void(std::vector<float>)> giveBack)
      : dst_(dst), scratch_(std::move(scratch)), inner_(std::move(inner)),
        giveBack_(std::move(giveBack)) {
    (void)t;
  }
  void wait() override {
    if (!inner_) return;
    inner_->wait();
    inner_.reset();
    reduceSum(dst_, scratch_.data(), scratch_.size());
    giveBack_(std::move(scratch_));
  }

 private:
  float* dst_;
  std::vector<float> scratch_;
  std::unique_ptr<Request> inner_;
  std::function<void(std::vector<float>)> giveBack_;
};
}  // namespace

std::unique_ptr<Request> Transport::irecvReduce(int peer, float* dst, std::size_t count) {
  if (count == 0) return std::make_unique<DoneRequest>();
  TPB_CHECK(device_ == Device::Cpu,
            name() << " has no device-side irecvReduce; it must override irecvReduce");
  std::vector<float> scratch = takeScratch(count);
  auto inner = irecv(peer, scratch.data(), count * sizeof(float));
  return std::make_unique<ScratchReduceRequest>(
      *this, dst, std::move(scratch), std::move(inner),
      [this](std::vector<float> v) { giveScratch(std::move(v)); });
}

std::unique_ptr<Request> Transport::irecvReduceSend(int, const float*, float*, std::size_t, int) {
  TPB_THROW(Error, name() << " transport does not forward (fusedForwardLimit() is 0)");
}

std::unique_ptr<Request> Transport::irecvCopySend(int, float*, std::size_t, int) {
  TPB_THROW(Error, name() << " transport does not forward (fusedForwardLimit() is 0)");
}

void Transport::send(int peer, const void* buf, std::size_t bytes) { isend(peer, buf, bytes)->wait(); }

void Transport::recv(int peer, void* buf, std::size_t bytes) { irecv(peer, buf, bytes)->wait(); }

void Transport::sendRecv(int sendPeer, const void* sendBuf, std::size_t sendBytes, int recvPeer,
                         void* recvBuf, std::size_t recvBytes) {
  // Post the receive first so a transport with bounded buffers can always drain its peer.
  auto r = irecv(recvPeer, recvBuf, recvBytes);
  auto s = isend(sendPeer, sendBuf, sendBytes);
  s->wait();
  r->wait();
}

void Transport::barrier() {
  if (size_ == 1) return;
  // Dissemination barrier: in round k, signal rank+2^k and wait for rank-2^k. After
  // ceil(log2 N) rounds every rank has transitively heard from every other. The byte carries
  // the round counter so a mismatched barrier shows up as a wrong value, not a silent pass.
  const std::uint8_t tag = static_cast<std::uint8_t>(barrierRound_++);
  for (int dist = 1; dist < size_; dist *= 2) {
    const int to = (rank_ + dist) % size_;
    const int from = (rank_ - dist % size_ + size_) % size_;
    std::uint8_t out = tag, in = 0;
    sendRecv(to, &out, 1, from, &in, 1);
    TPB_CHECK(in == tag, "barrier out of step: got round " << int(in) << ", expected " << int(tag));
  }
}

}  // namespace tpb
