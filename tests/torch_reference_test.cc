// PyTorch's own DDP and DataParallel as references (torch_ddp, torch_dp): the IDX files tpbench
// hands scripts/torch_ddp.py, the skips where torch cannot run, a sweep as a user runs it, a
// failing script reported as a failed point, and the reports drawing the references beside the
// strategies they are the references of. (Their weights after K steps are checked against
// `single` with every other strategy in train_equivalence_test.cc.)
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "core/registry.h"
#include "tests/cli_util.h"
#include "tests/report_util.h"
#include "workload/idx_file.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::runCli;

std::string bytesOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

class IdxFile : public test::TempDirTest {
 protected:
  IdxFile() : TempDirTest("tpb_idx") {}
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
};

// The exact bytes of the format MNIST ships in: magic 0 0 type rank, big-endian dims and elements.
TEST_F(IdxFile, WritesMnistsLayoutByteForByte) {
  writeIdx(path("u8"), torch::tensor({1, 2, 3, 4, 5, 6}, torch::kUInt8).reshape({2, 3}));
  EXPECT_EQ(bytesOf(path("u8")), std::string("\0\0\x08\x02\0\0\0\x02\0\0\0\x03\x01\x02\x03\x04\x05\x06", 18));
  writeIdx(path("f32"), torch::tensor({1.0f, -2.5f}));
  EXPECT_EQ(bytesOf(path("f32")), std::string("\0\0\x0d\x01\0\0\0\x02\x3f\x80\0\0\xc0\x20\0\0", 16));
  writeIdx(path("i32"), torch::tensor({0x01020304}, torch::kInt32));
  EXPECT_EQ(bytesOf(path("i32")), std::string("\0\0\x0c\x01\0\0\0\x01\x01\x02\x03\x04", 12));
}

TEST_F(IdxFile, RoundTripsEveryTypeAndShapeExactly) {
  const std::vector<torch::Tensor> cases = {
      torch::arange(0, 256, torch::kInt64).to(torch::kUInt8).reshape({16, 16}),
      torch::tensor({-7, 0, 2147483647, -2147483647 - 1}, torch::kInt32),
      torch::randn({3, 5, 7}),
      torch::randn({1000}, torch::kFloat64),
      torch::empty({0, 784}),
      torch::randn({3, 4}).t(),  // not contiguous
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    writeIdx(path("x"), cases[i]);
    const torch::Tensor back = readIdx(path("x"));
    EXPECT_EQ(back.scalar_type(), cases[i].scalar_type());
    EXPECT_EQ(back.sizes(), cases[i].sizes());
    EXPECT_TRUE(torch::equal(back, cases[i]));
  }
}

