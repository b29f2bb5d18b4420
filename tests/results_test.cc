// Tests for harness/results: the results file round trip, schema checks on load, atomic saves,
// and the up-front writability check.
#include "harness/results.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
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

TEST_F(ResultsTest, CreateHasSchemaAndEmptyLists) {
  const ResultsFile rf = ResultsFile::create(file("r.json"), json::object());
  EXPECT_EQ(rf.doc().at("schema"), "tpbench.results/1");
  EXPECT_EQ(std::string(kResultsSchema), "tpbench.results/1");
  EXPECT_TRUE(rf.doc().at("runs").is_array());
  EXPECT_TRUE(rf.doc().at("runs").empty());
  EXPECT_TRUE(rf.doc().at("allreduce").is_array());
  EXPECT_TRUE(rf.doc().at("allreduce").empty());
  EXPECT_EQ(rf.path(), file("r.json"));
  EXPECT_FALSE(fs::exists(file("r.json")));  // nothing written before save()
}

TEST_F(ResultsTest, MetaHasEveryDesignKey) {
  const json meta = collectMeta("tpbench sweep --n_gpus 1..4");
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
  EXPECT_TRUE(meta.at("cpu_cores").is_number_unsigned());
  EXPECT_GE(meta.at("cpu_cores").get<unsigned>(), 1u);
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

TEST_F(ResultsTest, SaveLoadRoundTripPreservesEverything) {
  const std::string path = file("x.json");
  ResultsFile rf = ResultsFile::create(path, collectMeta("tpbench run"));
  rf.addRun(sampleRun());
  rf.addAllreduce(sampleAllreduce());
  rf.save();

  const ResultsFile back = ResultsFile::load(path);
  EXPECT_EQ(back.path(), path);
  EXPECT_EQ(back.doc(), rf.doc());
  EXPECT_EQ(back.doc().at("schema"), kResultsSchema);
  ASSERT_EQ(back.doc().at("runs").size(), 1u);
  const json& run = back.doc().at("runs")[0];
  EXPECT_EQ(run.at("config").at("strategy"), "ring_all_reduce");
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
  ResultsFile rf = ResultsFile::create(path, json::object());
  rf.addRun(sampleRun());
  rf.save();
  ResultsFile again = ResultsFile::load(path);
  again.addRun(sampleRun());
  again.addAllreduce(sampleAllreduce());
  again.save();
  const ResultsFile third = ResultsFile::load(path);
  EXPECT_EQ(third.doc().at("runs").size(), 2u);
  EXPECT_EQ(third.doc().at("allreduce").size(), 1u);
}

TEST_F(ResultsTest, SaveLeavesNoTempFilesAndKeepsMode) {
  const std::string path = file("r.json");
  ResultsFile rf = ResultsFile::create(path, json::object());
  for (int i = 0; i < 3; ++i) {
    rf.addAllreduce(sampleAllreduce());
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
  const std::string path = file("r.json");
  ResultsFile rf = ResultsFile::create(path, json::object());
  rf.save();
  const std::string before = readText(path);
  // Occupy the temp name with a directory so that creating the temp file fails.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  ASSERT_TRUE(fs::create_directory(tmp));
  rf.addRun(sampleRun());
  EXPECT_THROW(rf.save(), Error);
  EXPECT_EQ(readText(path), before);
  fs::remove(tmp);
  EXPECT_EQ(listDir(dir_), std::vector<std::string>{"r.json"});
  // Saving into a directory that does not exist fails cleanly too.
  EXPECT_THROW(writeFileAtomic(file("missing/r.json"), "{}"), Error);
}

TEST_F(ResultsTest, SaveToleratesInvalidUtf8InRecordedErrors) {
  const std::string path = file("r.json");
  ResultsFile rf = ResultsFile::create(path, json::object());
  json run = sampleRun();
  run["status"] = "failed";
  run["error"] = std::string("rank 1 died: \xff\xfe");
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

TEST_F(ResultsTest, LoadWrongSchemaSaysWhichSchema) {
  const std::string path = file("other.json");
  writeText(path, R"({"schema": "tpbench.results/2", "meta": {}, "runs": [], "allreduce": []})");
  const std::string msg = usageErrorOf([&] { ResultsFile::load(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("'tpbench.results/2'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tpbench.results/1"), std::string::npos) << msg;
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
  EXPECT_NE(msg.find("\"runs\" must be an array"), std::string::npos) << msg;

  const std::string dirPath = file("adir");
  fs::create_directory(dirPath);
  msg = usageErrorOf([&] { ResultsFile::load(dirPath); });
  EXPECT_NE(msg.find(dirPath), std::string::npos) << msg;
}

TEST_F(ResultsTest, LoadFillsInMissingSections) {
  const std::string path = file("min.json");
  writeText(path, R"({"schema": "tpbench.results/1"})");
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

}  // namespace
}  // namespace tpb
