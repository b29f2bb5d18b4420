// Hostile checkpoints (--resume_from) and MNIST files (--dataset mnist:DIR): every one is refused
// by the launcher, exit 2 and one line naming the flag and the file, before any rank starts; none
// crashes it, hangs it, or lets training run on bytes the file does not hold. The checkers
// themselves (workload/checkpoint_check.h, workload/idx.h) are fuzzed in tests/fuzz/.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <gtest/gtest.h>
#include <torch/serialize.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli_util.h"
#include "tests/file_util.h"
#include "tests/report_util.h"
#include "workload/checkpoint_check.h"
#include "workload/checkpoint_layout.h"
#include "workload/idx.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;

// ---- zip archives, as torch.save's reader sees them ---------------------------------------------

std::uint32_t le32(const std::string& b, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}
std::uint32_t le16(const std::string& b, std::size_t at) { return le32(b, at) & 0xFFFF; }

// The entries of a zip tpbench wrote (trusted: only our own files are read this way), by name.
std::map<std::string, std::string> zipEntries(const std::string& zip) {
  std::map<std::string, std::string> out;
  std::size_t cd = zip.rfind(std::string("PK\x01\x02", 4));
  while (cd != std::string::npos && cd > 0 && zip.rfind(std::string("PK\x01\x02", 4), cd - 1) != std::string::npos)
    cd = zip.rfind(std::string("PK\x01\x02", 4), cd - 1);
  for (std::size_t at = cd; zip.compare(at, 4, std::string("PK\x01\x02", 4)) == 0;) {
    const std::uint32_t size = le32(zip, at + 24), nameLen = le16(zip, at + 28), extraLen = le16(zip, at + 30);
    const std::uint32_t local = le32(zip, at + 42);
    const std::string name = zip.substr(at + 46, nameLen);
    const std::size_t data = local + 30 + le16(zip, local + 26) + le16(zip, local + 28);
    out[name] = zip.substr(data, size);
    at += 46 + nameLen + extraLen;
  }
  return out;
}

// A zip of `entries` (names without the archive folder) as tpbench hands LibTorch one.
std::string makeZip(const std::map<std::string, std::string>& entries) {
  return storedZip(std::vector<std::pair<std::string, std::string>>(entries.begin(), entries.end()));
}

// `text` with `from` replaced once by `to` (which must be there).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "pattern not found";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Runs the CLI, killing it after a minute: a hang (a FIFO's open) shows as a failed exit code,
// not as a test that never ends.
test::CliResult runGuarded(const std::vector<std::string>& args) {
  return test::runCli(args, {}, [](pid_t pid, const std::atomic<bool>& done, const test::SaidSoFar&) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!done) kill(pid, SIGKILL);
  });
}

// One small checkpoint written by tpbench itself, and the flags that resume it.
class HostileCheckpoint : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::makeTempDir("tpb_hostile_ckpt");
    const test::CliResult r = test::runCli(withFlags({"--epochs", "1", "--save_dir", dir_.string()}));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    good_ = test::readText(dir_ / "single-n1-epoch-1.pt");
    entries_ = zipEntries(good_);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // The settings of the checkpoint, a results file of its own per run, and `more`.
  static std::vector<std::string> withFlags(std::vector<std::string> more, std::string out = "") {
    static int runs = 0;
    if (out.empty()) out = (dir_ / ("out" + std::to_string(++runs) + ".json")).string();
    std::vector<std::string> args = {"run", "--strategy", "single", "--n_gpus", "1", "--batch_size", "16",
                                     "--train_size", "64", "--hidden", "8", "--momentum", "0.5", "--out", out};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  // Writes `bytes` as DIR/name and expects resuming from it refused up front, naming `why`.
  static void expectRefused(const std::string& name, const std::string& bytes, const std::string& why) {
    SCOPED_TRACE(name);
    const std::string path = (dir_ / name).string();
    test::writeText(path, bytes);
    expectRefusedPath(path, why);
  }
  static void expectRefusedPath(const std::string& path, const std::string& why) {
    const test::CliResult r = runGuarded(withFlags({"--epochs", "2", "--resume_from", path}));
    test::expectRefusedUpFront(r, "--resume_from " + path + ": ");
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  }
  static std::string pickle() { return entries_.at("archive/data.pkl"); }
  static std::string withPickle(const std::string& p) {
    auto e = entries_;
    e["archive/data.pkl"] = p;
    return makeZip(e);
  }

  static fs::path dir_;
  static std::string good_;
  static std::map<std::string, std::string> entries_;
};
fs::path HostileCheckpoint::dir_;
std::string HostileCheckpoint::good_;
std::map<std::string, std::string> HostileCheckpoint::entries_;

