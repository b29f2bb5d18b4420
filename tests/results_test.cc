// Tests for record/results and record/records: the typed records' JSON round trip (unknown
// fields kept), read errors naming file and field, bounded reads of untrusted files, atomic saves
// through unpredictable temp files, the --out lock, and the up-front writability check.
#include "record/results.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "harness/meta.h"
#include "tests/cli_util.h"
#include "tests/file_util.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::readText;
using test::usageErrorOf;
using test::writeText;

class ResultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "tpb_results_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::vector<std::string> listDir(const std::string& d) const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
    return names;
  }
  std::string dir_;
};

json sampleRun() {
  return {{"config",
           {{"strategy", "ring_all_reduce"}, {"n_gpus", 4}, {"batch_size", 64}, {"epochs", 2},
            {"device", "cpu"}, {"transport", "shm"}, {"dataset", "synthetic"},
            {"train_size", 6000}, {"hidden", 512}, {"lr", 0.05}, {"seed", 1},
            {"repeat_index", 0}}},
          {"status", "ok"},
          {"error", nullptr},
          {"epochs",
           json::array({{{"epoch", 0}, {"wall_s", 1.25}, {"compute_s", 0.75}, {"comm_s", 0.5},
                         {"samples_per_s", 4800.0}, {"train_loss", 0.9}, {"test_accuracy", 0.8}},
                        {{"epoch", 1}, {"wall_s", 1.0}, {"compute_s", 0.7}, {"comm_s", 0.3},
                         {"samples_per_s", 6000.0}, {"train_loss", 0.4},
                         {"test_accuracy", 0.9}}})},
          {"summary",
           {{"total_s", 2.25}, {"samples_per_s", 5333.3}, {"final_test_accuracy", 0.9},
            {"scaling_efficiency", nullptr}}}};
}

json sampleAllreduce() {
  return {{"algo", "ring"}, {"transport", "shm"}, {"device", "cpu"}, {"n_gpus", 4},
          {"bytes", 4096}, {"count", 1024},
          {"time_us", {{"median", 12.5}, {"min", 11.0}, {"max", 20.0}}},
          {"algbw_gbps", 0.328}, {"busbw_gbps", 0.492}, {"wrong", 0}, {"status", "ok"},
          {"error", nullptr}, {"iters", 20}, {"warmup", 5}};
}

RunRecord runOf(const json& j) { return RunRecord::fromJson(JsonIn(j, "sample")); }
CollectiveRecord collectiveOf(const json& j) { return CollectiveRecord::fromJson(JsonIn(j, "sample")); }

TEST_F(ResultsTest, CreateHasSchemaAndEmptyLists) {
  const ResultsFile rf = ResultsFile::create(file("r.json"), Meta{});
  EXPECT_EQ(rf.doc().at("schema"), "tpbench.results/2");
  EXPECT_EQ(std::string(kResultsSchema), "tpbench.results/2");
  EXPECT_TRUE(rf.doc().at("runs").is_array());
  EXPECT_TRUE(rf.doc().at("runs").empty());
  EXPECT_TRUE(rf.doc().at("allreduce").is_array());
  EXPECT_TRUE(rf.doc().at("allreduce").empty());
  EXPECT_EQ(rf.path(), file("r.json"));
  EXPECT_FALSE(fs::exists(file("r.json")));  // nothing written before save()
}

