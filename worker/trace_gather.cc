#include "worker/trace_gather.h"

#include <unistd.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "comm/cuda/gpu_trace.h"
#include "comm/store.h"
#include "comm/transport.h"
#include "common/error.h"
#include "common/trace.h"

namespace tpb {

using nlohmann::json;

std::string kernelBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (in && std::getline(in, id) && !id.empty()) return id;
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return std::string("host:") + name;
}

ClockOffset estimateClockOffset(Store& store, const std::string& prefix, int rank, int size,
                                const std::string& bootId, const std::function<std::int64_t()>& clock,
                                int rounds) {
  TPB_CHECK(rounds > 0, "clock alignment needs at least one exchange");
  const std::string key = prefix + "clock/";
  store.set(key + "boot/" + std::to_string(rank), bootId);
  if (rank == 0) {
    // Answer, one rank at a time, every rank that runs on another kernel.
    for (int r = 1; r < size; ++r) {
      if (store.get(key + "boot/" + std::to_string(r)) == bootId) continue;
      for (int k = 0; k < rounds; ++k) {
        const std::string round = key + std::to_string(r) + "/" + std::to_string(k);
        store.get(round + "/ask");
        store.set(round + "/answer", std::to_string(clock()));
      }
    }
    return {};
  }
  ClockOffset best;
  if (store.get(key + "boot/0") == bootId) return best;
  best.sameHost = false;
  best.rttNs = std::numeric_limits<std::int64_t>::max();
  for (int k = 0; k < rounds; ++k) {
    const std::string round = key + std::to_string(rank) + "/" + std::to_string(k);
    const std::int64_t t1 = clock();
    store.set(round + "/ask", "1");
    const std::int64_t server = std::stoll(store.get(round + "/answer"));
    const std::int64_t t2 = clock();
    if (t2 - t1 < best.rttNs) {
      best.rttNs = t2 - t1;
      best.offsetNs = server - (t1 + (t2 - t1) / 2);
    }
  }
  return best;
}

namespace {

// One event per line, tab-separated: name, arg key ("-": none), category, track, begin, end, arg.
std::string serialize(const std::vector<trace::Event>& events, std::int64_t offsetNs) {
  std::ostringstream o;
  for (const trace::Event& e : events)
    o << e.name << '\t' << (e.argKey ? e.argKey : "-") << '\t' << static_cast<int>(e.cat) << '\t'
      << static_cast<int>(e.track) << '\t' << e.beginNs + offsetNs << '\t' << e.endNs + offsetNs << '\t' << e.arg
      << '\n';
  return o.str();
}

json parse(const std::string& text, int rank) {
  json events = json::array();
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::size_t from = 0;
    for (std::size_t tab; (tab = line.find('\t', from)) != std::string::npos; from = tab + 1)
      f.push_back(line.substr(from, tab - from));
    f.push_back(line.substr(from));
    TPB_CHECK(f.size() == 7, "trace of rank " << rank << ": malformed event '" << line << "'");
    const auto cat = static_cast<trace::Category>(std::stoi(f[2]));
    const int trackIndex = std::stoi(f[3]);
    TPB_CHECK(trackIndex >= 0 && trackIndex < trace::kTracks, "trace of rank " << rank << ": no track " << trackIndex);
    const auto track = static_cast<trace::Track>(trackIndex);
    events.push_back(json::array({f[0], f[1] == "-" ? json(nullptr) : json(f[1]), trace::categoryName(cat),
                                  trace::trackName(track), std::stoll(f[4]), std::stoll(f[5]), std::stoll(f[6])}));
  }
  return events;
}

}  // namespace

json gatherTrace(Transport& t, Store& store, const std::string& prefix, const std::string& host) {
  trace::flushGpu();  // GPU spans still waiting for their events become host-clock spans
  const std::vector<trace::Event> events = trace::take();
  const ClockOffset clock = estimateClockOffset(store, prefix, t.rank(), t.size(), kernelBootId(), trace::nowNs);
  const std::string text = serialize(events, clock.offsetNs);
  if (t.rank() != 0) {
    // Header: the text's length, the offset and its error, then the host name and the text.
    const std::int64_t head[4] = {static_cast<std::int64_t>(text.size()), clock.offsetNs,
                                  clock.sameHost ? 0 : clock.rttNs / 2, static_cast<std::int64_t>(host.size())};
    t.sendHost(0, head, sizeof head);
    const std::string body = host + text;
    if (!body.empty()) t.sendHost(0, body.data(), body.size());
    return nullptr;
  }
  json ranks = json::array();
  ranks.push_back({{"rank", 0}, {"host", host}, {"clock_offset_ns", 0}, {"clock_error_ns", 0},
                   {"events", parse(text, 0)}});
  for (int r = 1; r < t.size(); ++r) {
    std::int64_t head[4];
    t.recvHost(r, head, sizeof head);
    TPB_CHECK(head[0] >= 0 && head[3] >= 0 && head[0] < (std::int64_t{1} << 34) && head[3] < 4096,
              "trace of rank " << r << ": implausible sizes " << head[0] << ", " << head[3]);
    std::string body(static_cast<std::size_t>(head[0] + head[3]), '\0');
    if (!body.empty()) t.recvHost(r, body.data(), body.size());
    ranks.push_back({{"rank", r},
                     {"host", body.substr(0, static_cast<std::size_t>(head[3]))},
                     {"clock_offset_ns", head[1]},
                     {"clock_error_ns", head[2]},
                     {"events", parse(body.substr(static_cast<std::size_t>(head[3])), r)}});
  }
  return {{"ranks", ranks}};
}

}  // namespace tpb