TEST_F(HostileCheckpoint, OurOwnRezippedFileStillResumes) {
  // The test's zip writer is sound: a file it rebuilds from tpbench's entries resumes.
  const std::string path = (dir_ / "rezipped.pt").string();
  test::writeText(path, makeZip(entries_));
  const test::CliResult r = test::runCli(withFlags({"--epochs", "2", "--resume_from", path}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

TEST_F(HostileCheckpoint, BadPicklesAreRefusedNotRun) {
  // REDUCE on an empty stack crashed LibTorch's unpickler (exit 139).
  expectRefused("reduce.pt", withPickle(std::string("\x80\x02R.", 4)), "needs a value the stack does not have");
  expectRefused("os.pt", withPickle(replaced(pickle(), "collections\nOrderedDict\n", "os\nsystem\n")), "os.system");
  expectRefused("trailing.pt", withPickle(pickle() + "junk"), "bytes follow STOP");
  // torch.save(model.state_dict()): LibTorch 1.13 turns OrderedDict() into None, then asserted.
  const std::string odict("\x80\x02" "ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00" "kK\x01u.", 40);
  expectRefused("odict.pt", withPickle(odict), "an OrderedDict holds items");
  expectRefused("cut.pt", withPickle(pickle().substr(0, pickle().size() / 2)), "data.pkl");
  expectRefused("long1.pt", withPickle(replaced(pickle(), "K\x01", "\x8a\x09" + std::string(9, '\x01'))),
                "wider than 64 bits");
}

TEST_F(HostileCheckpoint, TensorsPastTheirStoredBytesAreRefused) {
  // The bias of layer 0 (storage '1', 8 floats) with 4 bytes behind it: LibTorch read the other
  // 28 from whatever lay beyond and trained on them.
  auto e = entries_;
  e["archive/data/1"] = e["archive/data/1"].substr(0, 4);
  expectRefused("short_storage.pt", makeZip(e), "storage '1' claims 8 elements of 4 bytes, its entry holds 4 bytes");
  // Strides reaching past the storage, and sizes whose extent overflows 64 bits.
  const std::string strides784x1 = std::string("(M\x10\x03K\x01t", 7);
  expectRefused("stride.pt", withPickle(replaced(pickle(), strides784x1, std::string("(M\x11\x03K\x01t", 7))),
                "past its stored bytes");
  const std::string huge = "\x8a\x08" + std::string(7, '\xff') + "\x3f";
  expectRefused("huge.pt", withPickle(replaced(pickle(), strides784x1, "(" + huge + "K\x01t")), "overflows 64 bits");
  const std::string key1("X\x01\x00\x00\x00" "1", 6), key9("X\x01\x00\x00\x00" "9", 6);  // storage '1' of 0.bias
  expectRefused("nostorage.pt", withPickle(replaced(pickle(), key1, key9)), "has no data/9 entry");
}

TEST_F(HostileCheckpoint, BrokenZipStructureIsRefused) {
  std::string past = good_;
  const std::size_t cd = past.find(std::string("PK\x01\x02", 4));
  ASSERT_NE(cd, std::string::npos);
  past.replace(cd + 42, 4, std::string("\xf0\xff\xff\x7f", 4));  // first entry's local header offset
  expectRefused("offset.pt", past, "runs past the end of the file");
  std::string overlap = makeZip(entries_);
  const std::size_t first = overlap.find(std::string("PK\x01\x02", 4));
  overlap.replace(first + 20, 8, std::string("\xff\xff\x00\x00\xff\xff\x00\x00", 8));  // sizes: 65535
  expectRefused("overlap.pt", overlap, "overlap");
  auto e = entries_;
  e["archive/../../etc/passwd"] = "x";
  expectRefused("dotdot.pt", makeZip(e), "not a path inside one archive folder");
  expectRefused("notzip.pt", "hello\n", "not a zip archive");
  expectRefused("empty.pt", "", "not a zip archive");
}

TEST_F(HostileCheckpoint, NonRegularFilesAreRefusedWithoutReading) {
  const std::string fifo = (dir_ / "fifo.pt").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expectRefusedPath(fifo, "is a FIFO, not a regular file");  // a plain open waited for a writer forever
  expectRefusedPath("/dev/zero", "is a character device");     // read without end
  expectRefusedPath(dir_.string(), "is a directory");
  // Larger than any checkpoint of this model can be (a sparse file: nothing is written).
  const std::string big = (dir_ / "big.pt").string();
  test::writeText(big, "");
  fs::resize_file(big, 1ull << 30);
  expectRefusedPath(big, "more than the");
}

// A checkpoint loaded and saved again by PyTorch 1.13 (Debian's python3-torch) resumes: torch.save
// writes other memo slots, no type tags and another archive folder, which pass, and APPEND and
// SETITEM for one-item containers, which LibTorch 1.13 cannot read and tpbench rewrites. Before,
// this file was refused as "not a readable checkpoint".
TEST_F(HostileCheckpoint, TorchSaveRoundTripResumes) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian's python3-torch is not installed)";
  const std::string original = (dir_ / "single-n1-epoch-1.pt").string(), resaved = (dir_ / "resaved.pt").string();
  const std::string cmd = "/usr/bin/python3 -c \"import sys, torch; "
                          "torch.save(torch.load(sys.argv[1]), sys.argv[2])\" " +
                          original + " " + resaved;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string a = (dir_ / "a.json").string(), b = (dir_ / "b.json").string();
  const test::CliResult r1 = test::runCli(withFlags({"--epochs", "2", "--resume_from", original}, a));
  const test::CliResult r2 = test::runCli(withFlags({"--epochs", "2", "--resume_from", resaved}, b));
  ASSERT_EQ(r1.exitCode, 0) << r1.err;
  ASSERT_EQ(r2.exitCode, 0) << r2.err;
  // The same weights, momentum and sampler state: epoch 2 trains alike.
  const auto ea = test::readJson(a)["runs"][0]["epochs"], eb = test::readJson(b)["runs"][0]["epochs"];
  ASSERT_EQ(ea.size(), 1u);
  ASSERT_EQ(eb.size(), 1u);
  EXPECT_EQ(ea[0]["train_loss"], eb[0]["train_loss"]);
  EXPECT_EQ(ea[0]["test_accuracy"], eb[0]["test_accuracy"]);
}

// The seed corpus of tests/fuzz/ (tpbench's checkpoint, its torch.save round trip, small
// hand-made ones) passes, and what the check hands LibTorch loads: the rewriting of Python's
// opcodes is tested here too where Python is absent.
TEST(CheckpointCheck, TorchWrittenFilesPassAndLoad) {
  const fs::path corpus = fs::path(TPB_SOURCE_DIR) / "tests/fuzz/corpus/checkpoint";
  int files = 0;
  for (const auto& e : fs::directory_iterator(corpus)) {
    SCOPED_TRACE(e.path().string());
    const std::vector<char> bytes = readCheckedCheckpoint("--resume_from", e.path().string(), 1 << 20, "in this test");
    EXPECT_TRUE(torch::pickle_load(bytes).isGenericDict());
    ++files;
  }
  EXPECT_GE(files, 3);
  // tpbench's own file goes to LibTorch as it is; Python's, rewritten.
  auto rewritten = [&](const std::string& name) {
    const std::string b = test::readText(corpus / name);
    const auto* p = reinterpret_cast<const unsigned char*>(b.data());
    return checkCheckpointBytes(p, b.size(), "--resume_from", name).rewritten;
  };
  EXPECT_EQ(rewritten("tpbench_hidden1_momentum.pt"), "");
  EXPECT_NE(rewritten("torch_save_round_trip.pt"), "");
  // The networks' seeds are of the format this build writes, their shapes recorded.
  for (const char* name : {"tpbench_gpt_momentum.pt", "tpbench_resnet_batchnorm_momentum.pt"}) {
    EXPECT_EQ(rewritten(name), "") << name;
    const std::string b = test::readText(corpus / name);
    const auto doc = torch::pickle_load(std::vector<char>(b.begin(), b.end())).toGenericDict();
    EXPECT_EQ(doc.at("format").toStringRef(), kCheckpointFormat) << name;
    EXPECT_GT(doc.at("shapes").toGenericDict().size(), 0u) << name;
  }
}

// storedZip's CRC-32 is tpbench's own (writing a checkpoint needs no zlib); it must be zlib's, or
// LibTorch's zip reader refuses the rewritten file. The check value, every byte value, lengths
// around the table's 256, and the field storedZip writes (local header, offset 14).
TEST(CheckpointCheck, ZipCrc32IsZlibs) {
  EXPECT_EQ(zipCrc32("123456789"), 0xCBF43926u);
  std::string bytes;
  for (int i = 0; i < 4096; ++i) bytes.push_back(static_cast<char>((i * 131 + i / 256) & 0xFF));
  for (const std::size_t n : {0, 1, 7, 255, 256, 257, 4096}) {
    const std::string s = bytes.substr(0, n);
    EXPECT_EQ(zipCrc32(s), crc32(0, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size()))) << n;
  }
  EXPECT_EQ(le32(storedZip({{"a/data.pkl", bytes}}), 14), zipCrc32(bytes));
}

// ---- MNIST ---------------------------------------------------------------------------------------

std::string bigEndian(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}
std::string images(std::uint32_t n, std::uint32_t rows = 28, std::uint32_t cols = 28) {
  return bigEndian(2051) + bigEndian(n) + bigEndian(rows) + bigEndian(cols) +
         std::string(std::size_t{n} * rows * cols, '\x40');
}
std::string labels(const std::string& values) {
  return bigEndian(2049) + bigEndian(static_cast<std::uint32_t>(values.size())) + values;
}

// `head` then `zeros` zero bytes, gzipped (streamed: the inflated size is never in memory).
std::string gzipped(const std::string& head, std::size_t zeros = 0) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out, chunk(1 << 16, '\0'), zero(1 << 20, '\0');
  auto pump = [&](const std::string& in, std::size_t n, int flush) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(n);
    do {
      z.next_out = reinterpret_cast<Bytef*>(chunk.data());
      z.avail_out = static_cast<uInt>(chunk.size());
      deflate(&z, flush);
      out.append(chunk.data(), chunk.size() - z.avail_out);
    } while (z.avail_out == 0);
  };
  pump(head, head.size(), Z_NO_FLUSH);
  for (std::size_t left = zeros; left > 0;) {
    const std::size_t n = std::min(left, zero.size());
    pump(zero, n, Z_NO_FLUSH);
    left -= n;
  }
  pump(zero, 0, Z_FINISH);
  deflateEnd(&z);
  return out;
}

