// tests/mpi_driver.cc — the rank program of the mpi tests (tests/mpi_test.cc runs it as
// `mpirun -np N tpb_mpi_driver CASE`): MPI ranks must be processes an MPI launcher started,
// so the thread-world tests cannot reach the mpi transport. Each case prints one line per
// failure ("FAIL rank r: ...") and "PASS rank r CASE" at the end; the exit code is 0 only when
// nothing failed on this rank. Cases:
//   exact     every allreduce algorithm that runs over a transport (ring, param_server) and the
//             mpi library allreduce: exact sums at counts {0, 1, 7, N-1, N+1, 100003}, twice per
//             instance; the ring also with 256-byte chunks (many chunks, odd tails, empty ones)
//   fifo      rank 0 -> 1 messages of growing sizes (0 bytes, around kMaxMessage's piece size
//             is out of reach here) arrive in order; sendRecv both ways at once; the
//             transport's traffic counts each non-empty message once, exactly
//   mismatch  a receive posted for fewer or more bytes than were sent is an error naming the
//             peer and the sizes, not corruption
//   timeout   a receive nobody sends to ends in TimeoutError naming the peer within the timeout
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "comm/mpi/mpi_transport.h"
#include "comm/store.h"
#include "comm/transports.h"
#include "common/error.h"
#include "core/registry.h"
#include "tests/exact_sums.h"

namespace tpb {
namespace {

int gFailures = 0;
int gRank = -1;

#define TPB_DRIVER_EXPECT(cond, msg)                                                             \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      ++gFailures;                                                                         \
      std::ostringstream tpb_o_;                                                           \
      tpb_o_ << msg;                                                                       \
      std::printf("FAIL rank %d: %s (%s:%d)\n", gRank, tpb_o_.str().c_str(), __FILE__, __LINE__); \
    }                                                                                      \
  } while (0)

void checkSums(CommContext& ctx, const std::string& what, const AllreduceFactory& make,
               const std::vector<std::size_t>& counts) {
  for (const auto& failure : test::exactSumFailures(ctx, make, counts)) TPB_DRIVER_EXPECT(false, what << " " << failure);
}

void exact(CommContext& ctx) {
  const std::size_t n = static_cast<std::size_t>(ctx.size());
  const std::vector<std::size_t> counts = {0, 1, 7, n - 1, n + 1, 100003};
  for (const std::string algo : {"ring", "param_server", "mpi"})
    checkSums(ctx, algo, findAllreduce("--algos", algo).make, counts);
  const auto& chunked = findAllreduce("--algos", "ring").makeChunked;
  checkSums(ctx, "ring (256-byte chunks)",
            [&](CommContext& c, float* b, std::size_t k) { return chunked(c, b, k, 256); }, {1, 7, 1000, 10007});
}

std::vector<unsigned char> pattern(std::size_t n, int seed) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 31 + seed * 7) & 0xff);
  return v;
}

void fifo(CommContext& ctx) {
  Transport& t = ctx.transport;
  if (t.size() != 2) return;
  const std::vector<std::size_t> sizes = {0, 1, 63, 4096, (1 << 20) + 3, 0, 5};
  const Traffic before = t.traffic();
  // Posted all at once, waited in reverse: order must come from MPI's matching, not our waits.
  std::vector<std::vector<unsigned char>> bufs;
  std::vector<std::unique_ptr<Request>> reqs;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    bufs.push_back(t.rank() == 0 ? pattern(sizes[i], static_cast<int>(i)) : std::vector<unsigned char>(sizes[i]));
    reqs.push_back(t.rank() == 0 ? t.isend(1, bufs[i].data(), sizes[i]) : t.irecv(0, bufs[i].data(), sizes[i]));
  }
  for (std::size_t i = reqs.size(); i-- > 0;) reqs[i]->wait();
  if (t.rank() == 1)
    for (std::size_t i = 0; i < sizes.size(); ++i)
      TPB_DRIVER_EXPECT(bufs[i] == pattern(sizes[i], static_cast<int>(i)), "message " << i << " of " << sizes[i] << " bytes");
  const std::size_t big = (9 << 20) + 5;
  const int peer = 1 - t.rank();
  auto out = pattern(big, t.rank());
  std::vector<unsigned char> in(big);
  t.sendRecv(peer, out.data(), big, peer, in.data(), big);
  TPB_DRIVER_EXPECT(in == pattern(big, peer), "sendRecv of " << big << " bytes");
  // Exact traffic: every non-empty message counts once, whatever pieces MPI carried it in.
  const Traffic after = t.traffic();
  std::size_t fifoBytes = 0, fifoMsgs = 0;
  for (std::size_t s : sizes) fifoBytes += s, fifoMsgs += s > 0;
  const bool sender = t.rank() == 0;
  const std::size_t sentBytes = big + (sender ? fifoBytes : 0), sentMsgs = 1 + (sender ? fifoMsgs : 0);
  const std::size_t recvBytes = big + (sender ? 0 : fifoBytes), recvMsgs = 1 + (sender ? 0 : fifoMsgs);
  TPB_DRIVER_EXPECT(after.bytesSent - before.bytesSent == sentBytes, "bytes sent " << after.bytesSent - before.bytesSent << " != " << sentBytes);
  TPB_DRIVER_EXPECT(after.msgsSent - before.msgsSent == sentMsgs, "messages sent " << after.msgsSent - before.msgsSent << " != " << sentMsgs);
  TPB_DRIVER_EXPECT(after.bytesRecv - before.bytesRecv == recvBytes, "bytes received " << after.bytesRecv - before.bytesRecv << " != " << recvBytes);
  TPB_DRIVER_EXPECT(after.msgsRecv - before.msgsRecv == recvMsgs, "messages received " << after.msgsRecv - before.msgsRecv << " != " << recvMsgs);
  t.barrier();
}

