// tests/nccl_tests_corpus_test.cc — the importer (record/nccl_tests.h) on real nccl-tests and
// rccl-tests output that other people produced on their clusters and published:
// tests/fixtures/nccl_tests/real/*.log, each as published (its source in the .expect beside it),
// and *.expect, the transcription of what the log says: the test, ranks, nodes, GPU, library, the
// rows cut short, and one line per placement of every complete row as printed. Each log is
// imported and every record is checked against its row; the expectations were written from the
// logs, not from the importer's output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "record/nccl_tests.h"
#include "tests/file_util.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;

std::string corpusDir() { return std::string(TPB_SOURCE_DIR) + "/tests/fixtures/nccl_tests/real"; }

struct ExpectedRow {
  std::string op;  // "" : the file's op
  long long bytes = 0, count = 0;
  std::string type, redop, root, place, time, algbw, busbw, wrong;
};

struct Expected {
  std::map<std::string, std::string> keys;
  std::vector<ExpectedRow> rows;
  std::string key(const std::string& k) const {
    const auto it = keys.find(k);
    return it == keys.end() ? "" : it->second;
  }
};

Expected readExpect(const std::string& path) {
  Expected e;
  std::istringstream in(test::readText(path));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string k = line.substr(0, colon);
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(' '));
    while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.pop_back();
    if (k != "row") {
      e.keys[k] = v;
      continue;
    }
    std::istringstream r(v);
    std::vector<std::string> t;
    for (std::string tok; r >> tok;) t.push_back(tok);
    ExpectedRow row;
    std::size_t i = 0;
    if (!t.empty() && !std::isdigit(static_cast<unsigned char>(t[0][0]))) row.op = t[i++];
    if (t.size() < i + 10) {
      ADD_FAILURE() << path << ": a row line of " << t.size() << " fields: " << line;
      continue;
    }
    row.bytes = std::stoll(t[i]);
    row.count = std::stoll(t[i + 1]);
    row.type = t[i + 2];
    row.redop = t[i + 3];
    row.root = t[i + 4];
    row.place = t[i + 5];
    row.time = t[i + 6];
    row.algbw = t[i + 7];
    row.busbw = t[i + 8];
    row.wrong = t[i + 9];
    e.rows.push_back(row);
  }
  return e;
}

std::string opName(const std::string& nccl) {
  if (nccl == "sendrecv") return kShiftOp;
  return nccl;
}

std::string typeName(const std::string& t) {
  static const std::map<std::string, std::string> names = {{"float", "float32"}, {"half", "float16"}, {"double", "float64"},
                                                           {"bfloat16", "bfloat16"}, {"f8e4m3", "float8_e4m3"},
                                                           {"f8e5m2", "float8_e5m2"}};
  const auto it = names.find(t);
  return it == names.end() ? t : it->second;
}

// The log as published: a text log (.log) or nccl-tests' -J file (.json).
std::string dataPath(const std::string& name) {
  const std::string log = corpusDir() + "/" + name + ".log";
  return fs::exists(log) ? log : corpusDir() + "/" + name + ".json";
}

NcclTestsImport parseAny(const std::string& text, const std::string& name, const std::string& op, int ranks,
                         const std::string& library) {
  if (fs::path(dataPath(name)).extension() == ".json")
    return parseNcclTestsJson(nlohmann::json::parse(text), name, op);
  if (looksLikeRcclTestsJsonLines(text)) return parseRcclTestsJsonLines(text, name, op);  // rccl-tests -Z json
  return parseNcclTestsText(text, name, op, ranks, library);
}

std::vector<std::string> corpus() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(corpusDir()))
    if (e.path().extension() == ".expect") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(NcclTestsCorpus, HoldsThirtyRealLogsEachWithItsSource) {
  const auto names = corpus();
  EXPECT_GE(names.size(), 30u);
  for (const auto& n : names) {
    const Expected e = readExpect(corpusDir() + "/" + n + ".expect");
    EXPECT_TRUE(fs::exists(dataPath(n))) << n;
    EXPECT_NE(e.key("source").find("https://"), std::string::npos) << n << ": every log says where it was published";
    EXPECT_FALSE(e.key("shape").empty()) << n;
  }
}

