// tests/nccl_tests_test.cc — nccl-tests' output read into records (record/nccl_tests.h) and the
// `import` command around it. The inputs are tests/fixtures/nccl_tests/*, written by
// make_fixtures.py in nccl-tests' layout (text table, -J JSON); each test reads what the file
// says and checks the record against the file's own figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>

#include "record/nccl_tests.h"
#include "record/reference_busbw.h"
#include "record/results.h"
#include "tests/cli_util.h"
#include "tests/file_util.h"

namespace tpb {
namespace {

using test::expectUsageError;
using test::readText;
using test::writeText;

std::string fixture(const std::string& name) { return std::string(TPB_SOURCE_DIR) + "/tests/fixtures/nccl_tests/" + name; }

// The rows of a text table, as nccl-tests printed them: {size, out-of-place time, algbw, busbw,
// in-place time, algbw, busbw} read back with a regex independent of the importer.
struct Row {
  std::uint64_t size;
  double t[2], alg[2], bus[2];
};
std::vector<Row> rowsOf(const std::string& text) {
  std::vector<Row> rows;
  const std::regex row(R"(^\s+(\d+)\s+\d+\s+float\s+sum\s+-1\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\S+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\S+\s*$)");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    rows.push_back({std::stoull(m[1]), {std::stod(m[2]), std::stod(m[5])}, {std::stod(m[3]), std::stod(m[6])},
                    {std::stod(m[4]), std::stod(m[7])}});
  }
  return rows;
}

TEST(NcclTestsImport, EveryRowOfTheTextTableBecomesOneRecordPerPlacementWithTheFilesFigures) {
  const std::string text = readText(fixture("all_reduce_8gpu.txt"));
  const auto rows = rowsOf(text);
  ASSERT_EQ(rows.size(), 14u);
  const NcclTestsImport got = parseNcclTestsText(text, "ar.txt", "");
  ASSERT_EQ(got.points.size(), 2 * rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (int placement = 0; placement < 2; ++placement) {
      const CollectiveRecord& p = got.points[2 * i + placement];
      SCOPED_TRACE(std::to_string(rows[i].size) + (placement ? " in place" : " out of place"));
      EXPECT_EQ(p.op, "allreduce");
      EXPECT_EQ(p.algo, "nccl-tests");
      EXPECT_EQ(p.entry.origin.value_or(""), "nccl-tests");
      EXPECT_EQ(p.transport, "nccl");
      EXPECT_EQ(p.device, "cuda");
      EXPECT_EQ(p.nGpus, 8);
      EXPECT_EQ(p.bytes, rows[i].size);
      EXPECT_EQ(p.count, rows[i].size / 4);
      EXPECT_EQ(p.isInPlace(), placement == 1);
      EXPECT_FALSE(p.root.has_value());
      EXPECT_EQ(p.timeMedianUs, rows[i].t[placement]);
      EXPECT_EQ(p.timeMinUs, rows[i].t[placement]);
      EXPECT_EQ(p.timeMaxUs, rows[i].t[placement]);
      EXPECT_EQ(p.algbwGbps, rows[i].alg[placement]);
      EXPECT_EQ(p.busbwGbps, rows[i].bus[placement]);
      EXPECT_EQ(p.wrong.value_or(-1), 0);
      EXPECT_EQ(p.iters, 20);
      EXPECT_EQ(p.warmup, 5);
      EXPECT_EQ(p.timingMethod(), kBackToBackTiming);
      EXPECT_FALSE(p.spread.has_value());
      // A record a results file may hold: its JSON reads back to the same figures.
      const nlohmann::json j = p.toJson();
      const CollectiveRecord back = CollectiveRecord::fromJson(JsonIn(j, "x"));
      EXPECT_EQ(back.toJson(), j);
    }
  }
  EXPECT_EQ(got.meta.nccl.value_or(""), "2.27.3");
  EXPECT_EQ(got.meta.worldSize.value_or(0), 8);
  ASSERT_TRUE(got.meta.hosts && got.meta.gpus);
  EXPECT_EQ(*got.meta.hosts, std::vector<std::string>{"gpu-node-1"});
  EXPECT_EQ(got.meta.gpus->size(), 8u);
  EXPECT_EQ(got.meta.gpus->front(), "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(got.leftOut.empty());
}

TEST(NcclTestsImport, AnOlderLogWithoutItsTestsNameIsReadByItsFiguresOrByOpAndAWrongOpIsRefused) {
  const std::string text = readText(fixture("all_gather_old.txt"));
  // No "Collective test starting" line: its busbw / algbw (3/4 at 4 ranks) and its "sum" column
  // fit allgather and reduce_scatter alike, so the import asks for --op, naming both.
  expectUsageError([&] { parseNcclTestsText(text, "ag.txt", ""); }, {"ag.txt:", "allgather", "reduce_scatter", "--op"});
  const NcclTestsImport got = parseNcclTestsText(text, "ag.txt", "allgather");
  ASSERT_EQ(got.points.size(), 16u);
  ASSERT_EQ(got.tests.size(), 1u);
  EXPECT_EQ(got.tests.front().opFrom, "--op");
  for (const auto& p : got.points) {
    EXPECT_EQ(p.op, "allgather");
    EXPECT_EQ(p.nGpus, 4);
    EXPECT_FALSE(p.wrong.has_value()) << "validation: 0 in the header: nothing was checked";
  }
  // busbw = algbw x 3/4 here; allreduce's factor at 4 ranks is 3/2.
  expectUsageError([&] { parseNcclTestsText(text, "ag.txt", "allreduce"); }, {"ag.txt:", "busbw", "allreduce", "--op"});
  // A file that names its test refuses another --op.
  expectUsageError([&] { parseNcclTestsText(readText(fixture("all_reduce_8gpu.txt")), "ar.txt", "broadcast"); },
                   {"ar.txt:", "allreduce", "--op broadcast"});
}

TEST(NcclTestsImport, AJobLogKeepsEveryTestTypeAndReductionWithItsTypeRecorded) {
  const NcclTestsImport got = parseNcclTestsText(readText(fixture("job_log.txt")), "job.log", "");
  std::map<std::string, std::size_t> n;
  for (const auto& p : got.points) {
    ++n[p.op + " " + p.elementType() + " " + p.reduction()];
    if (p.op == "broadcast") {
      EXPECT_EQ(p.root.value_or(-1), 0);
      EXPECT_EQ(p.busbwGbps, p.algbwGbps) << "broadcast's factor is 1";
    }
    if (p.op == kShiftOp) {
      EXPECT_FALSE(p.wrong.has_value() && p.isInPlace()) << "sendrecv's in-place is unchecked";
    }
  }
  // 5 sizes of each type and reduction, two placements; sendrecv's 3 sizes; broadcast's 4.
  EXPECT_EQ(n["allreduce float32 sum"], 10u);
  EXPECT_EQ(n["allreduce float16 sum"], 10u);
  EXPECT_EQ(n["allreduce float32 max"], 10u);
  EXPECT_EQ(n["allreduce float16 max"], 10u);
  EXPECT_EQ(n[std::string(kShiftOp) + " float32 sum"], 6u);
  EXPECT_EQ(n["broadcast float32 sum"], 8u);
  EXPECT_TRUE(got.leftOut.empty()) << got.leftOut.front();
  // A bf16 point is another measurement than a float one: its record says so.
  for (const auto& p : got.points) {
    if (p.elementType() == "float16") {
      EXPECT_EQ(p.toJson().value("dtype", ""), "float16");
    }
    if (p.elementType() == "float32") {
      EXPECT_FALSE(p.toJson().contains("dtype"));
    }
  }
}

TEST(NcclTestsImport, PerIterationColumnsGiveTheRangeAroundTheMean) {
  const NcclTestsImport got = parseNcclTestsText(readText(fixture("all_reduce_per_iter.txt")), "pi.txt", "");
  ASSERT_EQ(got.points.size(), 12u);
  for (const auto& p : got.points) {
    EXPECT_LT(p.timeMinUs, p.timeMedianUs);
    EXPECT_GT(p.timeMaxUs, p.timeMedianUs);
    EXPECT_EQ(p.timeExtra.value("mean_launch", 0.0), p.timeMedianUs);
    EXPECT_DOUBLE_EQ(p.timeExtra.value("nccl_tests_cv", 0.0), 0.0425);
  }
}

TEST(NcclTestsImport, TheJsonFileWithPerIterationTimesGivesTheDistributionAndItsMedianBandwidth) {
  const nlohmann::json doc = nlohmann::json::parse(readText(fixture("all_reduce_2node.json")));
  const NcclTestsImport got = parseNcclTestsJson(doc, "ar.json", "");
  ASSERT_EQ(got.points.size(), 2 * doc["results"].size());
  EXPECT_EQ(got.meta.worldSize.value_or(0), 16);
  EXPECT_EQ(got.meta.nodes.value_or(0), 2);
  EXPECT_EQ(got.meta.command.value_or("").rfind("nccl-tests /opt/nccl-tests/build/all_reduce_perf -b 1K", 0), 0u);
  for (std::size_t i = 0; i < doc["results"].size(); ++i) {
    const auto& row = doc["results"][i];
    for (int placement = 0; placement < 2; ++placement) {
      const CollectiveRecord& p = got.points[2 * i + placement];
      const auto& file = row[placement ? "in_place" : "out_of_place"];
      EXPECT_EQ(p.bytes, row["size"].get<std::uint64_t>());
      EXPECT_EQ(p.nGpus, 16);
      const char* iterKey = placement ? "in_place_per_iter" : "out_of_place_per_iter";
      if (!row.contains(iterKey)) {
        EXPECT_EQ(p.timeMedianUs, file["time"].get<double>());
        EXPECT_EQ(p.busbwGbps, file["bus_bw"].get<double>());
        EXPECT_FALSE(p.spread.has_value());
        continue;
      }
      std::vector<double> times = row[iterKey]["times_us"].get<std::vector<double>>();
      const double first = times.front();
      std::sort(times.begin(), times.end());
      const double median = (times[9] + times[10]) / 2;
      EXPECT_DOUBLE_EQ(p.timeMedianUs, median);
      EXPECT_DOUBLE_EQ(p.timeMaxUs, times.back());
      EXPECT_DOUBLE_EQ(p.busbwGbps, static_cast<double>(p.bytes) / (median * 1e3) * 2 * 15 / 16);
      ASSERT_TRUE(p.spread.has_value());
      EXPECT_DOUBLE_EQ(p.spread->firstUs, first);
      EXPECT_EQ(p.spread->spikes, 1) << "the first iteration, at 3x";
      EXPECT_EQ(p.timeExtra.value("mean_launch", 0.0), file["time"].get<double>());
    }
  }
}

TEST(NcclTestsImport, ADamagedRowIsRefusedByItsLine) {
  const std::string text = readText(fixture("all_reduce_8gpu.txt"));
  const auto replaceOnce = [](std::string s, const std::string& from, const std::string& to) {
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? s : s.replace(at, from.size(), to);
  };
  // The 128 MiB row is the file's line 30: its in-place algbw changed, then its busbw, then one
  // column cut, then a time that is not a number.
  const std::string row = "   635.27  211.28  369.73";
  ASSERT_NE(text.find(row), std::string::npos) << "make_fixtures.py changed: update this test";
  expectUsageError([&] { parseNcclTestsText(replaceOnce(text, row, "   635.27  201.28  369.73"), "d.txt", ""); },
                   {"d.txt:30:", "algbw"});
  expectUsageError([&] { parseNcclTestsText(replaceOnce(text, row, "   635.27  211.28  339.73"), "d.txt", ""); },
                   {"d.txt:30:", "busbw"});
  expectUsageError([&] { parseNcclTestsText(replaceOnce(text, row, "   635.27  211.28"), "d.txt", ""); },
                   {"d.txt:30:", "columns"});
  expectUsageError([&] { parseNcclTestsText(replaceOnce(text, row, "   nan  211.28  369.73"), "d.txt", ""); },
                   {"d.txt:30:", "time"});
  // A time whose size / time no link reaches: refused, not written as an infinite algbw (the
  // check's float slack once scaled with that absurd value and let any printed algbw pass).
  expectUsageError([&] { parseNcclTestsText(replaceOnce(text, row, "   1e-300  211.28  369.73"), "d.txt", ""); },
                   {"d.txt:30:", "not a measurement"});
  // #wrong is a count: one beyond what a count can hold, or with a fraction, is refused.
  const std::string wrongCol = "  369.73       0";
  ASSERT_NE(text.find(wrongCol), std::string::npos);
  expectUsageError([&] { parseNcclTestsText(replaceOnce(text, wrongCol, "  369.73   1e+60"), "d.txt", ""); },
                   {"d.txt:30:", "#wrong"});
  expectUsageError([&] { parseNcclTestsText(replaceOnce(text, wrongCol, "  369.73     2.5"), "d.txt", ""); },
                   {"d.txt:30:", "#wrong"});
  // Without its rank lines the rank count comes from busbw / algbw (allreduce's 2(N-1)/N), and
  // the import says so; broadcast's factor of 1 cannot tell it: --ranks is asked for.
  std::string noRanks;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("#  Rank", 0) != 0) noRanks += line + "\n";
  const NcclTestsImport byFigures = parseNcclTestsText(noRanks, "d.txt", "");
  ASSERT_EQ(byFigures.tests.size(), 1u);
  EXPECT_EQ(byFigures.tests.front().ranks, 8);
  EXPECT_EQ(byFigures.tests.front().ranksFrom, "busbw / algbw");
  std::string broadcast;
  std::istringstream bin(readText(fixture("job_log.txt")));
  bool inBroadcast = false;
  for (std::string line; std::getline(bin, line);) {
    if (line.find("starting: broadcast_perf") != std::string::npos) inBroadcast = true;
    if (inBroadcast && line.rfind("#  Rank", 0) != 0) broadcast += line + "\n";
  }
  expectUsageError([&] { parseNcclTestsText(broadcast, "d.txt", ""); }, {"d.txt:", "--ranks"});
  EXPECT_EQ(parseNcclTestsText(broadcast, "d.txt", "", 8).points.front().nGpus, 8);
  // Nothing a table row: refused, not an empty file.
  expectUsageError([&] { parseNcclTestsText("hello\nworld\n", "d.txt", "allreduce"); }, {"d.txt", "no nccl-tests result row"});
}

TEST(NcclTestsImport, JsonOfTheWrongShapeIsRefusedByField) {
  nlohmann::json doc = nlohmann::json::parse(readText(fixture("all_reduce_2node.json")));
  nlohmann::json bad = doc;
  bad["results"][3]["in_place"]["bus_bw"] = 1.0;
  expectUsageError([&] { parseNcclTestsJson(bad, "b.json", ""); }, {"b.json", "results[3].in_place", "busbw"});
  bad = doc;
  bad["config"]["devices"][3] = 5;
  expectUsageError([&] { parseNcclTestsJson(bad, "b.json", ""); }, {"b.json", "config.devices[3]"});
  // Without its devices the rank count is the config's GPUs x threads of one process (1 here),
  // which the figures of 16 ranks refuse.
  bad = doc;
  bad["config"].erase("devices");
  expectUsageError([&] { parseNcclTestsJson(bad, "b.json", ""); }, {"b.json", "busbw", "1 ranks"});
  bad = doc;
  bad["results"][0]["size"] = -8;
  expectUsageError([&] { parseNcclTestsJson(bad, "b.json", ""); }, {"b.json", "results[0].size"});
  // Another test's name over allreduce's figures: refused by the figures.
  bad = doc;
  bad["args"][0] = "/x/sendrecv_perf";
  expectUsageError([&] { parseNcclTestsJson(bad, "b.json", ""); }, {"b.json", "busbw", kShiftOp});
  // A count of wrong elements is a whole number, as in the text table (2.0 is 2).
  bad = doc;
  bad["results"][2]["out_of_place"]["nwrong"] = 2.5;
  expectUsageError([&] { parseNcclTestsJson(bad, "b.json", ""); }, {"b.json", "results[2].out_of_place.nwrong"});
  bad["results"][2]["out_of_place"]["nwrong"] = 2.0;
  EXPECT_NO_THROW(parseNcclTestsJson(bad, "b.json", ""));
}

// rccl-tests' JSON lines: each line a placement, read as a text row is (figures checked), a
// cut last line counted, a test tpbench has no op for left out and counted, a bad line refused.
TEST(NcclTestsImport, RcclTestsJsonLinesAreReadLineByLine) {
  const std::string a = R"({"#wrong":"0","algBw":0.5,"busBw":0.75,"gpus":4,"inPlace":0,"name":"AllReduce","redop":"sum","size":1048576,"time":2097.152,"type":"float"})";
  const std::string b = R"({"#wrong":"0","algBw":0.5,"busBw":0.375,"gpus":4,"inPlace":1,"name":"AllGather","redop":"sum","size":1048576,"time":2097.152,"type":"half"})";
  const std::string g = R"({"#wrong":"0","algBw":0.5,"busBw":0.5,"gpus":4,"inPlace":0,"name":"Gather","redop":"sum","size":1048576,"time":2097.152,"type":"float"})";
  ASSERT_TRUE(looksLikeRcclTestsJsonLines(a + "\n"));
  EXPECT_FALSE(looksLikeRcclTestsJsonLines(readText(fixture("all_reduce_2node.json"))));
  const NcclTestsImport r = parseRcclTestsJsonLines(a + "\n" + b + "\n" + g + "\n" + a.substr(0, 40), "r.jsonl", "");
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[0].op, "allreduce");
  EXPECT_EQ(r.points[1].op, "allgather");
  EXPECT_EQ(r.points[1].elementType(), "float16");
  EXPECT_EQ(r.points[1].count, 524288u);
  EXPECT_EQ(r.points[0].device, "rocm");
  EXPECT_EQ(r.points[0].algo, kRcclTestsOrigin);
  EXPECT_EQ(r.library, "rccl");
  ASSERT_EQ(r.leftOut.size(), 2u);  // the Gather line and the cut one, a line each
  // busbw that does not fit 4 ranks' allreduce: refused, naming the line.
  std::string bad = a;
  bad.replace(bad.find("0.75"), 4, "0.95");
  expectUsageError([&] { parseRcclTestsJsonLines(bad + "\n", "r.jsonl", ""); }, {"r.jsonl:1:", "busbw"});
  expectUsageError([&] { parseRcclTestsJsonLines(a + "\n{oops\n" + a + "\n", "r.jsonl", ""); }, {"r.jsonl:2:", "JSON"});
  expectUsageError([&] { parseRcclTestsJsonLines(a + "\n", "r.jsonl", "allgather"); }, {"r.jsonl:1:", "--op"});
}