// Runs `f`, expecting a tpb error whose text holds every needle.
template <typename Fn>
void expectError(const std::string& what, Fn f, const std::vector<std::string>& needles, bool timeout = false) {
  try {
    f();
    TPB_DRIVER_EXPECT(false, what << ": no error");
  } catch (const TimeoutError& e) {
    TPB_DRIVER_EXPECT(timeout, what << ": unexpected timeout: " << e.what());
    for (const auto& n : needles) TPB_DRIVER_EXPECT(std::strstr(e.what(), n.c_str()), what << ": '" << e.what() << "' lacks " << n);
  } catch (const Error& e) {
    TPB_DRIVER_EXPECT(!timeout, what << ": expected a TimeoutError, got: " << e.what());
    for (const auto& n : needles) TPB_DRIVER_EXPECT(std::strstr(e.what(), n.c_str()), what << ": '" << e.what() << "' lacks " << n);
  }
}

void mismatch(CommContext& ctx) {
  Transport& t = ctx.transport;
  if (t.size() != 2) return;
  char buf[16] = {};
  if (t.rank() == 1) {
    t.send(0, buf, 8);
    t.send(0, buf, 8);
  } else {
    expectError("short message", [&] { t.recv(1, buf, 16); }, {"rank 1", "size mismatch", "8 bytes", "16"});
    expectError("long message", [&] { t.recv(1, buf, 4); }, {"rank 1", "size mismatch"});
  }
  t.barrier();
}

void timeout(CommContext& ctx) {
  Transport& t = ctx.transport;
  if (t.size() != 2) return;
  if (t.rank() == 0) {
    char b = 0;
    const auto t0 = std::chrono::steady_clock::now();
    expectError("recv nobody sends", [&] { t.recv(1, &b, 1); }, {"rank 1", "timed out"}, /*timeout=*/true);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    TPB_DRIVER_EXPECT(s >= 0.25 && s < 5, "timed out after " << s << " s, the timeout is 0.3 s");
  }
  MPI_Barrier(MPI_COMM_WORLD);  // not over the transport: its pending receive was cancelled
}

}  // namespace
}  // namespace tpb

int main(int argc, char** argv) {
  using namespace tpb;
  const std::string which = argc > 1 ? argv[1] : "";
  try {
    const int rank = std::atoi(std::getenv("OMPI_COMM_WORLD_RANK") ? std::getenv("OMPI_COMM_WORLD_RANK") : "0");
    const int size = std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE") ? std::getenv("OMPI_COMM_WORLD_SIZE") : "1");
    gRank = rank;
    auto store = Store::local();
    const auto limit = std::chrono::milliseconds(which == "timeout" ? 300 : 30000);
    {
      MpiTransport t(rank, size, limit);
      CommContext ctx{t, *store, "127.0.0.1", "mpi-driver", {}};
      if (which == "exact") exact(ctx);
      else if (which == "fifo") fifo(ctx);
      else if (which == "mismatch") mismatch(ctx);
      else if (which == "timeout") timeout(ctx);
      else {
        std::printf("FAIL rank %d: unknown case '%s'\n", rank, which.c_str());
        return 2;
      }
    }
    finishCommProcess();
  } catch (const std::exception& e) {
    std::printf("FAIL rank %d: %s\n", gRank, e.what());
    return 1;
  }
  if (gFailures == 0) std::printf("PASS rank %d %s\n", gRank, which.c_str());
  return gFailures == 0 ? 0 : 1;
}