TEST_F(IdxFile, RefusesWhatItCannotReadNamingTheFile) {
  EXPECT_THROW(writeIdx(path("x"), torch::ones({2}, torch::kInt64)), Error);  // IDX has no int64
  writeIdx(path("good"), torch::ones({4}));
  const std::string good = bytesOf(path("good"));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"short", good.substr(0, good.size() - 1)},
      {"long", good + "x"},
      {"magic", "\1" + good.substr(1)},
      {"int16", std::string("\0\0\x0b\x01\0\0\0\x01\0\x01", 10)},
      {"header", good.substr(0, 6)},
  };
  for (const auto& [name, bytes] : bad) {
    SCOPED_TRACE(name);
    writeBytes(path(name), bytes);
    try {
      readIdx(path(name));
      ADD_FAILURE() << "read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path(name)), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(readIdx(path("missing")), Error);
}

TEST(TorchReference, DataParallelOnTheCpuIsUnsupportedWithTheReason) {
  const std::string why = findStrategy("--strategy", "torch_dp").unsupported(Device::Cpu, 2);
  EXPECT_NE(why.find("DataParallel"), std::string::npos) << why;
  EXPECT_EQ(findStrategy("--strategy", "torch_dp").processes(4), 1);
  EXPECT_EQ(std::string(originName(findStrategy("--strategy", "torch_ddp").origin)), "reference (PyTorch)");
  EXPECT_EQ(findStrategy("--strategy", "torch_ddp").referenceOf, "ddp");
  EXPECT_EQ(findStrategy("--strategy", "torch_dp").referenceOf, "data_parallel");
}

// A reference is drawn beside the strategy it is the reference of, so their colours must tell
// them apart at a glance (RGB distance; two reds such as #d62728 and #a50f15 are about 56 apart).
TEST(TorchReference, ColoursDifferFromTheirRebuilds) {
  auto channel = [](const std::string& c, int i) { return std::stoi(c.substr(1 + 2 * i, 2), nullptr, 16); };
  for (const char* name : {"torch_ddp", "torch_dp"}) {
    const auto& ref = findStrategy("--strategy", name);
    const auto& rebuild = findStrategy("--strategy", ref.referenceOf);
    double d = 0;
    for (int i = 0; i < 3; ++i) d += std::pow(channel(ref.color, i) - channel(rebuild.color, i), 2);
    EXPECT_GE(std::sqrt(d), 150) << name << " " << ref.color << " vs " << rebuild.color;
  }
}

bool torchRunsHere(std::string& why) {
  why = findStrategy("--strategy", "torch_ddp").unsupported(Device::Cpu, 2);
  return why.empty();
}

const json* runOf(const json& runs, const std::string& strategy, int n) {
  for (const auto& r : runs)
    if (r.at("config").at("strategy") == strategy && r.at("config").at("n_gpus") == n) return &r;
  return nullptr;
}

// As a user runs it: torch_ddp beside ddp, recorded with the same fields; same data, weights and
// order, so the two reach the same loss and accuracy epoch after epoch (two epochs: the second
// epoch's order is the sampler's too), and torch_dp on the CPU is a skip with its reason.
TEST(TorchReferenceCli, TorchDdpTrainsLikeDdpAndIsRecordedAsTheReference) {
  std::string why;
  if (!torchRunsHere(why)) GTEST_SKIP() << why;
  const std::string out = test::tempPath("torch_ddp.json");
  const auto r = runCli({"sweep", "--strategies", "ddp,torch_ddp,torch_dp", "--n_gpus", "1,2", "--batch_size", "32",
                         "--epochs", "2", "--train_size", "1024", "--test_size", "500", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json runs = test::readJson(out).at("runs");
  ASSERT_EQ(runs.size(), 6u);
  for (int n : {1, 2}) {
    SCOPED_TRACE(n);
    const json* mine = runOf(runs, "ddp", n);
    const json* torch = runOf(runs, "torch_ddp", n);
    const json* dp = runOf(runs, "torch_dp", n);
    ASSERT_TRUE(mine && torch && dp);
    EXPECT_EQ(dp->at("status"), "skipped");
    EXPECT_NE(dp->at("error").get<std::string>().find("DataParallel"), std::string::npos);
    ASSERT_EQ(torch->at("status"), "ok") << torch->dump();
    EXPECT_EQ(torch->at("origin"), "reference (PyTorch)");
    EXPECT_EQ(torch->at("reference_of"), "ddp");
    EXPECT_EQ(torch->at("data_ranks"), n);
    ASSERT_EQ(torch->at("epochs").size(), 2u);
    for (std::size_t e = 0; e < 2; ++e) {
      const json& te = torch->at("epochs")[e];
      const json& me = mine->at("epochs")[e];
      EXPECT_GT(te.at("wall_s").get<double>(), 0);
      EXPECT_GE(te.at("comm_s").get<double>(), 0);  // measured on the CPU
      EXPECT_GT(te.at("compute_s").get<double>(), 0);
      EXPECT_LE(te.at("compute_s").get<double>() + te.at("comm_s").get<double>(), te.at("wall_s").get<double>() * 1.01);
      EXPECT_EQ(te.at("samples"), me.at("samples"));
      EXPECT_EQ(te.at("steps"), me.at("steps"));
      EXPECT_NEAR(te.at("train_loss").get<double>(), me.at("train_loss").get<double>(), 1e-4);
      EXPECT_NEAR(te.at("test_accuracy").get<double>(), me.at("test_accuracy").get<double>(), 0.0021);
    }
  }
  std::remove(out.c_str());
}

TEST(TorchReferenceCli, WithoutPythonThePointsAreSkippedWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> env = {{"TPB_PYTHON", "/nonexistent/python3"}};
  const std::string out = test::tempPath("no_python.json");
  auto r = runCli({"sweep", "--strategies", "torch_ddp", "--n_gpus", "1", "--epochs", "1", "--train_size", "256",
                   "--out", out}, env);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json runs = test::readJson(out).at("runs");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].at("status"), "skipped");
  EXPECT_NE(runs[0].at("error").get<std::string>().find("/nonexistent/python3"), std::string::npos) << runs[0];
  EXPECT_NE(runs[0].at("error").get<std::string>().find("TPB_PYTHON"), std::string::npos) << runs[0];
  std::remove(out.c_str());
  // `run` of a strategy that cannot run is bad usage, refused before anything starts.
  test::expectRefusedUpFront(runCli({"run", "--strategy", "torch_ddp", "--n_gpus", "1", "--epochs", "1"}, env),
                             "/nonexistent/python3");
}

// Pids of live processes started through this test process's runCli (their environment holds
// its tag) whose command line holds `needle`.
std::vector<int> ourProcessesWith(const std::string& needle) {
  const std::string tag = '\0' + test::testTag() + '\0';
  std::vector<int> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (test::readText(e.path().string() + "/cmdline").find(needle) != std::string::npos &&
        ('\0' + test::readText(e.path().string() + "/environ") + '\0').find(tag) != std::string::npos)
      pids.push_back(std::stoi(name));
  }
  return pids;
}

