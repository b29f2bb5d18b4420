// Tests for harness/input_checks (and workload/dataset_check): every check accepts what it must
// and refuses the rest with one UsageError that names the flag and the value.
#include "harness/input_checks.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "harness/collective_bench.h"
#include "harness/train_runner.h"
#include "tests/file_util.h"
#include "workload/dataset_check.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;
using test::usageErrorOf;

// Expects f to throw a UsageError that contains every needle.
template <typename F>
void expectRefused(F&& f, const std::vector<std::string>& needles) {
  const std::string msg = usageErrorOf(f);
  for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
}

TEST(InputChecks, IntegersWithinBounds) {
  EXPECT_NO_THROW(checkInt("--iters", 1, 1));
  EXPECT_NO_THROW(checkInt("--master_port", 65535, 0, 65535));
  expectRefused([] { checkInt("--iters", 0, 1); }, {"--iters: ", "at least 1", "got 0"});
  expectRefused([] { checkInt("--master_port", 70000, 0, 65535); }, {"--master_port: ", "0..65535", "70000"});
  expectRefused([] { checkInt("--nproc_per_node", -1, 0, 64); }, {"--nproc_per_node: ", "-1"});
}

TEST(InputChecks, RealsMustBeFiniteAndInside) {
  const double nan = std::nan(""), inf = kInf;
  EXPECT_NO_THROW(checkReal("--lr", 0.01, kPositive));
  EXPECT_NO_THROW(checkReal("--threshold", 0, kNonNegative));
  EXPECT_NO_THROW(checkReal("--momentum", 0.9, {0, 1, false, true}));
  for (double bad : {nan, inf, -inf, 0.0, -0.5}) {
    SCOPED_TRACE(bad);
    expectRefused([&] { checkReal("--lr", bad, kPositive); }, {"--lr: ", "finite", "above 0"});
  }
  for (double bad : {nan, inf, -1e-9}) expectRefused([&] { checkReal("--threshold", bad, kNonNegative); }, {"--threshold: "});
  expectRefused([] { checkReal("--momentum", 1.0, {0, 1, false, true}); }, {"--momentum: ", "[0, 1)", "got 1"});
  expectRefused([&] { checkReal("--momentum", nan, {0, 1, false, true}); }, {"--momentum: ", "nan"});
}

TEST(InputChecks, UnsignedTextIsPlainDecimal) {
  EXPECT_EQ(unsignedTextProblem("0"), "");
  EXPECT_EQ(unsignedTextProblem("60000"), "");
  EXPECT_EQ(unsignedTextProblem("18446744073709551615"), "");
  EXPECT_NE(unsignedTextProblem("-1").find("negative"), std::string::npos);
  EXPECT_NE(unsignedTextProblem("-0"), "");
  EXPECT_NE(unsignedTextProblem("010").find("leading zero"), std::string::npos);  // strtoull: 8
  for (const char* bad : {"", "0x10", "1e3", " 5", "5 ", "+5"}) EXPECT_NE(unsignedTextProblem(bad), "") << bad;
}

TEST(InputChecks, IntegerTextIsPlainDecimalWithOptionalMinus) {
  for (const char* ok : {"0", "-1", "42", "-9223372036854775808"}) EXPECT_EQ(integerTextProblem(ok), "") << ok;
  EXPECT_NE(integerTextProblem("010").find("leading zero"), std::string::npos);  // strtoll base 0: 8
  for (const char* bad : {"", "-", "--1", "-010", "0x10", "-0x1", "1e3", " 5", "+5", "5 "})
    EXPECT_NE(integerTextProblem(bad), "") << bad;
}

// A number beyond its type is refused, not clamped: CLI11's strtoull turns
// "99999999999999999999" into 2^64-1 (--seed recorded 18446744073709551615, exit 0).
TEST(InputChecks, IntegersBeyondSixtyFourBitsAreRefused) {
  EXPECT_NE(unsignedTextProblem("18446744073709551616").find("out of range"), std::string::npos);
  EXPECT_NE(unsignedTextProblem("99999999999999999999999").find("out of range"), std::string::npos);
  EXPECT_NE(integerTextProblem("9223372036854775808").find("out of range"), std::string::npos);
  EXPECT_NE(integerTextProblem("-9223372036854775809").find("out of range"), std::string::npos);
}

