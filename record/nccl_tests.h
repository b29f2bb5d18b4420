// record/nccl_tests.h — nccl-tests' results read into tpbench's records, so that report, compare
// and model use the logs users already have beside tpbench's own points (`tpbench import`).
//
// Two formats, both as nccl-tests writes them: the text table on stdout (any version: the header
// lines "# Collective test starting: all_reduce_perf", "# nThread ... iters: 20 ...", one
// "#  Rank ..." line per rank, the column header, then one row per size), and the JSON file of
// -J/--output_file (nccl-tests 2.17 and later: "config", "devices", "results"). Columns are found
// by the header's names, so older tables without redop or root read too. A log may hold
// several tests one after another. Each row becomes one record per placement it measured
// (out of place, in place), of algo and origin "nccl-tests", transport "nccl", device "cuda".
//
// What tpbench cannot hold the same way is left out and counted, never guessed: element types
// other than float (records count float32 elements), reductions other than sum, size 0, and the
// tests whose time means something else here (sendrecv_perf times one shift, tpbench's sendrecv a
// round trip; gather, scatter, alltoallv and hypercube have no op here). Every figure is checked
// against the others (algbw = size / time, busbw = algbw x the op's factor at the row's rank count),
// so a log of another test read as this one, or a damaged row, is refused by line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/records.h"

namespace tpb {

inline constexpr const char* kNcclTestsOrigin = "nccl-tests";
// What `import` reads of one file: far more than any nccl-tests log (a full sweep of every
// test with NCCL_DEBUG=INFO is a few MB).
inline constexpr std::size_t kMaxNcclTestsBytes = std::size_t{64} << 20;

struct NcclTestsImport {
  Meta meta;                             // hosts, GPU names, NCCL version, ranks, the command (JSON)
  std::vector<CollectiveRecord> points;  // in file order
  std::vector<std::string> leftOut;      // one line per kind of row left out, with its count
};

// The ops whose nccl-tests results tpbench reads, in the order --op lists them.
const std::vector<std::string>& ncclTestsOps();

// The op of an nccl-tests program ("all_reduce_perf", "./build/all_gather_perf", "broadcast"):
// allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall; "" for any other.
std::string opOfNcclTestsProgram(const std::string& program);

// `file` names the input in errors ("x.log:42: ..."); `op` (one of the ops above, or "") names the
// test where the file does not (older nccl-tests print no "Collective test starting" line) and
// must agree with it where it does. Throws tpb::UsageError, one line.
NcclTestsImport parseNcclTestsText(const std::string& text, const std::string& file, const std::string& op);
NcclTestsImport parseNcclTestsJson(const nlohmann::json& doc, const std::string& file, const std::string& op);

// Reads `path` (a regular file of at most kMaxNcclTestsBytes; JSON when it starts with '{').
NcclTestsImport importNcclTests(const std::string& path, const std::string& op);

}  // namespace tpb