// A script that fails on rank 1 is a failed point whose error is the script's own last line,
// with nothing left running; the sweep goes on to the next point.
TEST(TorchReferenceCli, AFailingScriptFailsItsPointWithItsMessage) {
  std::string why;
  if (!torchRunsHere(why)) GTEST_SKIP() << why;
  const std::string script = test::tempPath("failing_torch_ddp.py");
  {
    std::ofstream f(script);
    f << "import os, sys, time\n"
         "real = " << json(TPB_SOURCE_DIR "/scripts/torch_ddp.py").dump() << "\n"
         "if '--probe' in sys.argv or sys.argv[sys.argv.index('--rank') + 1] == '0':\n"
         "    os.execv(sys.executable, [sys.executable, real] + sys.argv[1:])\n"
         "print('deliberate failure of rank 1', file=sys.stderr)\n"
         "sys.exit(3)\n";
  }
  const std::string out = test::tempPath("failing.json");
  const auto r = runCli({"sweep", "--strategies", "torch_ddp,ring_all_reduce", "--n_gpus", "2", "--epochs", "1",
                         "--train_size", "256", "--timeout", "120", "--out", out},
                        {{"TPB_TORCH_SCRIPT", script}});
  EXPECT_EQ(r.exitCode, 1) << r.err;
  const json runs = test::readJson(out).at("runs");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].at("status"), "failed");
  const std::string error = runs[0].at("error");
  EXPECT_NE(error.find("rank 1"), std::string::npos) << error;
  EXPECT_NE(error.find("deliberate failure of rank 1"), std::string::npos) << error;
  EXPECT_EQ(runs[1].at("status"), "ok");
  EXPECT_TRUE(test::workerPids().empty());
  EXPECT_TRUE(ourProcessesWith("torch_ddp.py").empty());
  std::remove(out.c_str());
  std::remove(script.c_str());
}

// Reports draw a reference beside the strategy its record names (reference_of), labelled
// "(PyTorch)": torch_ddp in the ring/DDP chart, torch_dp in the parameter-server/DataParallel
// chart; a PyTorch reference of neither is in neither.
class TorchReferenceReport : public test::TempDirTest {
 protected:
  TorchReferenceReport() : TempDirTest("tpb_torch_report") {}
};

TEST_F(TorchReferenceReport, DrawsEachReferenceBesideItsStrategy) {
  json doc = test::readJson(test::kReportFixture);
  json added = json::array();
  for (const auto& run : doc.at("runs")) {
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"ddp", "torch_ddp"},
                                   {"data_parallel", "torch_dp"}, {"ddp", "torch_other"}}) {
      if (run.at("config").at("strategy") != from) continue;
      json copy = run;
      copy["config"]["strategy"] = to;
      copy["origin"] = "reference (PyTorch)";
      if (to != "torch_other") copy["reference_of"] = from;
      added.push_back(copy);
    }
  }
  for (auto& a : added) doc["runs"].push_back(a);
  const std::string in = (dir_ / "in.json").string();
  std::ofstream(in) << doc.dump();
  const auto r = runCli({"report", in, "-o", (dir_ / "out").string(), "--gnuplot", ""});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string ring = test::readText((dir_ / "out" / "ring_epoch_time.dat").string());
  const std::string ps = test::readText((dir_ / "out" / "ps_accuracy.dat").string());
  EXPECT_NE(ring.find("] torch_ddp (PyTorch)\n"), std::string::npos) << ring;
  EXPECT_EQ(ring.find("torch_dp"), std::string::npos) << ring;
  EXPECT_EQ(ring.find("torch_other"), std::string::npos) << ring;
  EXPECT_NE(ps.find("] torch_dp (PyTorch) N=2\n"), std::string::npos) << ps;
  EXPECT_EQ(ps.find("torch_ddp"), std::string::npos) << ps;
  EXPECT_EQ(ps.find("torch_other"), std::string::npos) << ps;
}

}  // namespace
}  // namespace tpb