// Reals are plain decimal: digits, an optional fraction and exponent. strtold (CLI11) takes hex
// floats, "inf", "nan", a '+' and leading space, and overflows "1e999" to inf.
TEST(InputChecks, RealTextIsPlainDecimal) {
  for (const char* ok : {"0", "0.01", "-0.5", "1.", ".5", "1e-3", "2.5E+4", "10"}) EXPECT_EQ(realTextProblem(ok), "") << ok;
  for (const char* bad : {"", "-", ".", "e5", "1e", "1e+", "0x1p-3", "0x10", "inf", "-inf", "nan", "+0.5", " 0.5",
                          "0.5 ", "1,5", "1_000", "0.5f", "1e999", "-1e999", "1e-999"})
    EXPECT_NE(realTextProblem(bad), "") << bad;
  EXPECT_NE(realTextProblem("0x1p-3").find("not a plain decimal number"), std::string::npos);
  EXPECT_NE(realTextProblem("1e999").find("out of range"), std::string::npos);
}

TEST(InputChecks, MaxStepsIsMinusOneOrPositive) {
  EXPECT_NO_THROW(checkMaxSteps("--max_steps", -1));
  EXPECT_NO_THROW(checkMaxSteps("--max_steps", 1));
  for (long long bad : {0LL, -2LL, -100LL})
    expectRefused([&] { checkMaxSteps("--max_steps", bad); }, {"--max_steps: ", "-1 (no limit)", std::to_string(bad)});
}

TEST(InputChecks, ListsSplitAndDropDuplicatesKeepingTheFirst) {
  EXPECT_EQ(splitList("ring,,gloo,"), (std::vector<std::string>{"ring", "gloo"}));
  EXPECT_EQ(withoutDuplicates(std::vector<std::string>{"ddp", "ring", "ddp", "ring"}),
            (std::vector<std::string>{"ddp", "ring"}));
  EXPECT_EQ(withoutDuplicates(std::vector<std::size_t>{4096, 4096, 8}), (std::vector<std::size_t>{4096, 8}));
  expectRefused([] { checkNotEmpty("--out", ""); }, {"--out: ", "empty"});
  EXPECT_NO_THROW(checkNotEmpty("--out", "x.json"));
}

TEST(InputChecks, PointCountIsCappedAndNamesEveryFactor) {
  EXPECT_EQ(checkPointCount("sweep", {{"--n_gpus", 100}, {"--repeat", 100}}), kMaxPoints);
  expectRefused([] { checkPointCount("sweep", {{"--n_gpus", 64}, {"--batch_size", 100}, {"--repeat", 2}}); },
                {"sweep: ", "64 --n_gpus x 100 --batch_size x 2 --repeat = 12800 points", "10000"});
  // The product saturates instead of wrapping round to something small.
  const std::size_t huge = std::size_t{1} << 40;
  expectRefused([&] { checkPointCount("sweep", {{"--n_gpus", huge}, {"--repeat", huge}}); },
                {std::to_string(std::numeric_limits<std::size_t>::max())});
}

TEST(InputChecks, SizesAreWholeElementsAndWithinTheDataset) {
  EXPECT_NO_THROW(checkWholeElements("--bytes", {4, 4096}, 4, "float32"));
  expectRefused([] { checkWholeElements("--bytes", {4096, 4097}, 4, "float32"); },
                {"--bytes: ", "4097", "float32", "multiple of 4"});
  EXPECT_NO_THROW(checkSampleCount("--train_size", 0, 60000, "training samples of synthetic"));
  EXPECT_NO_THROW(checkSampleCount("--train_size", 60000, 60000, "training samples of synthetic"));
  expectRefused([] { checkSampleCount("--train_size", 60001, 60000, "training samples of synthetic"); },
                {"--train_size 60001 exceeds the 60000 training samples of synthetic"});
}

TEST(InputChecks, MemoryEstimateAndLimit) {
  EXPECT_EQ(memAvailableBytes("MemTotal: 100 kB\nMemFree: 3 kB\nMemAvailable:   2048 kB\n"), 2048u * 1024);
  EXPECT_EQ(memAvailableBytes("MemTotal: 100 kB\n"), std::nullopt);
  EXPECT_TRUE(memAvailableBytes().has_value()) << "this host's /proc/meminfo has MemAvailable";
  // 784-512-512-10: docs/measurements.md's 0.67 M parameters.
  EXPECT_EQ(mlpParameters({512, 512}), 784.0 * 512 + 512 + 512.0 * 512 + 512 + 512.0 * 10 + 10);
  EXPECT_EQ(mlpParameters({}), 7850.0);
  EXPECT_EQ(humanBytes(512), "512 B");
  EXPECT_EQ(humanBytes(1.5 * 1024 * 1024 * 1024), "1.5 GiB");
  EXPECT_NO_THROW(checkFitsInMemory("--bytes", "x", 1e12, std::nullopt));  // unknown: not checked
  EXPECT_NO_THROW(checkFitsInMemory("--bytes", "x", 1024, 1024));
  expectRefused([] { checkFitsInMemory("--hidden", "2 replicas", 3.0 * (1 << 30), std::uint64_t{1} << 30); },
                {"--hidden: 2 replicas need at least 3.0 GiB", "1.0 GiB available"});
}