TEST(NcclTestsImport, ProgramNamesMapToOps) {
  EXPECT_EQ(opOfNcclTestsProgram("all_reduce_perf"), "allreduce");
  EXPECT_EQ(opOfNcclTestsProgram("./build/all_gather_perf"), "allgather");
  EXPECT_EQ(opOfNcclTestsProgram("reduce_scatter_perf_mpi"), "reduce_scatter");
  EXPECT_EQ(opOfNcclTestsProgram("alltoall_perf"), "alltoall");
  EXPECT_EQ(opOfNcclTestsProgram("sendrecv_perf"), kShiftOp) << "nccl-tests' sendrecv is a shift, not a ping-pong";
  EXPECT_EQ(opOfNcclTestsProgram("hypercube_perf"), "");
}

// The command: files read, a results file written that compare and report take; bad input refused.
TEST(ImportCli, WritesAResultsFileThatCompareAndReportRead) {
  const std::string out = test::tempPath("imported.json");
  std::filesystem::remove(out);
  auto r = test::runCli({"import", fixture("all_reduce_8gpu.txt"), fixture("all_reduce_2node.json"), "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string imported = r.out;
  EXPECT_NE(r.out.find("28 points of allreduce, 8 ranks on 1 host(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote 46 imported points"), std::string::npos) << r.out;
  // The 8-GPU H100 curve's plateau against the published ring figure; none for two nodes
  // without their NIC count.
  EXPECT_NE(r.out.find("allreduce at 8 ranks: plateau "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of the published ring figure for 8x H100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("allreduce at 16 ranks: no verdict: "), std::string::npos) << r.out;
  const ResultsFile f = ResultsFile::load(out);
  EXPECT_EQ(f.collectives().size(), 46u);
  EXPECT_EQ(f.meta().extra["imported"]["tool"], "nccl-tests");
  r = test::runCli({"compare", out, out});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("46 points matched, 0 regressed"), std::string::npos) << r.out;
  // The report gives each GPU allreduce curve the verdict import printed, word for word, and
  // says why the two-node curve has none.
  const auto line = imported.find("allreduce at 8 ranks: ");
  ASSERT_NE(line, std::string::npos) << imported;
  const std::string verdict = imported.substr(line + 22, imported.find('\n', line) - line - 22);
  const std::string dir = test::tempPath("imported_report");
  r = test::runCli({"report", out, "-o", dir, "--gnuplot", ""});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string index = readText(dir + "/index.md");
  const auto section = index.find("## Against published figures");
  ASSERT_NE(section, std::string::npos) << index;
  const std::string name = std::filesystem::path(out).filename().string();
  EXPECT_NE(index.find("| nccl-tests (" + name + ") | 8 | 1 | NVIDIA H100 80GB HBM3 | " + verdict + " |", section),
            std::string::npos)
      << verdict << "\n" << index.substr(section, 1500);
  EXPECT_NE(verdict.find("plateau 371 GB/s, the median of 2 points at 512M; 101 % of the published ring figure for 8x H100"),
            std::string::npos) << verdict;
  EXPECT_NE(index.find("| 16 | 2 | NVIDIA H200 | no verdict: largest size 64 MiB is below the 256 MiB plateau |", section),
            std::string::npos) << index.substr(section, 1500);
  // The imported points are drawn (the chart's data names them by where they ran), not left out.
  EXPECT_NE(readText(dir + "/allreduce_busbw.dat").find("] nccl-tests 8 ranks, NVIDIA H100 80GB HBM3"), std::string::npos)
      << readText(dir + "/allreduce_busbw.dat").substr(0, 600);
  EXPECT_NE(readText(dir + "/allreduce_busbw.dat").find("] nccl-tests 16 ranks, 2 nodes, NVIDIA H200"), std::string::npos);
  std::filesystem::remove_all(dir);
  // Without --overwrite the file is not replaced; a bad --op and the output as an input are refused.
  test::expectRefusedUpFront(test::runCli({"import", fixture("all_reduce_8gpu.txt"), "--out", out}), "--out");
  test::expectRefusedUpFront(test::runCli({"import", fixture("all_reduce_8gpu.txt"), "--out", out + "2", "--op", "gather"}),
                             "--op");
  test::expectRefusedUpFront(test::runCli({"import", fixture("all_reduce_8gpu.txt"), "--out", out + "2", "--nic", "x"}),
                             "--nic");
  test::expectRefusedUpFront(
      test::runCli({"import", fixture("all_reduce_8gpu.txt"), "--out", out + "2", "--library", "mpi"}), "--library");
  for (const char* flag : {"--ranks", "--nics"})
    for (const char* v : {"0", "-1"})
      test::expectRefusedUpFront(test::runCli({"import", fixture("all_reduce_8gpu.txt"), "--out", out + "2", flag, v}), flag);
  test::expectRefusedUpFront(test::runCli({"import", out, "--out", out, "--overwrite"}), "--out");
  test::expectRefusedUpFront(test::runCli({"import", "/dev/zero", "--out", out + "3"}), "/dev/zero");
  EXPECT_FALSE(std::filesystem::exists(out + "2"));
  EXPECT_FALSE(std::filesystem::exists(out + "3"));
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace tpb

namespace tpb {
namespace {

// What a hostile log can do is bounded by its size: a line longer than nccl-tests writes and a
// GPU name longer than any GPU's (each point carries it) are refused by line; a results file
// never holds more points than every reader takes.
TEST(NcclTestsImport, LongLinesAndNamesAreRefusedAndNoFileHoldsMorePointsThanReadersTake) {
  const std::string text = readText(fixture("all_reduce_8gpu.txt"));
  const std::string longLine = "# " + std::string(kMaxNcclTestsLine, 'x') + "\n";
  expectUsageError([&] { parseNcclTestsText(longLine + text, "l.txt", ""); }, {"l.txt:1:", "longer than nccl-tests writes"});
  std::string longName = text;
  const std::string gpu = "NVIDIA H100 80GB HBM3";
  longName.replace(longName.find(gpu), gpu.size(), std::string(kMaxNcclTestsName + 1, 'G'));
  expectUsageError([&] { parseNcclTestsText(longName, "n.txt", ""); }, {"n.txt:", "GPU name longer than"});
  const std::string out = test::tempPath("too_many.json");
  std::filesystem::remove(out);
  ResultsFile f = ResultsFile::create(out, Meta{});
  const CollectiveRecord one = parseNcclTestsText(text, "ar.txt", "").points.front();
  for (std::size_t i = 0; i <= kMaxCollectiveRecords; ++i) f.addCollective(one);
  expectUsageError([&] { f.save(); }, {out, "more than a results file holds"});
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace tpb
