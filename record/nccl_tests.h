// record/nccl_tests.h — nccl-tests' and rccl-tests' results read into tpbench's records, so that
// report, compare and model use the logs users already have beside tpbench's own points
// (`tpbench import`). docs/reports.md ("Importing nccl-tests logs") lists what is read, with the
// corpus of real logs under tests/fixtures/nccl_tests/real as the evidence.
//
// Two formats. The text table on stdout, of any version from 2.0 on: each line is first freed of
// what a launcher or a paste put around it (Open MPI's --tag-output "[1,0]<stdout>:", "[0]"
// prefixes, srun's "0: " labels, indentation, markdown quotes), then read by what it says: the
// version line, "# Collective test starting", "# nThread ...", one "Rank" line per rank (with or
// without the Group column), the column header (any generation: "#wrong" or "error", with or
// without redop and root, per-iteration and timestamp columns), the rows. NCCL's INFO and WARN
// lines and prose are skipped. A log may hold several tests one after another, may start
// mid-header (the columns are then told from the rows), and may end in a cut row, which is counted
// and left out. The JSON file of -J/--output_file, as nccl-tests' own writer lays it out.
//
// Which test a table is comes from, in this order: its "Collective test starting" line, the
// command line pasted with it (all_gather_perf -b 8 ...), --op, or the one op whose bus factor
// (and redop and root columns) fit every row; the import says which it used. Where the rank lines
// are missing, the rank count comes from busbw / algbw where the op's factor tells it.
//
// Each row becomes one record per placement it measured (out of place, in place), of algo and
// origin "nccl-tests" (or "rccl-tests": transport rccl, device rocm). Element types other than
// float and reductions other than sum are kept, recorded in the record's dtype and redop, so that
// a bf16 log is a bf16 measurement. nccl-tests' sendrecv (every rank sends to the next and
// receives from the previous at once; time is one such shift) is recorded as op "sendrecv_shift",
// not as tpbench's sendrecv, a ping-pong timed as a round trip. What tpbench has no op for
// (gather, scatter, alltoallv, hypercube) is counted and left out. Every figure is checked against
// the others at the precision it was printed (algbw = size / time, busbw = algbw x the op's factor
// at the row's rank count): a damaged row, or a log of another test, is refused by its line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/records.h"

namespace tpb {

inline constexpr const char* kNcclTestsOrigin = "nccl-tests";
inline constexpr const char* kRcclTestsOrigin = "rccl-tests";
// nccl-tests' sendrecv_perf as tpbench records it (see above).
inline constexpr const char* kShiftOp = "sendrecv_shift";
// What `import` reads of one file: far more than any nccl-tests log (a full sweep of every
// test with NCCL_DEBUG=INFO is a few MB).
inline constexpr std::size_t kMaxNcclTestsBytes = std::size_t{64} << 20;
// A line longer than this is not nccl-tests output (its longest, an INFO line, is a few KB).
inline constexpr std::size_t kMaxNcclTestsLine = std::size_t{64} << 10;
// A host or GPU name longer than this is refused: each point carries its GPU's name.
inline constexpr std::size_t kMaxNcclTestsName = 256;

// One test of a file, as the import reports it.
struct NcclTestsTest {
  std::string op;       // tpbench's op ("allreduce", kShiftOp)
  std::string opFrom;   // "the '# Collective test starting' line", "the command line", "--op", "busbw / algbw"
  std::string ranksFrom;  // "the Rank lines", "busbw / algbw"
  int ranks = 0;
  std::size_t points = 0;
};

struct NcclTestsImport {
  Meta meta;                             // hosts, GPU names, NCCL version, ranks, the command (JSON)
  std::vector<CollectiveRecord> points;  // in file order
  std::vector<NcclTestsTest> tests;      // the tests that gave points, in file order
  std::vector<std::string> leftOut;      // one line per kind of row left out, with its count
  std::string library = "nccl";          // "rccl" for rccl-tests
};

// The tests --op may name, nccl-tests' names without "_perf": allreduce, allgather,
// reduce_scatter, broadcast, reduce, alltoall, sendrecv.
const std::vector<std::string>& ncclTestsOps();

// rccl-tests' early JSON lines (`-x FILE -Z json`, ROCm/rccl-tests#93): one object per placement
// of a size ({"name":"AllReduce","size":1024,"type":"float","redop":"sum","inPlace":0,"time":..,
// "algBw":..,"busBw":..,"#wrong":"0"} and "ranks"/"nodes" from an MPI build, "gpus" from a
// single-process one), recorded as rccl-tests on ROCm with each row's figures checked as a text
// row's are; a last line cut short is counted. Whether `text` is such a file: its first line an
// object with algBw and busBw.
bool looksLikeRcclTestsJsonLines(const std::string& text);
NcclTestsImport parseRcclTestsJsonLines(const std::string& text, const std::string& file, const std::string& op);

// tpbench's op for an nccl-tests program ("all_reduce_perf", "./build/all_gather_perf",
// "reduce_scatter_perf_mpi", "broadcast"): one of ncclTestsOps(), sendrecv as kShiftOp; "" for any
// other.
std::string opOfNcclTestsProgram(const std::string& program);

// `file` names the input in errors ("x.log:42: ..."); `op` (one of ncclTestsOps(), or "") names
// the test where the file does not and must agree with it where it does; `ranks` (0: none given)
// the rank count of a text log that prints no Rank lines; `library` ("nccl", "rccl"; "": what the
// log says) the library of a log that does not say it. Throws tpb::UsageError, one line.
NcclTestsImport parseNcclTestsText(const std::string& text, const std::string& file, const std::string& op,
                                   int ranks = 0, const std::string& library = "");
NcclTestsImport parseNcclTestsJson(const nlohmann::json& doc, const std::string& file, const std::string& op);

// Reads `path` (a regular file of at most kMaxNcclTestsBytes; JSON when it starts with '{').
NcclTestsImport importNcclTests(const std::string& path, const std::string& op, int ranks = 0,
                                const std::string& library = "");

}  // namespace tpb