// A port another socket listens on is refused; once closed, it is free again.
TEST(InputChecks, PortInUseIsRefused) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(s, 1), 0);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const std::uint16_t port = ntohs(a.sin_port);
  expectRefused([&] { checkPortFree("--master_port", port); },
                {"--master_port " + std::to_string(port), "already in use"});
  close(s);
  EXPECT_NO_THROW(checkPortFree("--master_port", port));
}

TEST(InputChecks, TempDirMustBeAWritableDirectory) {
  EXPECT_NO_THROW(checkTempDir(nullptr));
  EXPECT_NO_THROW(checkTempDir(testing::TempDir().c_str()));
  expectRefused([] { checkTempDir(""); }, {"TMPDIR: ", "empty"});
  expectRefused([] { checkTempDir("/no/such/dir"); }, {"TMPDIR: /no/such/dir"});
  const fs::path file = testing::TempDir() + "tpb_checks_not_a_dir";
  test::writeText(file, "x");
  expectRefused([&] { checkTempDir(file.c_str()); }, {"TMPDIR: ", "not a directory"});
  fs::remove(file);
  // A directory no file can be created in, though access(2) tells root it may write there.
  expectRefused([] { checkTempDir("/proc"); }, {"TMPDIR: /proc", "not writable"});
  expectRefused([] { checkSaveDir("--save_dir", "/proc"); }, {"--save_dir /proc", "not a writable directory"});
  if (geteuid() == 0) GTEST_SKIP() << "root writes into any directory: the not-writable case needs another user";
  const fs::path dir = testing::TempDir() + "tpb_checks_readonly";
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  expectRefused([&] { checkTempDir(dir.c_str()); }, {"TMPDIR: ", "not writable"});
  fs::permissions(dir, fs::perms::owner_all);
  fs::remove(dir);
}

// An IDX file of `count` zero images or labels: checkDatasetSpec reads it whole.
void writeIdx(const fs::path& path, std::uint32_t magic, std::uint32_t count, bool gz) {
  unsigned char h[16] = {};
  auto put = [&h](int at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) h[at + i] = static_cast<unsigned char>(v >> (24 - 8 * i));
  };
  put(0, magic);
  put(4, count);
  put(8, 28);
  put(12, 28);
  const std::string bytes = std::string(reinterpret_cast<char*>(h), magic == 2051 ? 16 : 8) +
                            std::string(std::size_t{count} * (magic == 2051 ? 784 : 1), '\0');
  if (gz) {
    gzFile f = gzopen((path.string() + ".gz").c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    test::writeText(path, bytes);
  }
}

fs::path fakeMnist(const std::string& name, std::uint32_t train, std::uint32_t trainLabels, std::uint32_t test) {
  const fs::path dir = testing::TempDir() + "tpb_checks_" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  writeIdx(dir / "train-images-idx3-ubyte", 2051, train, true);
  writeIdx(dir / "train-labels-idx1-ubyte", 2049, trainLabels, false);
  writeIdx(dir / "t10k-images-idx3-ubyte", 2051, test, false);
  writeIdx(dir / "t10k-labels-idx1-ubyte", 2049, test, true);
  return dir;
}

TEST(InputChecks, DatasetSizesComeFromTheCheckedIdxFiles) {
  const DatasetSizes synth = checkDatasetSpec("--dataset", "synthetic");
  EXPECT_EQ(synth.train, 60000u);
  EXPECT_EQ(synth.test, 10000u);
  const fs::path dir = fakeMnist("mnist", 300, 300, 70);
  const DatasetSizes m = checkDatasetSpec("--dataset", "mnist:" + dir.string());
  EXPECT_EQ(m.train, 300u);
  EXPECT_EQ(m.test, 70u);
  const fs::path bad = fakeMnist("mnist_bad", 300, 299, 70);
  expectRefused([&] { checkDatasetSpec("--dataset", "mnist:" + bad.string()); },
                {"--dataset: ", "has 299 labels but", "has 300 images"});
  fs::remove(dir / "t10k-labels-idx1-ubyte.gz");
  expectRefused([&] { checkDatasetSpec("--dataset", "mnist:" + dir.string()); },
                {"--dataset: neither ", "t10k-labels-idx1-ubyte.gz is a regular file"});
  expectRefused([] { checkDatasetSpec("--dataset", "cifar"); }, {"--dataset: ", "cifar"});
  fs::remove_all(dir);
  fs::remove_all(bad);
}