struct Measured {
  int exitCode = -1;
  std::string err;
  long maxRssKiB = 0;  // the largest of tpbench and the processes it waited for
};

// Runs tpbench with `args` and reports its peak memory (wait4's rusage), stderr in a file.
Measured runMeasured(const std::vector<std::string>& args, const fs::path& errFile) {
  std::vector<std::string> argv = {TPB_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(errFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  Measured m;
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) return m;
  m.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  m.err = test::readText(errFile);
  m.maxRssKiB = ru.ru_maxrss;
  return m;
}

// A valid 3-train / 2-test MNIST in a directory of its own; files can be replaced.
class HostileMnist : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::makeTempDir("tpb_hostile_mnist");
    ASSERT_FALSE(dir_.empty());
    reset();
  }
  void reset() {
    write("train-images-idx3-ubyte", images(3));
    write("train-labels-idx1-ubyte", labels({1, 2, 3}));
    write("t10k-images-idx3-ubyte", images(2));
    write("t10k-labels-idx1-ubyte", labels({4, 5}));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // DIR/name holds `bytes` (gzipped as DIR/name.gz when `gz`), the other form removed.
  std::string write(const std::string& name, const std::string& bytes, bool gz = false) {
    fs::remove(dir_ / name);
    fs::remove(dir_ / (name + ".gz"));
    const fs::path path = dir_ / (gz ? name + ".gz" : name);
    test::writeText(path, gz ? gzipped(bytes) : bytes);
    return path.string();
  }
  std::vector<std::string> runArgs() const {
    return {"run", "--strategy", "single", "--n_gpus", "1", "--batch_size", "2", "--hidden", "8", "--epochs", "1",
            "--dataset", "mnist:" + dir_.string(), "--out", (dir_ / "out.json").string()};
  }
  // The launcher refuses the dataset before any rank starts, naming the file and `why`.
  void expectRefused(const std::string& path, const std::string& why) {
    const test::CliResult r = test::runCli(runArgs());
    test::expectRefusedUpFront(r, "--dataset " + path + ": ");
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_TRUE(test::workerPids().empty());
  }

  fs::path dir_;
};

