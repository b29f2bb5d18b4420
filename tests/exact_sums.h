// tests/exact_sums.h — the exact-sum check the allreduce tests share (thread worlds and the mpi
// driver alike): inputs are small integers, distinct per rank and element, so every sum is exact
// in float32 and any difference is an error, not rounding.
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <sstream>
#include <string>
#include <vector>

#include "core/allreduce.h"
#include "core/comm_context.h"

namespace tpb::test {

// Rank `rank`'s input at element `i`.
inline float exactInput(int rank, std::size_t i) {
  return static_cast<float>((i * 7919u + static_cast<std::size_t>(rank) * 131u) % 1000u);
}

// `count` floats for an algorithm on this rank: in the transport's symmetric memory when
// `symmetric` (every rank must then allocate the same sizes in the same order), else on the heap.
class AlgoBuffer {
 public:
  AlgoBuffer(Transport& t, std::size_t count, bool symmetric) : t_(t) {
    if (!symmetric) {
      heap_.resize(count);
      return;
    }
    sym_ = static_cast<float*>(t.allocateSymmetric(std::max<std::size_t>(1, count) * sizeof(float)));
    if (!sym_) throw std::runtime_error("transport " + t.name() + " has no symmetric memory");
  }
  ~AlgoBuffer() {
    if (sym_) t_.freeSymmetric(sym_);
  }
  AlgoBuffer(const AlgoBuffer&) = delete;
  AlgoBuffer& operator=(const AlgoBuffer&) = delete;
  float* data() { return sym_ ? sym_ : heap_.data(); }
  float& operator[](std::size_t i) { return data()[i]; }

 private:
  Transport& t_;
  std::vector<float> heap_;
  float* sym_ = nullptr;
};

// Runs one allreduce made by `make` per count on this rank, twice on the same instance (state
// left by one run must not corrupt the next), with a sentinel one past the end. Returns one line
// per failed run ("count 7 rep 1: 3 wrong (first at 2), wrote past the end"); empty: all exact.
// With `symmetric`, the buffers lie in the transport's symmetric memory (AlgoBuffer).
inline std::vector<std::string> exactSumFailures(CommContext& ctx, const AllreduceFactory& make,
                                                 const std::vector<std::size_t>& counts, bool symmetric = false) {
  std::vector<std::string> failures;
  for (std::size_t count : counts) {
    AlgoBuffer buf(ctx.transport, count + 1, symmetric);
    const float sentinel = -12345.0f;
    buf[count] = sentinel;
    auto fill = [&] {
      for (std::size_t i = 0; i < count; ++i) buf[i] = exactInput(ctx.rank(), i);
    };
    fill();
    auto ar = make(ctx, buf.data(), count);
    for (int rep = 0; rep < 2; ++rep) {
      if (rep == 1) fill();
      ar->run();
      std::size_t wrong = 0, first = count;
      for (std::size_t i = 0; i < count; ++i) {
        float expect = 0;
        for (int r = 0; r < ctx.size(); ++r) expect += exactInput(r, i);
        if (buf[i] != expect && wrong++ == 0) first = i;
      }
      if (wrong == 0 && buf[count] == sentinel) continue;
      std::ostringstream os;
      os << "count " << count << " rep " << rep << ": " << wrong << " wrong";
      if (wrong) os << " (first at " << first << ")";
      if (buf[count] != sentinel) os << ", wrote past the end";
      failures.push_back(os.str());
    }
  }
  return failures;
}

}  // namespace tpb::test
