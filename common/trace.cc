#include "common/trace.h"

#include <thread>

namespace tpb::trace {

namespace detail {
bool gEnabled = false;
}

namespace {
std::vector<Event>& buffer() {
  static std::vector<Event> events;
  return events;
}
// The thread that turned recording on: the only one that records (data_parallel's replica
// threads run the same forward/backward code, and their spans are left out, not raced on).
std::thread::id& owner() {
  static std::thread::id id;
  return id;
}
std::uint64_t gGeneration = 0;
}  // namespace

const char* categoryName(Category c) {
  switch (c) {
    case Category::Step: return "step";
    case Category::Compute: return "compute";
    case Category::Comm: return "comm";
    case Category::Wait: return "wait";
    case Category::Optimizer: return "optimizer";
    case Category::Eval: return "eval";
  }
  return "other";
}

const char* trackName(Track t) {
  switch (t) {
    case Track::Host: return "host";
    case Track::Comm: return "comm";
    case Track::Gpu: return "gpu";
    case Track::GpuComm: return "gpu_comm";
  }
  return "host";
}

std::uint64_t generation() { return gGeneration; }

bool recording() { return detail::gEnabled && std::this_thread::get_id() == owner(); }

void enable(bool on) {
  ++gGeneration;
  buffer().clear();
  if (on) buffer().reserve(1 << 14);
  owner() = std::this_thread::get_id();
  detail::gEnabled = on;
}

void record(const char* name, Category cat, std::int64_t beginNs, std::int64_t endNs, const char* argKey,
            std::int64_t arg, Track track) {
  if (!recording()) return;
  buffer().push_back(Event{name, argKey, beginNs, endNs, arg, cat, track});
}

double close(const char* name, Category cat, clock_type::time_point begin, const char* argKey, std::int64_t arg) {
  const clock_type::time_point end = clock_type::now();
  if (detail::gEnabled) record(name, cat, toNs(begin), toNs(end), argKey, arg);
  return std::chrono::duration<double>(end - begin).count();
}

std::vector<Event> take() {
  std::vector<Event> out;
  out.swap(buffer());
  return out;
}

std::size_t size() { return buffer().size(); }

}  // namespace tpb::trace