TrainRunOptions oneRun(TrainConfig c) {
  TrainRunOptions o;
  o.points.push_back({c, 0});
  return o;
}

TEST(InputChecks, TrainRunChecksEveryPoint) {
  TrainConfig c;
  c.nGpus = 2;
  EXPECT_NO_THROW(checkTrainRun(oneRun(c)));
  TrainConfig big = c;
  big.trainSize = 60001;
  expectRefused([&] { checkTrainRun(oneRun(big)); }, {"--train_size 60001 exceeds the 60000"});
  TrainConfig test = c;
  test.testSize = 10001;
  expectRefused([&] { checkTrainRun(oneRun(test)); }, {"--test_size 10001 exceeds the 10000 test samples"});
  TrainConfig steps = c;
  steps.maxSteps = 0;
  expectRefused([&] { checkTrainRun(oneRun(steps)); }, {"--max_steps: "});
  TrainConfig lr = c;
  lr.lr = kInf;
  expectRefused([&] { checkTrainRun(oneRun(lr)); }, {"--lr: ", "inf"});
  TrainConfig bucket = c;
  bucket.bucketMb = std::nan("");
  expectRefused([&] { checkTrainRun(oneRun(bucket)); }, {"--bucket_mb: "});
  TrainConfig huge = c;
  huge.hidden = "1048576,1048576";  // 1.1e12 parameters: 8 TiB per replica
  expectRefused([&] { checkTrainRun(oneRun(huge)); }, {"--hidden: 2 replicas on this node", "available"});
  // A sweep's later point is checked as well as its first.
  TrainRunOptions sweep = oneRun(c);
  sweep.points.push_back({big, 0});
  expectRefused([&] { checkTrainRun(sweep); }, {"--train_size 60001"});
}

// pipeline splits each batch into M micro-batches: M above the batch leaves some empty every
// step (and was recorded as if it ran M), for every batch size of a sweep.
TEST(InputChecks, MicrobatchesAtMostTheBatch) {
  TrainConfig c;
  c.nGpus = 2;
  c.strategy = "pipeline";
  c.batchSize = 4;
  c.microbatches = 4;
  EXPECT_NO_THROW(checkTrainRun(oneRun(c)));
  TrainConfig tooMany = c;
  tooMany.microbatches = 5;
  expectRefused([&] { checkTrainRun(oneRun(tooMany)); }, {"--microbatches 5 is above --batch_size 4"});
  TrainRunOptions sweep = oneRun(c);
  TrainConfig smallBatch = c;
  smallBatch.batchSize = 2;
  sweep.points.push_back({smallBatch, 0});
  expectRefused([&] { checkTrainRun(sweep); }, {"--microbatches 4 is above --batch_size 2"});
  // Strategies that take no micro-batches ignore the flag.
  TrainConfig ring = tooMany;
  ring.strategy = "ring_all_reduce";
  EXPECT_NO_THROW(checkTrainRun(oneRun(ring)));
}

TEST(InputChecks, AllreduceRunChecksSizesAndMemory) {
  CollectiveBenchOptions o;
  o.algos = {"ring"};
  o.nGpus = {2, 4};
  o.bytes = {4096, 1 << 20};
  EXPECT_NO_THROW(checkCollectiveRun(o));
  CollectiveBenchOptions odd = o;
  odd.bytes.push_back(4098);
  expectRefused([&] { checkCollectiveRun(odd); }, {"--bytes: 4098 bytes"});
  CollectiveBenchOptions big = o;
  big.bytes = {std::size_t{1} << 34};
  big.nGpus = {64};
  expectRefused([&] { checkCollectiveRun(big); }, {"--bytes: ", "16.0 GiB with --n_gpus 64", "1.0 TiB"});
  CollectiveBenchOptions many = o;
  many.bytes.assign(5001, 4);
  expectRefused([&] { checkCollectiveRun(many); }, {"allreduce: 1 --algos x 2 --n_gpus x 5001 --bytes = 10002 points"});
}

}  // namespace
}  // namespace tpb