TEST_F(ResultsTest, MetaHasEveryDesignKey) {
  const json meta = collectMeta("tpbench sweep --n_gpus 1..4").toJson();
  for (const char* key : {"tpbench_version", "git_sha", "timestamp_utc", "host", "cpu_model",
                          "cpu_cores", "gpus", "driver", "cuda", "nccl", "libtorch", "gloo",
                          "build_type", "command"}) {
    EXPECT_TRUE(meta.contains(key)) << key;
  }
  EXPECT_EQ(meta.at("command"), "tpbench sweep --n_gpus 1..4");
  EXPECT_TRUE(std::regex_match(meta.at("timestamp_utc").get<std::string>(),
                               std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)")))
      << meta.at("timestamp_utc");
  EXPECT_TRUE(meta.at("gpus").is_array());
  EXPECT_TRUE(meta.at("cpu_cores").is_number_integer());
  EXPECT_GE(meta.at("cpu_cores").get<long long>(), 1);
  for (const char* key : {"tpbench_version", "git_sha", "host", "cpu_model", "libtorch", "gloo",
                          "build_type"}) {
    ASSERT_TRUE(meta.at(key).is_string()) << key;
    EXPECT_FALSE(meta.at(key).get<std::string>().empty()) << key;
  }
  EXPECT_TRUE(std::regex_match(meta.at("libtorch").get<std::string>(),
                               std::regex(R"(\d+\.\d+(\.\d+)?.*)")))
      << meta.at("libtorch");
  for (const char* key : {"driver", "cuda", "nccl"}) {
    EXPECT_TRUE(meta.at(key).is_null() || meta.at(key).is_string()) << key;
  }
}

// The machine's compute speed: one thread's matrix product, a plausible rate, and the thread
// counts put back as they were.
TEST_F(ResultsTest, MetaRecordsTheMachinesSgemmRateAndLeavesTheThreadsAsTheyWere) {
  const int threads = at::get_num_threads();
  const json meta = collectMeta("tpbench run").toJson();
  ASSERT_TRUE(meta.contains("sgemm_gflops")) << meta.dump();
  const double g = meta.at("sgemm_gflops").get<double>();
  // A core of the last 20 years does 0.5-200 GFLOP/s of float32 on one thread.
  EXPECT_GT(g, 0.5);
  EXPECT_LT(g, 200.0);
  EXPECT_EQ(at::get_num_threads(), threads);
  // Read back as written; a rate that is not a positive number is refused naming the field.
  EXPECT_DOUBLE_EQ(*Meta::fromJson(JsonIn(meta, "m.json")).sgemmGflops, g);
  for (const json& bad : {json(0), json(-3.5), json("fast"), json::array()}) {
    json m = meta;
    m["sgemm_gflops"] = bad;
    try {
      Meta::fromJson(JsonIn(m, "m.json"));
      ADD_FAILURE() << bad.dump() << " was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("sgemm_gflops"), std::string::npos) << e.what();
    }
  }
}

// What competes for the cores: how many this process may use, and the load when it started.
TEST_F(ResultsTest, MetaRecordsAvailableCoresAndLoadAverage) {
  const json meta = collectMeta("tpbench run").toJson();
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(meta.at("cpus_available"), CPU_COUNT(&set));
  EXPECT_LE(meta.at("cpus_available").get<long long>(), meta.at("cpu_cores").get<long long>());
  const json& load = meta.at("load_average");
  ASSERT_TRUE(load.is_array());
  ASSERT_EQ(load.size(), 3u);
  double expected[3];
  ASSERT_EQ(getloadavg(expected, 3), 3);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_GE(load[i].get<double>(), 0) << i;
    EXPECT_NEAR(load[i].get<double>(), expected[i], 1.0) << i;  // a second apart: the load may move
  }
  // Read back as written; a load average that is not three numbers is refused by name.
  const json back = Meta::fromJson(JsonIn(meta, "m.json", "meta")).toJson();
  EXPECT_EQ(back.at("load_average"), load);
  // How the ranks were placed, the MPI thread level, the shm transport's single copy and the
  // ring's chunk: read back, and refused by name where they are not one of their words, a bool
  // and a chunk in 1..1048576 KiB.
  for (const auto& [key, good, bad] : {std::tuple<std::string, json, json>{"bind", "core", "socket"},
                                       {"mpi_thread", "single", "multiple"},
                                       {"shm_single_copy", false, "no"},
                                       {"ring_chunk_kb", 64, 0},
                                       {"ring_chunk_kb", 1 << 20, (1 << 20) + 1}}) {
    json m = meta;
    m[key] = good;
    EXPECT_EQ(Meta::fromJson(JsonIn(m, "m.json", "meta")).toJson().at(key), good);
    m[key] = bad;
    try {
      Meta::fromJson(JsonIn(m, "m.json", "meta"));
      ADD_FAILURE() << key << " " << bad << " was read";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  for (const json& bad : {json::array({1.0, 2.0}), json::array({1.0, -1.0, 2.0}), json("high")}) {
    json m = meta;
    m["load_average"] = bad;
    try {
      Meta::fromJson(JsonIn(m, "m.json", "meta"));
      ADD_FAILURE() << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("load_average"), std::string::npos) << e.what();
    }
  }
}

TEST_F(ResultsTest, SaveLoadRoundTripPreservesEverything) {
  const std::string path = file("x.json");
  ResultsFile rf = ResultsFile::create(path, collectMeta("tpbench run"));
  rf.addRun(runOf(sampleRun()));
  rf.addCollective(collectiveOf(sampleAllreduce()));
  rf.save();

  const ResultsFile back = ResultsFile::load(path);
  EXPECT_EQ(back.path(), path);
  EXPECT_EQ(back.doc(), rf.doc());
  EXPECT_EQ(back.doc().at("schema"), kResultsSchema);
  ASSERT_EQ(back.doc().at("runs").size(), 1u);
  const json backDoc = back.doc();  // doc() builds the document: keep it while reading
  const json& run = backDoc.at("runs")[0];
  EXPECT_EQ(run.at("config").at("strategy"), "ring_all_reduce");
  EXPECT_EQ(run.at("config").at("hidden"), "512");  // a number in older files reads as its text
  EXPECT_EQ(run.at("config").at("max_steps"), -1);  // absent: no limit
  EXPECT_EQ(run.at("config").at("workload"), "mlp");  // absent: the MLP, all older files trained
  EXPECT_EQ(run.at("config").at("n_gpus"), 4);
  EXPECT_DOUBLE_EQ(run.at("config").at("lr").get<double>(), 0.05);
  EXPECT_EQ(run.at("epochs").size(), 2u);
  EXPECT_DOUBLE_EQ(run.at("epochs")[1].at("test_accuracy").get<double>(), 0.9);
  EXPECT_TRUE(run.at("summary").at("scaling_efficiency").is_null());
  ASSERT_EQ(back.doc().at("allreduce").size(), 1u);
  EXPECT_DOUBLE_EQ(back.doc().at("allreduce")[0].at("time_us").at("median").get<double>(), 12.5);
  EXPECT_EQ(back.doc().at("meta").at("command"), "tpbench run");
}

TEST_F(ResultsTest, AppendAfterLoadAndSaveAgain) {
  const std::string path = file("x.json");
  ResultsFile rf = ResultsFile::create(path, Meta{});
  rf.addRun(runOf(sampleRun()));
  rf.save();
  ResultsFile again = ResultsFile::load(path);
  again.addRun(runOf(sampleRun()));
  again.addCollective(collectiveOf(sampleAllreduce()));
  again.save();
  const ResultsFile third = ResultsFile::load(path);
  EXPECT_EQ(third.doc().at("runs").size(), 2u);
  EXPECT_EQ(third.doc().at("allreduce").size(), 1u);
}

TEST_F(ResultsTest, SaveLeavesNoTempFilesAndKeepsMode) {
  const std::string path = file("r.json");
  ResultsFile rf = ResultsFile::create(path, Meta{});
  for (int i = 0; i < 3; ++i) {
    rf.addCollective(collectiveOf(sampleAllreduce()));
    rf.save();
    EXPECT_EQ(listDir(dir_), std::vector<std::string>{"r.json"});
  }
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  rf.save();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(ResultsFile::load(path).doc().at("allreduce").size(), 3u);
}

TEST_F(ResultsTest, FailedSaveKeepsOldContentAndLeavesNoTemp) {
  // The target is a non-empty directory: the temp file is written, the rename fails, and the
  // temp file must be gone again.
  const std::string path = file("taken");
  fs::create_directory(path);
  writeText(file("taken/keep"), "keep me");
  ResultsFile rf = ResultsFile::create(path, Meta{});
  rf.addRun(runOf(sampleRun()));
  EXPECT_THROW(rf.save(), Error);
  EXPECT_EQ(readText(file("taken/keep")), "keep me");
  EXPECT_EQ(listDir(dir_), std::vector<std::string>{"taken"});
  // Saving into a directory that does not exist fails cleanly too.
  EXPECT_THROW(writeFileAtomic(file("missing/r.json"), "{}"), Error);
}

TEST_F(ResultsTest, SaveToleratesInvalidUtf8InRecordedErrors) {
  const std::string path = file("r.json");
  ResultsFile rf = ResultsFile::create(path, Meta{});
  RunRecord run = runOf(sampleRun());
  run.status = "failed";
  run.error = std::string("rank 1 died: \xff\xfe");
  rf.addRun(run);
  EXPECT_NO_THROW(rf.save());
  EXPECT_EQ(ResultsFile::load(path).doc().at("runs")[0].at("status"), "failed");
}

TEST_F(ResultsTest, WriteFileAtomicWritesExactBytes) {
  const std::string path = file("plain.txt");
  writeFileAtomic(path, "hello\n");
  EXPECT_EQ(readText(path), "hello\n");
  writeFileAtomic(path, "");
  EXPECT_EQ(readText(path), "");
  EXPECT_EQ(listDir(dir_), std::vector<std::string>{"plain.txt"});
}

TEST_F(ResultsTest, LoadMissingFileNamesThePath) {
  const std::string path = file("nope.json");
  const std::string msg = usageErrorOf([&] { ResultsFile::load(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;
}

TEST_F(ResultsTest, LoadNonJsonNamesThePath) {
  const std::string path = file("bad.json");
  writeText(path, "this is { not json");
  const std::string msg = usageErrorOf([&] { ResultsFile::load(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("not JSON"), std::string::npos) << msg;
}

// Schema 1 counted a step on every rank that trained; schema 2 counts each optimizer step of the
// model once. The expected counts are worked by hand from the strategies' semantics: 6000
// samples at batch 64 over N = 4 ranks are 1500 a rank, ceil(1500 / 64) = 24 steps, which
// schema 1 recorded as 4 x 24 = 96; param_server's 3 workers as 3 x 24 = 72; one-process
// data_parallel and the last stage of a pipeline counted each step once already.
TEST_F(ResultsTest, ASchema1FileReadsItsStepsInSchema2sMeaning) {
  const auto fileWith = [&](const char* schema, const char* strategy, long long steps) {
    json run = sampleRun();
    run["config"]["strategy"] = strategy;
    for (json& e : run["epochs"]) e["steps"] = steps;
    const std::string path = file(std::string(strategy) + "-" + std::to_string(steps) + ".json");
    writeText(path, json{{"schema", schema}, {"meta", json::object()}, {"runs", json::array({run})}}.dump());
    return ResultsFile::load(path);
  };
  const auto stepsOf = [](const ResultsFile& f) {
    std::vector<long long> out;
    for (const EpochRecord& e : f.runs().at(0).epochs) out.push_back(e.steps.value_or(-1));
    return out;
  };
  using V = std::vector<long long>;
  EXPECT_EQ(stepsOf(fileWith("tpbench.results/1", "ring_all_reduce", 96)), (V{24, 24}));
  EXPECT_EQ(stepsOf(fileWith("tpbench.results/1", "ddp", 96)), (V{24, 24}));
  EXPECT_EQ(stepsOf(fileWith("tpbench.results/1", "ring_all_reduce_builtin", 96)), (V{24, 24}));
  EXPECT_EQ(stepsOf(fileWith("tpbench.results/1", "torch_ddp", 96)), (V{24, 24}));
  EXPECT_EQ(stepsOf(fileWith("tpbench.results/1", "param_server", 72)), (V{24, 24}));
  EXPECT_EQ(stepsOf(fileWith("tpbench.results/1", "data_parallel", 24)), (V{24, 24}));
  EXPECT_EQ(stepsOf(fileWith("tpbench.results/1", "pipeline", 94)), (V{94, 94}));
  // A count that does not divide (a rank cut short) rounds up, to the ranks that went furthest.
  EXPECT_EQ(stepsOf(fileWith("tpbench.results/1", "ddp", 95)), (V{24, 24}));
  // Schema 2 is read as written, and written back as schema 2 in its own meaning.
  const ResultsFile v2 = fileWith("tpbench.results/2", "ddp", 96);
  EXPECT_EQ(stepsOf(v2), (V{96, 96}));
  const ResultsFile v1 = fileWith("tpbench.results/1", "ddp", 96);
  EXPECT_EQ(v1.doc().at("schema"), "tpbench.results/2");
  EXPECT_EQ(v1.doc().at("runs").at(0).at("epochs").at(0).at("steps"), 24);
}

TEST_F(ResultsTest, LoadWrongSchemaSaysWhichSchema) {
  const std::string path = file("other.json");
  writeText(path, R"({"schema": "tpbench.results/3", "meta": {}, "runs": [], "allreduce": []})");
  const std::string msg = usageErrorOf([&] { ResultsFile::load(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("'tpbench.results/3'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tpbench.results/2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tpbench.results/1"), std::string::npos) << msg;
}

// Found by tests/fuzz: the parser's "last read: '...'" and a wrong schema echoed the file's bytes
// raw, so a refusal could print a second line or a terminal escape sequence.
TEST_F(ResultsTest, ARefusalQuotingTheFileIsOnePrintableLine) {
  const std::string path = file("controls.json");
  for (const std::string& text : {std::string("{\"schema\": \"x\\n\\u001b[31mred\"}"), std::string("{\x1b[2J\n\r}"),
                                  std::string("[1, \x01\x7f]")}) {
    writeText(path, text);
    const std::string msg = usageErrorOf([&] { ResultsFile::load(path); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const unsigned char c : msg) EXPECT_TRUE(c >= 0x20 && c != 0x7f) << "control 0x" << std::hex << int(c) << " in " << msg;
  }
}

TEST_F(ResultsTest, LoadWithoutSchemaOrNotAnObject) {
  const std::string noSchema = file("noschema.json");
  writeText(noSchema, R"({"runs": []})");
  std::string msg = usageErrorOf([&] { ResultsFile::load(noSchema); });
  EXPECT_NE(msg.find(noSchema), std::string::npos) << msg;
  EXPECT_NE(msg.find("schema"), std::string::npos) << msg;

  const std::string array = file("array.json");
  writeText(array, "[1, 2, 3]");
  msg = usageErrorOf([&] { ResultsFile::load(array); });
  EXPECT_NE(msg.find(array), std::string::npos) << msg;
  EXPECT_NE(msg.find("not an object"), std::string::npos) << msg;

  const std::string badRuns = file("badruns.json");
  writeText(badRuns, R"({"schema": "tpbench.results/1", "runs": {}})");
  msg = usageErrorOf([&] { ResultsFile::load(badRuns); });
  EXPECT_NE(msg.find(badRuns + ": runs: expected an array, got an object"), std::string::npos) << msg;

  const std::string dirPath = file("adir");
  fs::create_directory(dirPath);
  msg = usageErrorOf([&] { ResultsFile::load(dirPath); });
  EXPECT_NE(msg.find(dirPath), std::string::npos) << msg;
}

TEST_F(ResultsTest, LoadFillsInMissingSections) {
  const std::string path = file("min.json");
  writeText(path, R"({"schema": "tpbench.results/1", "runs": null})");
  const ResultsFile rf = ResultsFile::load(path);
  EXPECT_TRUE(rf.doc().at("meta").is_object());
  EXPECT_TRUE(rf.doc().at("runs").is_array());
  EXPECT_TRUE(rf.doc().at("allreduce").is_array());
}

TEST_F(ResultsTest, CheckWritableNewFileLeavesNothingBehind) {
  EXPECT_NO_THROW(checkWritable("--out", file("new.json")));
  EXPECT_TRUE(listDir(dir_).empty());
}

TEST_F(ResultsTest, CheckWritableCreatesMissingParents) {
  const std::string path = file("a/b/c/out.json");
  EXPECT_NO_THROW(checkWritable("--out", path));
  EXPECT_TRUE(fs::is_directory(file("a/b/c")));
  EXPECT_TRUE(listDir(file("a/b/c")).empty());
}

TEST_F(ResultsTest, CheckWritableExistingFileUntouched) {
  const std::string path = file("old.json");
  writeText(path, "keep me");
  EXPECT_NO_THROW(checkWritable("--out", path));
  EXPECT_EQ(readText(path), "keep me");
  EXPECT_EQ(listDir(dir_), std::vector<std::string>{"old.json"});
}

TEST_F(ResultsTest, CheckWritableRejectsUnwritablePaths) {
  std::string msg = usageErrorOf([] { checkWritable("--out", "/etc/passwd/x"); });
  EXPECT_NE(msg.find("--out: cannot write '/etc/passwd/x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a directory"), std::string::npos) << msg;

  msg = usageErrorOf([] { checkWritable("--out", "/etc/passwd/sub/x.json"); });
  EXPECT_NE(msg.find("--out: cannot write '/etc/passwd/sub/x.json'"), std::string::npos) << msg;

  msg = usageErrorOf([] { checkWritable("--out", "/proc/tpb_results_test.json"); });
  EXPECT_NE(msg.find("--out: cannot write '/proc/tpb_results_test.json'"), std::string::npos)
      << msg;
  EXPECT_FALSE(fs::exists("/proc/tpb_results_test.json"));

  msg = usageErrorOf([&] { checkWritable("--report", dir_); });
  EXPECT_NE(msg.find("--report: cannot write"), std::string::npos) << msg;
  EXPECT_NE(msg.find("directory"), std::string::npos) << msg;

  msg = usageErrorOf([] { checkWritable("--out", "/dev/null"); });
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;

  msg = usageErrorOf([] { checkWritable("--out", ""); });
  EXPECT_NE(msg.find("--out: cannot write ''"), std::string::npos) << msg;
}

TEST_F(ResultsTest, CheckWritableRejectsReadOnlyDirectory) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores permission bits";
  const std::string ro = file("ro");
  fs::create_directory(ro);
  ASSERT_EQ(::chmod(ro.c_str(), 0500), 0);
  const std::string msg = usageErrorOf([&] { checkWritable("--out", ro + "/x.json"); });
  EXPECT_NE(msg.find("Permission denied"), std::string::npos) << msg;
  ::chmod(ro.c_str(), 0700);
}

// A document in exactly the form save() writes, with a member no reader knows at every level:
// load + save must give it back unchanged.
json everyRecordWithUnknownFields() {
  json run = {{"config", {{"strategy", "ddp"}, {"n_gpus", 2}, {"batch_size", 64}, {"epochs", 1},
                          {"device", "cpu"}, {"transport", "shm"}, {"dataset", "synthetic"},
                          {"train_size", 8192}, {"test_size", 0}, {"hidden", "512,512"}, {"lr", 0.01},
                          {"momentum", 0.9}, {"bucket_mb", 25.0}, {"seed", 7}, {"repeat_index", 1},
                          {"max_steps", 100}, {"workload", "mlp"}, {"zero_stage", 4}}},
              {"status", "ok"}, {"error", nullptr},
              {"epochs", json::array({{{"epoch", 1}, {"wall_s", 1.5}, {"compute_s", 1.0}, {"comm_s", 0.5},
                                       {"samples_per_s", 5461.0}, {"train_loss", 0.7},
                                       {"test_accuracy", nullptr}, {"eval_s", 0.1}, {"steps", 64},
                                       {"samples", 8192}, {"gpu_mem_mb", 100}}})},
              {"summary", {{"total_s", 1.5}, {"samples_per_s", 5461.0}, {"final_test_accuracy", nullptr},
                           {"final_train_loss", 0.7}, {"scaling_efficiency", 0.5}, {"p90_s", 1.4}}},
              {"wall_s", 3.0}, {"origin", "from scratch"}};
  json failed = {{"op", "broadcast"}, {"algo", "ring"}, {"transport", "shm"}, {"device", "cpu"},
                 {"n_gpus", 3}, {"bytes", 4096}, {"count", 1024}, {"status", "failed"},
                 {"error", "rank 2 timed out"}, {"iters", 20}, {"warmup", 5}, {"root", 2}, {"in_place", false},
                 {"traffic", {{"bytes_sent", {0, 4096, 4096}}, {"bytes_recv", {8192, 0, 0}},
                              {"msgs_sent", {0, 1, 1}}, {"msgs_recv", {2, 0, 0}}}},
                 {"energy_j", {{"total", 1}}}};
  json ok = sampleAllreduce();
  ok.erase("error");
  ok["op"] = "allreduce";
  ok["timer"] = "steady_clock";
  ok["time_us"]["p999"] = 19.0;  // a member this reader does not know
  ok["wrong"] = nullptr;
  json meta = collectMeta("tpbench test").toJson();
  meta["launcher"] = "torchrun";
  return {{"schema", kResultsSchema}, {"meta", meta}, {"runs", json::array({run})},
          {"allreduce", json::array({ok, failed})}, {"reference", {{"memcpy", json::array()}}},
          {"future_section", {1, 2, 3}}};
}

TEST_F(ResultsTest, EveryRecordTypeRoundTripsWithUnknownFields) {
  const json original = everyRecordWithUnknownFields();
  writeText(file("in.json"), original.dump());
  ResultsFile rf = ResultsFile::load(file("in.json"));
  EXPECT_EQ(rf.doc(), original);
  ASSERT_EQ(rf.runs().size(), 1u);
  EXPECT_EQ(rf.runs()[0].config.maxSteps, 100);
  EXPECT_EQ(rf.runs()[0].config.extra.at("zero_stage"), 4);
  EXPECT_TRUE(std::isnan(rf.runs()[0].epochs[0].testAccuracy));
  ASSERT_EQ(rf.collectives().size(), 2u);
  EXPECT_TRUE(rf.collectives()[0].measured);
  EXPECT_FALSE(rf.collectives()[1].measured);
  EXPECT_EQ(rf.collectives()[1].op, "broadcast");
  ASSERT_TRUE(rf.collectives()[1].traffic);
  EXPECT_EQ(rf.collectives()[1].traffic->bytesSent, (std::vector<std::uint64_t>{0, 4096, 4096}));
  EXPECT_EQ(rf.collectives()[1].root, 2);
  EXPECT_FALSE(rf.collectives()[1].isInPlace());
  EXPECT_TRUE(rf.collectives()[0].isInPlace());  // absent: in place, and written back absent
  // Written back: what was added survives, what is known is unchanged, measured fields of the
  // failed point stay absent.
  ResultsFile moved = ResultsFile::create(file("out.json"), rf.meta());
  for (const auto& r : rf.runs()) moved.addRun(r);
  for (const auto& c : rf.collectives()) moved.addCollective(c);
  moved.extra() = rf.extra();
  moved.save();
  const json back = json::parse(readText(file("out.json")));
  EXPECT_EQ(back, original);
  EXPECT_FALSE(back.at("allreduce")[1].contains("time_us"));
  // Non-finite numbers are written as null.
  rf.runs()[0].summary.totalS = std::numeric_limits<double>::infinity();
  rf.runs()[0].epochs[0].wallS = std::nan("");
  rf.save();
  const json again = json::parse(readText(file("in.json")));
  EXPECT_TRUE(again.at("runs")[0].at("summary").at("total_s").is_null());
  EXPECT_TRUE(again.at("runs")[0].at("epochs")[0].at("wall_s").is_null());
}

// The registry's fields beside a record are read into `entry` (not `extra`), written back as
// they were, and checked like every other field.
TEST_F(ResultsTest, RegistryFieldsRoundTripAndAreChecked) {
  json run = sampleRun();
  run["origin"] = "from scratch";
  run["order"] = 2;
  run["color"] = "#2ca02c";
  run["data_ranks"] = 3;
  const RunRecord r = runOf(run);
  EXPECT_EQ(r.entry.origin, std::optional<std::string>("from scratch"));
  EXPECT_EQ(r.entry.order, std::optional<int>(2));
  EXPECT_EQ(r.entry.color, std::optional<std::string>("#2ca02c"));
  EXPECT_EQ(r.entry.dataRanks, std::optional<int>(3));
  EXPECT_FALSE(r.extra.contains("origin"));
  EXPECT_EQ(r.toJson().at("data_ranks"), 3);
  EXPECT_EQ(r.toJson().at("color"), "#2ca02c");
  // Absent in older files: nothing is invented on the way back.
  EXPECT_FALSE(runOf(sampleRun()).toJson().contains("origin"));
  json c = sampleAllreduce();
  c["origin"] = "library";
  EXPECT_EQ(collectiveOf(c).entry.origin, std::optional<std::string>("library"));
  EXPECT_EQ(collectiveOf(c).toJson().at("origin"), "library");
  for (const json& bad : {json("red"), json("#12345g"), json(7)}) {
    json b = sampleRun();
    b["color"] = bad;
    EXPECT_THROW(runOf(b), UsageError) << bad.dump();
  }
  json farOrder = sampleRun();
  farOrder["data_ranks"] = 1e20;
  EXPECT_THROW(runOf(farOrder), UsageError);
}

TEST_F(ResultsTest, ConfigsCompareByValue) {
  json a = everyRecordWithUnknownFields().at("runs")[0].at("config");
  json b = a;
  b["n_gpus"] = 2.0;
  b["lr"] = 0.010;
  b["zero_stage"] = 4.0;  // an unknown field compares by value too
  EXPECT_TRUE(RunConfig::fromJson(JsonIn(a, "a")) == RunConfig::fromJson(JsonIn(b, "b")));
  b["max_steps"] = -1;
  EXPECT_FALSE(RunConfig::fromJson(JsonIn(a, "a")) == RunConfig::fromJson(JsonIn(b, "b")));
  a.erase("max_steps");  // older files: no limit
  EXPECT_TRUE(RunConfig::fromJson(JsonIn(a, "a")) == RunConfig::fromJson(JsonIn(b, "b")));
  a.erase("workload");  // older files: the mlp
  EXPECT_TRUE(RunConfig::fromJson(JsonIn(a, "a")) == RunConfig::fromJson(JsonIn(b, "b")));
  b["workload"] = "gpt2-small";
  EXPECT_FALSE(RunConfig::fromJson(JsonIn(a, "a")) == RunConfig::fromJson(JsonIn(b, "b")));
}

TEST_F(ResultsTest, EveryReadErrorNamesFileAndField) {
  const std::string path = file("x.json");
  struct Case {
    std::function<void(json&)> spoil;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](json& d) { d["runs"][0]["config"]["n_gpus"] = 1e20; },
       path + ": runs[0].config.n_gpus: expected an integer in 1..65536, got 1e+20"},
      {[](json& d) { d["runs"][0]["config"]["n_gpus"] = 0; },
       path + ": runs[0].config.n_gpus: expected an integer in 1..65536, got 0"},
      {[](json& d) { d["runs"][0]["config"]["batch_size"] = 2.5; },
       path + ": runs[0].config.batch_size: expected an integer in 1..2147483647, got 2.5"},
      {[](json& d) { d["runs"][0]["config"]["strategy"] = 5; },
       path + ": runs[0].config.strategy: expected a string, got 5"},
      {[](json& d) { d["runs"][0]["config"].erase("epochs"); },
       path + ": runs[0].config.epochs: missing (a required field)"},
      {[](json& d) { d["runs"][0]["status"] = "great"; },
       path + ": runs[0].status: expected \"ok\", \"failed\" or \"skipped\", got \"great\""},
      {[](json& d) { d["runs"][0]["epochs"][0]["wall_s"] = "fast"; },
       path + ": runs[0].epochs[0].wall_s: expected a finite number >= 0 or null, got \"fast\""},
      {[](json& d) { d["runs"][0]["summary"] = json::array(); },
       path + ": runs[0].summary: expected an object, got an array"},
      {[](json& d) { d["allreduce"][1]["bytes"] = -4; },
       path + ": allreduce[1].bytes: expected an integer in 0..9007199254740992, got -4"},
      {[](json& d) { d["allreduce"][0]["n_gpus"] = "four\nlines"; },
       path + ": allreduce[0].n_gpus: expected an integer in 1..65536, got \"four\\nlines\""},
      {[](json& d) { d["allreduce"][0].erase("iters"); },
       path + ": allreduce[0].iters: missing (a required field)"},
      {[](json& d) { d["allreduce"][1]["traffic"]["bytes_sent"][0] = -1; },
       path + ": allreduce[1].traffic.bytes_sent[0]: expected an integer in 0..9007199254740992, got -1"},
      {[](json& d) { d["allreduce"][1]["traffic"]["msgs_recv"].erase(0); },
       path + ": allreduce[1].traffic: expected four arrays of one length (one entry per rank)"},
      {[](json& d) { d["allreduce"][1]["in_place"] = "yes"; },
       path + ": allreduce[1].in_place: expected"},
      {[](json& d) { d["meta"]["gpus"] = json::array({1}); },
       path + ": meta.gpus[0]: expected a string, got 1"},
  };
  for (const auto& c : cases) {
    json d = everyRecordWithUnknownFields();
    c.spoil(d);
    writeText(path, d.dump());
    const std::string msg = usageErrorOf([&] { ResultsFile::load(path); });
    EXPECT_NE(msg.find(c.expected), std::string::npos) << msg << "\n  expected: " << c.expected;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
  }
}

// Every range results/README.md gives a measured number is enforced on read, naming the field:
// times, rates, losses and bandwidths are finite and >= 0, accuracies and fractions in [0, 1].
TEST_F(ResultsTest, NumbersOutsideTheirDocumentedRangeAreRefused) {
  const std::string path = file("range.json");
  const std::string nonNegative = ": expected a finite number >= 0 or null, got ";
  struct Case {
    std::function<void(json&)> spoil;
    std::string expected;
  };
  const auto epoch = [](json& d) -> json& { return d["runs"][0]["epochs"][0]; };
  const std::vector<Case> cases = {
      {[&](json& d) { epoch(d)["wall_s"] = -1; }, "runs[0].epochs[0].wall_s" + nonNegative + "-1"},
      {[&](json& d) { epoch(d)["compute_s"] = -0.5; }, "runs[0].epochs[0].compute_s" + nonNegative + "-0.5"},
      {[&](json& d) { epoch(d)["comm_s"] = -2; }, "runs[0].epochs[0].comm_s" + nonNegative + "-2"},
      {[&](json& d) { epoch(d)["samples_per_s"] = -5; }, "runs[0].epochs[0].samples_per_s" + nonNegative + "-5"},
      {[&](json& d) { epoch(d)["train_loss"] = -0.1; }, "runs[0].epochs[0].train_loss" + nonNegative + "-0.1"},
      {[&](json& d) { epoch(d)["eval_s"] = -3; }, "runs[0].epochs[0].eval_s: expected a finite number >= 0, got -3"},
      {[&](json& d) { epoch(d)["test_accuracy"] = 7.5; },
       "runs[0].epochs[0].test_accuracy: expected a number in [0, 1] or null, got 7.5"},
      {[&](json& d) { epoch(d)["bubble_fraction"] = 1.5; },
       "runs[0].epochs[0].bubble_fraction: expected a number in [0, 1] or null, got 1.5"},
      {[](json& d) { d["runs"][0]["summary"]["total_s"] = -1; }, "runs[0].summary.total_s: expected a finite number >= 0"},
      {[](json& d) { d["runs"][0]["summary"]["final_test_accuracy"] = -0.2; },
       "runs[0].summary.final_test_accuracy: expected a number in [0, 1], got -0.2"},
      {[](json& d) { d["runs"][0]["summary"]["scaling_efficiency"] = -1; },
       "runs[0].summary.scaling_efficiency: expected a finite number >= 0, got -1"},
      {[](json& d) { d["runs"][0]["wall_s"] = -9; }, "runs[0].wall_s: expected a finite number >= 0, got -9"},
      {[](json& d) { d["allreduce"][0]["time_us"]["median"] = -1; },
       "allreduce[0].time_us.median: expected a finite number >= 0, got -1"},
      {[](json& d) { d["allreduce"][0]["busbw_gbps"] = -7; }, "allreduce[0].busbw_gbps: expected a finite number >= 0, got -7"},
      {[](json& d) { d["allreduce"][0]["time_us"]["min"] = 1e9; },
       "allreduce[0].time_us.min: expected at most time_us.median, got 1000000000"},
      {[](json& d) { d["allreduce"][0]["time_us"]["max"] = 0; },
       "allreduce[0].time_us.max: expected at least time_us.median, got 0"},
      {[](json& d) { d["allreduce"][0]["algbw_gbps"] = -7; }, "allreduce[0].algbw_gbps: expected a finite number >= 0, got -7"},
  };
  for (const auto& c : cases) {
    json d = everyRecordWithUnknownFields();
    c.spoil(d);
    writeText(path, d.dump());
    const std::string msg = usageErrorOf([&] { ResultsFile::load(path); });
    EXPECT_NE(msg.find(path + ": " + c.expected), std::string::npos) << msg << "\n  expected: " << c.expected;
  }
  // A number too large for a double (1e999) is not a measurement either.
  writeText(path, everyRecordWithUnknownFields().dump());
  std::string text = test::readText(path);
  const std::string busbw = "\"busbw_gbps\":";
  text.insert(text.find(busbw) + busbw.size(), "1e999,\"x\":");
  writeText(path, text);
  const std::string msg = usageErrorOf([&] { ResultsFile::load(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
}

// time_us' spread of the iterations: read and written back as it is, all five members or none,
// each in order with the median, min and max.
TEST_F(ResultsTest, TheIterationSpreadRoundTripsAndIsChecked) {
  const std::string path = file("spread.json");
  const auto docWith = [](const std::function<void(json&)>& spoil) {
    json p = sampleAllreduce();  // median 12.5, min 11, max 20, iters 20
    p["time_us"].update({{"p90", 15.0}, {"p99", 20.0}, {"cv", 0.2}, {"first", 19.0}, {"spikes", 2}});
    spoil(p["time_us"]);
    return json{{"schema", "tpbench.results/1"}, {"meta", {{"command", "t"}}}, {"runs", json::array()},
                {"allreduce", json::array({p})}};
  };
  writeText(path, docWith([](json&) {}).dump());
  ResultsFile rf = ResultsFile::load(path);
  ASSERT_TRUE(rf.collectives().at(0).spread);
  EXPECT_EQ(rf.collectives()[0].spread->p90Us, 15.0);
  EXPECT_EQ(rf.collectives()[0].spread->spikes, 2);
  EXPECT_EQ(rf.collectives()[0].toJson().at("time_us"), docWith([](json&) {})["allreduce"][0]["time_us"]);
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& t) { t.erase("cv"); }, "allreduce[0].time_us: expected p90, p99, cv, first and spikes together (cv is absent)"},
      {[](json& t) { t["p90"] = 12.0; }, "allreduce[0].time_us.p90: expected a number in [12.5, 20], got 12"},
      {[](json& t) { t["p99"] = 14.0; }, "allreduce[0].time_us.p99: expected a number in [15, 20], got 14"},
      {[](json& t) { t["first"] = 25.0; }, "allreduce[0].time_us.first: expected a number in [11, 20], got 25"},
      {[](json& t) { t["cv"] = -0.1; }, "allreduce[0].time_us.cv: expected a finite number >= 0, got -0.1"},
      {[](json& t) { t["spikes"] = 21; }, "allreduce[0].time_us.spikes: expected at most iters, got 21"},
      {[](json& t) { t.update({{"rank_mean", 14.0}, {"rank_mean_max", 13.0}}); },
       "allreduce[0].time_us.rank_mean: expected at most time_us.rank_mean_max, got 14"},
      {[](json& t) { t["median"] = nullptr; }, "allreduce[0].time_us: expected median, min and max as numbers"},
  };
  for (const auto& [spoil, expected] : cases) {
    writeText(path, docWith(spoil).dump());
    const std::string msg = usageErrorOf([&] { ResultsFile::load(path); });
    EXPECT_NE(msg.find(path + ": " + expected), std::string::npos) << msg << "\n  expected: " << expected;
  }
}

// A collective point's per-rank times: read and written back as they are, one entry per rank,
// the slowest counts within the iterations.
TEST_F(ResultsTest, PerRankCollectiveTimesRoundTripAndAreChecked) {
  const auto with = [](const std::function<void(json&)>& spoil) {
    json p = sampleAllreduce();  // n_gpus 4, iters 20
    p["ranks"] = {{"median_us", {12.0, 12.5, 30.0, 11.0}}, {"slowest_in", {2, 1, 16, 1}}, {"cpu", {0, 1, 0, -1}}};
    spoil(p["ranks"]);
    return p;
  };
  const CollectiveRecord c = collectiveOf(with([](json&) {}));
  ASSERT_TRUE(c.ranks);
  EXPECT_EQ(c.ranks->medianUs, (std::vector<double>{12.0, 12.5, 30.0, 11.0}));
  EXPECT_EQ(c.ranks->slowestIn, (std::vector<long long>{2, 1, 16, 1}));
  EXPECT_EQ(c.ranks->cpu, (std::vector<long long>{0, 1, 0, -1}));
  EXPECT_EQ(c.toJson().at("ranks"), with([](json&) {})["ranks"]);
  // Without cores (older files): absent, and absent when written back.
  EXPECT_FALSE(collectiveOf(with([](json& r) { r.erase("cpu"); })).toJson().at("ranks").contains("cpu"));
  EXPECT_FALSE(collectiveOf(sampleAllreduce()).toJson().contains("ranks")) << "absent stays absent";
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& r) { r["median_us"] = {1.0, 2.0}; }, "ranks.median_us: expected one entry per rank (n_gpus 4)"},
      {[](json& r) { r["slowest_in"] = {1, 1, 1}; }, "ranks.slowest_in: expected one entry per rank (n_gpus 4)"},
      {[](json& r) { r["slowest_in"] = {0, 0, 21, 0}; }, "ranks.slowest_in[2]: expected an integer in 0..20"},
      {[](json& r) { r["slowest_in"] = {10, 10, 1, 0}; }, "ranks.slowest_in: expected counts summing to at most iters (20)"},
      {[](json& r) { r["median_us"][1] = -3.0; }, "ranks.median_us[1]"},
      {[](json& r) { r.erase("slowest_in"); }, "ranks.slowest_in"},
      {[](json& r) { r["cpu"] = {0, 1}; }, "ranks.cpu: expected one entry per rank (n_gpus 4)"},
      {[](json& r) { r["cpu"][3] = -2; }, "ranks.cpu[3]: expected an integer in -1.."},
      {[](json& r) { r["cpu"][0] = "0"; }, "ranks.cpu[0]"},
  };
  for (const auto& [spoil, expected] : cases) {
    const std::string msg = usageErrorOf([&, &spoil = spoil] { collectiveOf(with(spoil)); });
    EXPECT_NE(msg.find(expected), std::string::npos) << msg << "\n  expected: " << expected;
  }
}

TEST_F(ResultsTest, DeepNestingAndOversizeFilesAreRefusedBeforeParsing) {
  const std::string deep = file("deep.json");
  writeText(deep, "{\"schema\": \"tpbench.results/1\", \"x\": " + std::string(100000, '[') + "\n");
  std::string msg = usageErrorOf([&] { ResultsFile::load(deep); });
  EXPECT_NE(msg.find(deep + "' nests deeper than 64 levels"), std::string::npos) << msg;

  // Brackets inside strings do not count; 64 levels are fine.
  const std::string inString = file("instring.json");
  json d = everyRecordWithUnknownFields();
  d["meta"]["command"] = std::string(1000, '[') + "\"{";
  json nested = 1;
  for (int i = 0; i < 60; ++i) nested = json::array({nested});
  d["meta"]["nested"] = nested;
  writeText(inString, d.dump());
  EXPECT_EQ(ResultsFile::load(inString).doc(), d);

  const std::string big = file("big.json");
  writeText(big, "{}");
  ASSERT_EQ(::truncate(big.c_str(), static_cast<off_t>(kMaxResultsBytes) + 1), 0);  // sparse
  msg = usageErrorOf([&] { ResultsFile::load(big); });
  EXPECT_NE(msg.find(big + "' is larger than 512 MiB"), std::string::npos) << msg;

  // Through the CLI: exit 2 and one line, never a crash.
  for (const std::string& bad : {deep, big}) {
    const auto r = test::runCli({"compare", bad, inString});
    EXPECT_EQ(r.exitCode, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  }
  const auto fifo = test::runCli({"compare", "/dev/stdin", inString});
  EXPECT_EQ(fifo.exitCode, 2) << fifo.err;
}

TEST_F(ResultsTest, SymlinksAtOldTempNamesAreNotFollowed) {
  const std::string path = file("r.json");
  const std::string victim = file("victim");
  writeText(victim, "precious");
  // Every name the old code could have used, for this process and its neighbours.
  std::vector<std::string> links = {path + ".tmp", path + ".tmp." + std::to_string(::getpid())};
  for (int d = 1; d < 50; ++d) links.push_back(path + ".tmp." + std::to_string(::getpid() + d));
  for (const auto& l : links) fs::create_symlink(victim, l);
  ResultsFile rf = ResultsFile::create(path, Meta{});
  rf.addRun(runOf(sampleRun()));
  rf.save();
  checkWritable("--out", path);
  writeFileAtomic(path, "{}");
  EXPECT_EQ(readText(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(readText(path), "{}");
  EXPECT_EQ(listDir(dir_).size(), links.size() + 2) << "a temp file was left behind";
  // The lock's sidecar is not followed either.
  fs::create_symlink(victim, OutLock::lockPath(path));
  const std::string msg = usageErrorOf([&] { OutLock lock("--out", path); });
  EXPECT_NE(msg.find("--out: cannot lock"), std::string::npos) << msg;
  EXPECT_EQ(readText(victim), "precious");
}

TEST_F(ResultsTest, TempFilesAreCreatedPrivatelyAndGetTheUsualMode) {
  const std::string path = file("fresh.json");
  const mode_t old = ::umask(022);
  writeFileAtomic(path, "x");
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(ResultsTest, TheLockRefusesASecondWriter) {
  const std::string path = file("out.json");
  {
    OutLock first("--out", path);
    EXPECT_TRUE(fs::exists(OutLock::lockPath(path)));
    const std::string msg = usageErrorOf([&] { OutLock second("--out", path); });
    EXPECT_NE(msg.find("--out: " + path + " is being written by another tpbench (pid " +
                       std::to_string(::getpid()) + ")"),
              std::string::npos)
        << msg;
    // Another process is refused up front: exit 2, one line, nothing launched or written.
    const auto r = test::runCli({"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K", "--out", path});
    test::expectRefusedUpFront(r, "--out: " + path + " is being written by another tpbench (pid " +
                                      std::to_string(::getpid()) + ")");
    EXPECT_FALSE(fs::exists(path));
  }
  EXPECT_FALSE(fs::exists(OutLock::lockPath(path))) << "the lock file is removed on release";
  OutLock again("--out", path);  // free again
}

}  // namespace
}  // namespace tpb