// Each of these used to pass the launcher's header-only check and fail inside every rank of
// every point (exit 1).
TEST_F(HostileMnist, BadFilesAreRefusedByTheLauncher) {
  const std::string trImg = "train-images-idx3-ubyte", trLab = "train-labels-idx1-ubyte";
  const std::string teImg = "t10k-images-idx3-ubyte", teLab = "t10k-labels-idx1-ubyte";
  expectRefused(write(trLab, labels({1, 10, 3})), "has label 10 at index 1 (expected 0..9)");
  expectRefused(write(trLab, labels({1, '\xff', 3}), true), "has label 255");
  reset();
  expectRefused(write(teImg, images(2, 27, 29)), "has 27x29 images, the model takes 28x28");
  reset();
  std::string cut = images(3);
  cut.pop_back();
  expectRefused(write(trImg, cut), "expected 2368 for 3 images (truncated or corrupt)");
  expectRefused(write(trImg, cut, true), "inflates to 2367 bytes, expected 2368");
  expectRefused(write(trImg, images(3) + "x", true), "inflates to more than the 2368 bytes");
  reset();
  expectRefused(write(teLab, labels({4, 5}) + "\x01"), "expected 10 for 2 labels");
  const std::string gz = gzipped(labels({4, 5}));
  expectRefused(write(teLab, gz + gz, false), "has data after the end of its gzip stream");
  reset();
  expectRefused(write(teImg, ""), "is too short for an IDX header (0 bytes)");
  reset();
  fs::remove(dir_ / teLab);
  ASSERT_EQ(mkfifo((dir_ / teLab).c_str(), 0600), 0);  // never opened: a FIFO is not the file
  const test::CliResult r = test::runCli(runArgs());
  test::expectRefusedUpFront(r, "--dataset: neither " + (dir_ / teLab).string());
}

