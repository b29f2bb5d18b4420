// harness/input_checks.h — the checks every command runs on its input before anything is
// launched. Each refuses with one tpb::UsageError (exit 2) whose message starts with the flag
// (or environment variable) it is about and quotes the offending value; none prints anything.
//
// Rules they enforce (docs/cli.md, "Bad input"):
//   - numbers: plain decimal (common/decimal.h) and within their type: integer flags digits,
//     signed ones with an optional '-', real flags digits with an optional fraction and exponent
//     (CLI11 reads them with strtoull/strtoll in base 0 and strtold, which turn "-1" into
//     18446744073709551615, "010" into 8, "0x10" into 16, clamp what overflows and take hex
//     floats); integers inside their documented bounds; reals finite and inside theirs;
//   - lists (--strategies, --algos; ranges in harness/range.h alike): duplicates are dropped,
//     the first occurrence stays, so no point ever runs twice;
//   - a sweep (or an allreduce benchmark) of more than kMaxPoints points is refused, naming
//     how many were asked for;
//   - sizes: train/test sizes within the dataset's; --bytes whole float32 elements; what the
//     ranks on this node would hold (model state, allreduce buffers) within MemAvailable;
//   - host: a flag given as "" is refused, not read as "not given"; ports in 1..65535 and free
//     where this node binds one; TMPDIR, when set, a writable directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace tpb {

struct TrainRunOptions;
struct CollectiveBenchOptions;
struct NetworkSpec;

// ---- numbers ------------------------------------------------------------------------------------

// v in [lo, hi].
void checkInt(const std::string& flag, long long v, long long lo,
              long long hi = std::numeric_limits<long long>::max());

// An interval of the reals; an open end excludes its value.
struct RealInterval {
  double lo, hi;
  bool loOpen, hiOpen;
};
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr RealInterval kPositive{0, kInf, true, true};
constexpr RealInterval kNonNegative{0, kInf, false, true};

// v finite and inside `in`.
void checkReal(const std::string& flag, double v, const RealInterval& in);

// Why `text`, given to an unsigned flag, is not a plain decimal number that fits 64 bits; "" when
// it is (common/decimal.h; CLI11 itself reads it with strtoull in base 0, so "-1" would be
// 2^64-1, "010" 8, "0x10" 16, and "99999999999999999999" would clamp to 2^64-1).
std::string unsignedTextProblem(const std::string& text);
// The same for a signed flag: an optional '-', then a plain decimal number.
std::string integerTextProblem(const std::string& text);
// The same for a real flag: digits, an optional fraction and exponent (CLI11 reads it with
// strtold, which takes hex floats, "inf", leading '+' and whitespace).
std::string realTextProblem(const std::string& text);

// --max_steps: -1 (no limit) or at least 1.
void checkMaxSteps(const std::string& flag, long long v);

// ---- text and lists -----------------------------------------------------------------------------

// A flag given an empty value (`--out ""`).
void checkNotEmpty(const std::string& flag, const std::string& value);

// The items of a comma list, empty ones dropped: "ring,,gloo" -> {ring, gloo}.
std::vector<std::string> splitList(const std::string& text);

// `v` without its repeated values, the first occurrence kept: the duplicates rule of every list.
template <typename T>
std::vector<T> withoutDuplicates(const std::vector<T>& v) {
  std::vector<T> out;
  std::unordered_set<T> seen;
  for (const T& x : v)
    if (seen.insert(x).second) out.push_back(x);
  return out;
}

// ---- sweep size ---------------------------------------------------------------------------------

constexpr std::size_t kMaxPoints = 10000;

// One factor of a sweep's size: how many values `flag` contributes.
struct PointFactor {
  std::string flag;
  std::size_t count;
};

// The product of the factors (saturating), or a UsageError naming each factor when it is above
// `limit`: "sweep: 6 --strategies x 64 --n_gpus x 100 --repeat = 38400 points, more than ...".
std::size_t checkPointCount(const std::string& what, const std::vector<PointFactor>& factors,
                            std::size_t limit = kMaxPoints);

