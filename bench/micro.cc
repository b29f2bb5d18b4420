// tpbench_micro — micro-benchmarks of the building blocks, with Google Benchmark.
//
//   build/bench/tpbench_micro --benchmark_out=micro.json --benchmark_out_format=json
//
// * BM_ReduceSum: the host float32 sum kernel (dst += src). bytes_per_second counts the bytes
//   it moves: two streams read and one written (12 bytes per element).
// * BM_Memcpy: plain memcpy of the same sizes (bytes read + written), the roofline reference.
// * BM_ShmPingPong: two threads, each with its own ShmTransport, bounce a message back and
//   forth. one_way_s is half a round trip (latency at 8 B); bytes_per_second counts the bytes
//   carried in both directions (bandwidth at 1..64 MiB).
// * BM_TraceSpan/0 and /1: one scoped span of common/trace.h with recording off and on (the
//   buffer is drained every 64 Ki spans, as a long run's would grow): what --trace adds per span.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "comm/reduce.h"
#include "common/trace.h"
#include "comm/shm/shm_transport.h"
#include "comm/store.h"

namespace {

void BM_ReduceSum(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0)) / sizeof(float);
  std::vector<float> dst(n, 1.0f), src(n, 0.0f);  // adding zeros keeps values finite
  for (auto _ : state) {
    tpb::reduceSum(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n) * 12);
}
BENCHMARK(BM_ReduceSum)->RangeMultiplier(4)->Range(4 << 10, 64 << 20);

void BM_Memcpy(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  std::vector<char> a(n, 1), b(n, 0);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n) * 2);
}
BENCHMARK(BM_Memcpy)->RangeMultiplier(4)->Range(4 << 10, 64 << 20);

void BM_ShmPingPong(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  static int instance = 0;
  const std::string runId = "micro-" + std::to_string(getpid()) + "-" + std::to_string(instance++);
  auto store = tpb::Store::local();
  const auto timeout = std::chrono::seconds(30);
  // The echo side: receives a message and returns it, until it sees the stop byte.
  std::thread echo([&] {
    tpb::ShmTransport t(*store, runId, 1, 2, timeout);
    std::vector<char> buf(n);
    for (;;) {
      t.recv(0, buf.data(), n);
      if (buf[0] == 1) break;
      t.send(0, buf.data(), n);
    }
  });
  tpb::ShmTransport t(*store, runId, 0, 2, timeout);
  std::vector<char> buf(n, 0);
  for (int i = 0; i < 10; ++i) {  // warm-up: pages faulted, rings primed
    t.send(1, buf.data(), n);
    t.recv(1, buf.data(), n);
  }
  for (auto _ : state) {
    t.send(1, buf.data(), n);
    t.recv(1, buf.data(), n);
  }
  buf[0] = 1;
  t.send(1, buf.data(), n);
  echo.join();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n) * 2);
  // Seconds per one-way message (printed with an SI prefix: 1.2u = 1.2 us).
  state.counters["one_way_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 2, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ShmPingPong)->Arg(8)->Arg(4 << 10)->RangeMultiplier(4)->Range(1 << 20, 64 << 20)->UseRealTime();

}  // namespace

void BM_TraceSpan(benchmark::State& state) {
  tpb::trace::enable(state.range(0) != 0);
  std::size_t n = 0;
  for (auto _ : state) {
    tpb::trace::Span span("forward", tpb::trace::Category::Compute, "micro", 1);
    if (++n % (64 << 10) == 0) benchmark::DoNotOptimize(tpb::trace::take());
  }
  tpb::trace::enable(false);
}
BENCHMARK(BM_TraceSpan)->Arg(0)->Arg(1);

BENCHMARK_MAIN();