// A small gzip whose header promises 10 images but which inflates to 256 MiB: refused once the
// 10 images and one more byte are inflated. Before, every rank inflated all of it first.
TEST_F(HostileMnist, GzipBombIsRefusedAfterItsHeadersWorth) {
  const fs::path errFile = dir_ / "stderr.txt";
  write("train-labels-idx1-ubyte", labels({1, 2, 3, 4, 5, 6, 7, 8, 9, 0}));
  // The same command refused for a cheap reason first: the launcher's own peak.
  const Measured base = runMeasured(runArgs(), errFile);
  ASSERT_EQ(base.exitCode, 2) << base.err;
  const std::string bomb = gzipped(images(10), std::size_t{256} << 20);
  ASSERT_LT(bomb.size(), std::size_t{1} << 20);
  const fs::path path = dir_ / "train-images-idx3-ubyte.gz";
  fs::remove(dir_ / "train-images-idx3-ubyte");
  test::writeText(path, bomb);
  const Measured m = runMeasured(runArgs(), errFile);
  EXPECT_EQ(m.exitCode, 2) << m.err;
  const std::string why = ": inflates to more than the 7856 bytes its header gives 10 images";
  EXPECT_NE(m.err.find("--dataset " + path.string() + why),
            std::string::npos)
      << m.err;
  EXPECT_LT(m.maxRssKiB, base.maxRssKiB + 64 * 1024) << "peak memory grew by the inflated size";
}

}  // namespace
}  // namespace tpb