class NcclTestsCorpusLog : public ::testing::TestWithParam<std::string> {};

TEST_P(NcclTestsCorpusLog, EveryCompleteRowReadsAsPrinted) {
  const std::string name = GetParam();
  const Expected e = readExpect(corpusDir() + "/" + name + ".expect");
  const std::string text = test::readText(dataPath(name));
  // Where nothing in the log names its test, its rank count or its library, the user gives them
  // (--op, --ranks, --library: flag_ranks and flag_library, from what the source says beside it).
  const std::string flag = e.key("op_from") == "none" ? e.key("op") : "";
  const int flagRanks = std::atoi(e.key("flag_ranks").c_str());
  const std::string flagLibrary = e.key("flag_library");
  if (!e.key("refused").empty()) {
    // A log that cannot be read without what it does not say: one line naming what to give.
    try {
      parseAny(text, name, flag, flagRanks, flagLibrary);
      ADD_FAILURE() << "imported; expected a refusal naming " << e.key("refused");
    } catch (const UsageError& ex) {
      EXPECT_NE(std::string(ex.what()).find(e.key("refused")), std::string::npos) << ex.what();
      EXPECT_EQ(std::string(ex.what()).find('\n'), std::string::npos) << "one line";
    }
    return;
  }
  std::vector<const ExpectedRow*> want;
  for (const auto& r : e.rows)
    if (r.bytes > 0) want.push_back(&r);  // size 0 is left out, and counted
  if (want.empty()) {
    EXPECT_THROW(parseAny(text, name, flag, flagRanks, flagLibrary), UsageError) << "no row to import";
    return;
  }
  NcclTestsImport got;
  try {
    got = parseAny(text, name, flag, flagRanks, flagLibrary);
  } catch (const std::exception& ex) {
    FAIL() << ex.what();
  }
  ASSERT_EQ(got.points.size(), want.size());
  const int ranks = std::atoi(e.key("ranks").c_str());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const ExpectedRow& w = *want[i];
    const CollectiveRecord& p = got.points[i];
    SCOPED_TRACE(name + " row " + std::to_string(i) + ": " + std::to_string(w.bytes) + " " + w.place);
    EXPECT_EQ(p.op, opName(w.op.empty() ? e.key("op") : w.op));
    EXPECT_EQ(p.bytes, static_cast<std::uint64_t>(w.bytes));
    EXPECT_EQ(p.count, static_cast<std::uint64_t>(w.count));
    EXPECT_EQ(p.elementType(), typeName(w.type));
    if (w.redop != "-" && w.redop != "none") {
      EXPECT_EQ(p.reduction(), w.redop == "mulsum" ? "premulsum" : w.redop);
    }
    if (w.root != "-" && w.root != "-1") {
      EXPECT_EQ(p.root.value_or(-1), std::stoi(w.root));
    }
    if (w.root == "-1") {
      EXPECT_FALSE(p.root.has_value());
    }
    EXPECT_EQ(p.isInPlace(), w.place == "ip");
    if (p.timeExtra.contains("mean_launch") && fs::path(dataPath(name)).extension() == ".json") {
      // A -J file's per-iteration times: the record's time is their median and its bandwidths
      // the median's; the file's mean is kept as mean_launch, and its figures follow from it.
      EXPECT_DOUBLE_EQ(p.timeExtra["mean_launch"].get<double>(), std::stod(w.time));
      EXPECT_NEAR(p.algbwGbps * p.timeMedianUs, std::stod(w.algbw) * std::stod(w.time), 1e-5 * w.bytes / 1e3);
      EXPECT_NEAR(p.busbwGbps / p.algbwGbps, std::stod(w.busbw) / std::stod(w.algbw), 1e-6);
      EXPECT_LE(p.timeMinUs, p.timeMedianUs);
      EXPECT_GE(p.timeMaxUs, p.timeMedianUs);
    } else {
      // The first generation printed ms; records hold µs.
      EXPECT_DOUBLE_EQ(p.timeMedianUs, std::stod(w.time) * (e.key("time_unit") == "ms" ? 1000 : 1));
    }
    if (p.timeExtra.contains("mean_launch") && fs::path(dataPath(name)).extension() == ".json") {
      // checked above
    } else if (p.extra.contains("nccl_tests_algbw")) {
      // An older allgather's or reduce_scatter's algbw (what crossed the links): kept as printed,
      // the record's algbw is size / time as everywhere.
      EXPECT_DOUBLE_EQ(p.extra["nccl_tests_algbw"].get<double>(), std::stod(w.algbw));
      EXPECT_NEAR(p.algbwGbps, static_cast<double>(w.bytes) / (p.timeMedianUs * 1e3), 1e-9);
    } else {
      EXPECT_DOUBLE_EQ(p.algbwGbps, std::stod(w.algbw));
    }
    if (!(p.timeExtra.contains("mean_launch") && fs::path(dataPath(name)).extension() == ".json")) {
      EXPECT_DOUBLE_EQ(p.busbwGbps, std::stod(w.busbw));
    }
    if (w.wrong == "N/A") {
      EXPECT_FALSE(p.wrong.has_value());
    } else if (p.extra.contains("max_error")) {
      EXPECT_DOUBLE_EQ(p.extra["max_error"].get<double>(), std::stod(w.wrong)) << "an old table's error column";
    } else {
      EXPECT_EQ(p.wrong.value_or(-1), std::llround(std::stod(w.wrong)));
    }
    if (e.key("library") == "rccl") {
      EXPECT_EQ(p.algo, kRcclTestsOrigin);
      EXPECT_EQ(p.transport, "rccl");
      EXPECT_EQ(p.device, "rocm");
    } else {
      EXPECT_EQ(p.algo, kNcclTestsOrigin);
      EXPECT_EQ(p.device, "cuda");
    }
    // The rank count: the Rank lines where all are printed; a log that elides some (its
    // true_ranks:) or prints none is read by busbw / algbw.
    const int trueRanks = e.keys.count("true_ranks") ? std::atoi(e.key("true_ranks").c_str()) : ranks;
    if (trueRanks > 0 && w.op.empty()) {
      EXPECT_EQ(p.nGpus, trueRanks);
    }
    if (e.key("gpu") != "-" && !e.key("gpu").empty() && w.op.empty()) {
      EXPECT_EQ(p.extra.value("gpu", std::string()), e.key("gpu"));
    }
    if (e.key("nodes") != "-" && !e.key("nodes").empty() && w.op.empty()) {
      EXPECT_EQ(p.extra.value("nodes", 0), std::atoi(e.key("nodes").c_str()));
    }
  }
  EXPECT_EQ(got.library, e.key("library"));
  // The library's version where the expectation names it as the log prints it.
  if (!e.key("rccl_version").empty()) {
    EXPECT_EQ(got.meta.extra.value("rccl", std::string()), e.key("rccl_version"));
  }
  if (!e.key("nccl_version").empty()) {
    EXPECT_EQ(got.meta.nccl.value_or(""), e.key("nccl_version"));
  }
  long long cut = 0;
  for (const auto& l : got.leftOut)
    if (l.find("cut short") != std::string::npos) cut += std::atoll(l.c_str());
  EXPECT_EQ(cut, std::atoll(e.key("cut").c_str())) << "rows cut short, counted";
  // Where the log names its test, the import says it read it there.
  ASSERT_FALSE(got.tests.empty());
  const std::string from = e.key("op_from");
  const std::string said = got.tests.front().opFrom;
  if (from == "collective-line") {
    EXPECT_NE(said.find("Collective test"), std::string::npos) << said;
  } else if (from == "command" || from == "program-name") {
    EXPECT_EQ(said, "the command line");
  } else if (from == "busfactor") {
    EXPECT_EQ(said, "busbw / algbw");
  } else if (from == "none") {
    EXPECT_EQ(said, "--op");
  }
}

INSTANTIATE_TEST_SUITE_P(Real, NcclTestsCorpusLog, ::testing::ValuesIn(corpus()), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

}  // namespace
}  // namespace tpb
