// worker/trace_gather.h — after a traced run, every rank's timeline (common/trace.h) on rank 0,
// on rank 0's clock.
//
// Clocks. Ranks on one host share CLOCK_MONOTONIC (the steady clock): ranks whose kernel boot
// id equals rank 0's need no correction, network namespaces and containers included. A rank on
// another host estimates its offset to rank 0 through the rendezvous store, as NTP does over a
// network: it posts a request, rank 0 answers with its clock, and the request's round trip
// bounds the error; of `rounds` exchanges the one with the shortest round trip wins
// (offset = server time - midpoint of the round trip, error <= half that round trip, which the
// trace records per rank).
//
// Events then travel to rank 0 over the run's transport (sendHost/recvHost), which rebases them
// and returns the point's trace fragment (record/trace_file.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace tpb {

class Store;
class Transport;

struct ClockOffset {
  std::int64_t offsetNs = 0;  // add to this rank's clock to get rank 0's
  std::int64_t rttNs = 0;     // the round trip of the exchange used: |error| <= rttNs / 2
  bool sameHost = true;       // same kernel as rank 0: no exchange, offset exactly 0
};

// Rank `rank`'s offset to rank 0, through `store` under `prefix` (keys unique to the run). Every
// rank of `size` calls it at the same point; rank 0 answers the others. `clock` reads this
// process's steady clock in ns (replaceable in tests); `bootId` names this rank's kernel
// (a test makes two "hosts" in one process by giving different ids).
ClockOffset estimateClockOffset(Store& store, const std::string& prefix, int rank, int size,
                                const std::string& bootId, const std::function<std::int64_t()>& clock,
                                int rounds = 8);

// This host's kernel boot id (/proc/sys/kernel/random/boot_id), or its host name where that
// file is missing.
std::string kernelBootId();

// Takes this rank's recorded events (clearing the recorder), aligns the clocks and gathers the
// events on rank 0. Rank 0 returns the fragment
//   {"ranks": [{"rank", "host", "clock_offset_ns", "clock_error_ns", "events":
//                [[name, arg_key|null, category, track, begin_ns, end_ns, arg], ...]}]}
// with every time on rank 0's steady clock; the other ranks return null.
nlohmann::json gatherTrace(Transport& t, Store& store, const std::string& prefix, const std::string& host);

}  // namespace tpb