// ---- sizes and memory ---------------------------------------------------------------------------

// Every value a multiple of `elementSize` bytes.
void checkWholeElements(const std::string& flag, const std::vector<std::size_t>& bytes,
                        std::size_t elementSize, const std::string& elementName);

// `asked` (0: all) at most `have`: "--train_size 70000 exceeds the 60000 training samples of synthetic".
void checkSampleCount(const std::string& flag, std::size_t asked, std::size_t have, const std::string& what);

// MemAvailable of a /proc/meminfo text, in bytes; nullopt when it has none.
std::optional<std::uint64_t> memAvailableBytes(const std::string& meminfo);
// This host's, from /proc/meminfo.
std::optional<std::uint64_t> memAvailableBytes();

// Parameters (weights and biases) of the MLP 784-hidden...-10. A replica holds at least two
// float32 copies (weights, gradients), three with momentum.
double mlpParameters(const std::vector<int>& hidden);

// "1.5 GiB", "820.0 MiB", "12.3 TiB".
std::string humanBytes(double bytes);

// `need` bytes within `available` (nothing checked when that is unknown); the message says
// `flag`, `what` needs them, both figures and, where given, `hint` (what brings it down).
void checkFitsInMemory(const std::string& flag, const std::string& what, double need,
                       std::optional<std::uint64_t> available, const std::string& hint = "");

// What brings replicas' memory down, for that hint: where activations weigh most, the batch (and
// a transformer's sequence, "gpt2-small:seq=256", or a resnet's resolution, ":res="); where the
// model's state does, a smaller model; fewer replicas where there are several. `what` names the
// batch's flag (--batch_size) and `replicas`' (--n_gpus).
std::string memoryHint(const NetworkSpec& spec, int batch, int replicas, double stateBytes, double activationBytes);

// ---- host ---------------------------------------------------------------------------------------

// `port` bindable on this host on every address (stricter than the store, which binds
// --master_addr alone, so the check needs no address): refused when
// another socket holds it or binding it is not allowed.
void checkPortFree(const std::string& flag, std::uint16_t port);

// The directory launches put their job files in: $TMPDIR (`tmpdir`, nullptr when unset), else
// /tmp. Set but empty, missing, not a directory, or no file can be created there (tried, not
// asked of access(2), which lets root "write" /proc): refused, naming TMPDIR.
// TPB_FAULT (common/fault.h), where set, well formed; else UsageError naming it.
void checkFaultEnv();
void checkTempDir(const char* tmpdir);

// A directory for checkpoints: created when missing (and removed again when the command is
// refused later, common/out_file.h's removeCreatedDirectories), then a file must be creatable in it.
void checkSaveDir(const std::string& flag, const std::string& dir);

// --secret_file: a regular file of this user's that neither its group nor others may read, not
// empty (a trailing newline is not part of the secret), at most 4 KiB. Its text becomes the job's
// secret (TPB_JOB_SECRET in this process's environment, which its ranks inherit).
void useSecretFile(const std::string& flag, const std::string& path);
// Several nodes and no secret (neither --secret_file nor TPB_JOB_SECRET): refused, naming
// --secret_file. Checked after the flags' own checks, which name the flag at fault first.
void checkNodesShareASecret(int nnodes);

// ---- whole commands -----------------------------------------------------------------------------

// One value of a numeric setting against what the table accepts for it (common/train_settings.h):
// a sweep checks each value of a list with it, so a value no point will carry is refused too.
void checkSetting(const std::string& key, double value);

// Everything about a run or sweep that can be known before launching: every point's numbers,
// sizes against the dataset, model state against memory (cpu; a GPU's is not queried), the
// master port where this node binds it, the interface the ranks bind to (--iface,
// GLOO_SOCKET_IFNAME, or a route to --master_addr), the checkpoint directory, and TMPDIR.
void checkTrainRun(const TrainRunOptions& o);

// The same for the allreduce benchmark: points, whole float32 elements, buffers against memory.
void checkCollectiveRun(const CollectiveBenchOptions& o);

}  // namespace tpb
