// tpbench_cuda_sum — how close tpb::reduceSumCuda (comm/cuda/reduce_cuda.cu) comes to the
// device's own memory bandwidth, on one GPU. The yardstick is a device-to-device
// cudaMemcpyAsync between the same two buffers, timed in the same run and interleaved with the
// sum repeat by repeat, so clocks, temperature and other tenants affect both alike. The project's
// goal: at the largest size the sum reaches >= 85 % of the copy's bandwidth.
//
//   tpbench_cuda_sum [--sizes 1M..1G] [--repeats 20] [--warmup 5] [--launches 0] [--device 0]
//                    [--json FILE]
//
// Bandwidth counts bytes read + written: the copy moves 2·n·4 bytes (read src, write dst), the
// sum 3·n·4 (read dst and src, write dst). Each repeat times a batch of launches with CUDA events
// (enough launches that small sizes are not one event's resolution); median, min and max over
// the repeats are reported. Small buffers fit in L2 and are launch-latency bound, so only the
// large sizes speak about memory bandwidth. One extra row runs the largest size with dst one
// float past src's alignment (dst and src then differ modulo 16 bytes), so the kernel cannot use
// float4 and takes its scalar path; the copy in that row uses the same pointers.
//
// nccl-tests' order: warm-up, timed repeats, then an untimed verification pass per size (fresh
// inputs with exactly representable values, one sum, copied back and compared exactly with
// host-computed sums: every element up to 16 MiB, 64 spread chunks of 4096 above). The copy is
// verified the same way.
//
// Exit: 0 measured and verified (whether or not the 85 % goal is met: the last line says),
// 1 a CUDA call failed or a result was wrong, 2 bad usage or no GPU visible.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "comm/cuda/cuda_check.h"
#include "comm/cuda/reduce_cuda.h"
#include "common/error.h"
#include "common/out_file.h"

namespace {

constexpr double kGoal = 0.85;  // sum / copy bandwidth the project aims for at the largest size

struct Options {
  std::vector<std::size_t> sizes;  // bytes per buffer
  int repeats = 20;
  int warmup = 5;
  int launches = 0;  // per timed batch; 0: chosen per size
  int device = 0;
  std::string json;
};

struct Stats {
  double median = 0, min = 0, max = 0;
};

struct Row {
  std::string kind;  // "aligned" or "misaligned"
  std::size_t bytes = 0, n = 0;
  int launches = 0;
  Stats copy, sum;  // GB/s
  double ratio = 0;  // sum median / copy median
  std::size_t checked = 0, wrong = 0;
  std::string firstWrong;
};

const char* kUsage =
    "usage: tpbench_cuda_sum [options]\n"
    "\n"
    "Bandwidth of tpbench's CUDA sum kernel (tpb::reduceSumCuda, dst += src) against a\n"
    "device-to-device cudaMemcpyAsync measured in the same run, on one GPU. Bytes counted are\n"
    "read + written: copy 2*n*4, sum 3*n*4.\n"
    "\n"
    "options:\n"
    "  --sizes LIST     bytes per buffer: comma list of sizes (K/M/G binary suffixes) and ranges\n"
    "                   A..B stepping x4 (default 1M..1G: 1M,4M,16M,64M,256M,1G)\n"
    "  --repeats R      timed repeats per size and operation (default 20)\n"
    "  --warmup W       untimed launches of each operation per size (default 5)\n"
    "  --launches K     launches per timed repeat (default 0: 2 GiB / size, clamped to 2..200)\n"
    "  --device D       CUDA device index (default 0)\n"
    "  --json FILE      also write the figures as JSON\n"
    "  -h, --help       this text\n"
    "\n"
    "Exit status: 0 measured and verified (the last line says whether sum/copy >= 85% at the\n"
    "largest size), 1 a CUDA call failed or a sum was wrong, 2 bad usage or no GPU visible.\n";

[[noreturn]] void usageError(const std::string& msg) {
  std::fprintf(stderr, "tpbench_cuda_sum: %s (see --help)\n", msg.c_str());
  std::exit(2);
}

std::size_t parseSize(const std::string& flag, const std::string& s) {
  if (s.empty()) usageError(flag + ": empty size");
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str() || errno != 0 || s[0] == '-') usageError(flag + ": not a size: '" + s + "'");
  unsigned shift = 0;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (!suffix.empty()) usageError(flag + ": unknown suffix in '" + s + "' (use K, M or G)");
  if (v == 0 || v > (1ULL << 40 >> shift)) usageError(flag + ": size out of range (4 bytes .. 1T): '" + s + "'");
  const std::size_t bytes = static_cast<std::size_t>(v) << shift;
  if (bytes % sizeof(float) != 0) usageError(flag + ": '" + s + "' is not a whole number of floats");
  return bytes;
}

std::vector<std::size_t> parseSizes(const std::string& flag, const std::string& list) {
  std::vector<std::size_t> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) {
      const std::size_t dots = item.find("..");
      if (dots == std::string::npos) {
        out.push_back(parseSize(flag, item));
      } else {
        const std::size_t lo = parseSize(flag, item.substr(0, dots));
        const std::size_t hi = parseSize(flag, item.substr(dots + 2));
        if (lo > hi) usageError(flag + ": empty range '" + item + "'");
        for (std::size_t b = lo; b <= hi; b *= 4) out.push_back(b);
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.empty()) usageError(flag + ": no size given");
  return out;
}

int parseInt(const std::string& flag, const char* s, int lo, int hi) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || v < lo || v > hi)
    usageError(flag + ": expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got '" + s + "'");
  return static_cast<int>(v);
}

Options parseArgs(int argc, char** argv) {
  Options o;
  std::string sizes = "1M..1G";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    std::string flag = a, value;
    const std::size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
    } else if (a.rfind("--", 0) == 0) {
      if (a != "--sizes" && a != "--repeats" && a != "--warmup" && a != "--launches" && a != "--device" &&
          a != "--json")
        usageError("unknown option '" + a + "'");
      if (i + 1 >= argc) usageError(a + ": needs a value");
      value = argv[++i];
    } else {
      usageError("unexpected argument '" + a + "'");
    }
    if (flag == "--sizes") sizes = value;
    else if (flag == "--repeats") o.repeats = parseInt(flag, value.c_str(), 1, 100000);
    else if (flag == "--warmup") o.warmup = parseInt(flag, value.c_str(), 0, 100000);
    else if (flag == "--launches") o.launches = parseInt(flag, value.c_str(), 0, 100000);
    else if (flag == "--device") o.device = parseInt(flag, value.c_str(), 0, 1023);
    else if (flag == "--json") o.json = value;
    else usageError("unknown option '" + flag + "'");
  }
  o.sizes = parseSizes("--sizes", sizes);
  return o;
}

std::string sizeName(std::size_t b) {
  for (auto [unit, shift] : {std::pair<const char*, unsigned>{"G", 30}, {"M", 20}, {"K", 10}})
    if (b >= (std::size_t{1} << shift) && b % (std::size_t{1} << shift) == 0) return std::to_string(b >> shift) + unit;
  return std::to_string(b);
}

// Inputs whose sums are exact in float: multiples of 0.25 and 0.5 below 512.
__host__ __device__ inline float dstValue(std::size_t i) { return static_cast<float>(i % 997) * 0.25f; }
__host__ __device__ inline float srcValue(std::size_t i) { return static_cast<float>(i % 1021) * 0.5f; }

__global__ void fillKernel(float* dst, float* src, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = dstValue(i);
    src[i] = srcValue(i);
  }
}

void fill(float* dst, float* src, std::size_t n, cudaStream_t s) {
  fillKernel<<<1024, 256, 0, s>>>(dst, src, n);
  TPB_CUDA_CHECK(cudaGetLastError());
}

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Stats s;
  s.min = v.front();
  s.max = v.back();
  const std::size_t m = v.size() / 2;
  s.median = v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  return s;
}

enum class Op { Copy, Sum };

void launch(Op op, float* dst, const float* src, std::size_t n, cudaStream_t s) {
  if (op == Op::Copy)
    TPB_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
  else
    tpb::reduceSumCuda(dst, src, n, s);
}

// Compares dst[0, n) on the device with expected(i): every element up to 4M floats (16 MiB),
// else 64 chunks of 4096 spread from the first element to the last. Returns elements checked.
template <typename Expected>
std::size_t verify(const float* dDst, std::size_t n, Expected expected, Row& row, const char* what) {
  constexpr std::size_t kFull = std::size_t{1} << 22, kChunk = 4096, kChunks = 64;
  std::vector<std::size_t> starts;
  std::size_t len = n;
  if (n <= kFull) {
    starts.push_back(0);
  } else {
    len = kChunk;
    for (std::size_t k = 0; k < kChunks; ++k) starts.push_back(k * (n - kChunk) / (kChunks - 1));
  }
  std::vector<float> host(len);
  std::size_t checked = 0;
  for (std::size_t start : starts) {
    TPB_CUDA_CHECK(cudaMemcpy(host.data(), dDst + start, len * sizeof(float), cudaMemcpyDeviceToHost));
    for (std::size_t j = 0; j < len; ++j) {
      const float want = expected(start + j);
      if (host[j] != want) {
        if (row.wrong++ == 0) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "%s: element %zu is %.9g, expected %.9g", what, start + j,
                        static_cast<double>(host[j]), static_cast<double>(want));
          row.firstWrong = buf;
        }
      }
    }
    checked += len;
  }
  return checked;
}

int launchesFor(const Options& o, std::size_t bytes) {
  if (o.launches > 0) return o.launches;
  const std::size_t k = (std::size_t{2} << 30) / bytes;
  return static_cast<int>(std::clamp<std::size_t>(k, 2, 200));
}

// Warm-up, R interleaved timed repeats of copy and sum, then the verification pass.
Row measure(const Options& o, const std::string& kind, float* dst, float* src, std::size_t n, cudaStream_t s,
            cudaEvent_t start, cudaEvent_t stop) {
  Row row;
  row.kind = kind;
  row.n = n;
  row.bytes = n * sizeof(float);
  row.launches = launchesFor(o, row.bytes);
  fill(dst, src, n, s);
  for (Op op : {Op::Copy, Op::Sum})
    for (int w = 0; w < o.warmup; ++w) launch(op, dst, src, n, s);
  TPB_CUDA_CHECK(cudaStreamSynchronize(s));

  std::vector<double> copyGbps, sumGbps;
  for (int r = 0; r < o.repeats; ++r) {
    for (Op op : {Op::Copy, Op::Sum}) {
      TPB_CUDA_CHECK(cudaEventRecord(start, s));
      for (int k = 0; k < row.launches; ++k) launch(op, dst, src, n, s);
      TPB_CUDA_CHECK(cudaEventRecord(stop, s));
      TPB_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      TPB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      const double moved = static_cast<double>(row.bytes) * (op == Op::Copy ? 2 : 3) * row.launches;
      const double gbps = ms > 0 ? moved / (static_cast<double>(ms) * 1e-3) / 1e9 : 0.0;
      (op == Op::Copy ? copyGbps : sumGbps).push_back(gbps);
    }
  }
  row.copy = stats(copyGbps);
  row.sum = stats(sumGbps);
  row.ratio = row.copy.median > 0 ? row.sum.median / row.copy.median : 0.0;

  // Untimed verification: fresh inputs, one operation, exact comparison on the host.
  fill(dst, src, n, s);
  launch(Op::Sum, dst, src, n, s);
  TPB_CUDA_CHECK(cudaStreamSynchronize(s));
  row.checked += verify(dst, n, [](std::size_t i) { return dstValue(i) + srcValue(i); }, row, "sum");
  fill(dst, src, n, s);
  launch(Op::Copy, dst, src, n, s);
  TPB_CUDA_CHECK(cudaStreamSynchronize(s));
  row.checked += verify(dst, n, [](std::size_t i) { return srcValue(i); }, row, "copy");
  return row;
}

void printRow(const Row& r) {
  std::printf("%-10s %6s %11zu %5d  %8.1f %8.1f %8.1f  %8.1f %8.1f %8.1f  %6.3f  %s\n", r.kind.c_str(),
              sizeName(r.bytes).c_str(), r.n, r.launches, r.copy.median, r.copy.min, r.copy.max, r.sum.median,
              r.sum.min, r.sum.max, r.ratio, r.wrong ? ("WRONG: " + r.firstWrong).c_str() : "ok");
  std::fflush(stdout);
}

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string jsonStats(const Stats& s) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "{\"median\": %.3f, \"min\": %.3f, \"max\": %.3f}", s.median, s.min, s.max);
  return buf;
}

void writeJson(const std::string& path, const Options& o, const std::string& deviceName, int cc, int runtime,
               int driver, const std::vector<Row>& rows, const Row& largest, bool met) {
  // Printed into memory, then written as one new file (common/out_file.h): never through a link.
  char* text = nullptr;
  std::size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (!f) TPB_THROW(tpb::Error, "cannot write " << path << ": " << std::strerror(errno));
  std::fprintf(f, "{\n  \"schema\": \"tpbench.cuda_sum/1\",\n");
  std::fprintf(f,
               "  \"meta\": {\"device\": \"%s\", \"device_index\": %d, \"compute_capability\": \"%d.%d\", "
               "\"cuda_runtime\": %d, \"cuda_driver\": %d, \"repeats\": %d, \"warmup\": %d, "
               "\"bytes_counted\": \"read + written: copy 2*n*4, sum 3*n*4\"},\n",
               jsonEscape(deviceName).c_str(), o.device, cc / 10, cc % 10, runtime, driver, o.repeats, o.warmup);
  std::fprintf(f, "  \"rows\": [\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(f,
                 "    {\"kind\": \"%s\", \"bytes\": %zu, \"n\": %zu, \"launches\": %d, \"copy_gbps\": %s, "
                 "\"sum_gbps\": %s, \"ratio\": %.4f, \"checked\": %zu, \"wrong\": %zu, \"error\": \"%s\"}%s\n",
                 r.kind.c_str(), r.bytes, r.n, r.launches, jsonStats(r.copy).c_str(), jsonStats(r.sum).c_str(),
                 r.ratio, r.checked, r.wrong, jsonEscape(r.firstWrong).c_str(), i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(f, "  ],\n");
  std::fprintf(f, "  \"goal\": {\"ratio_min\": %.2f, \"bytes\": %zu, \"ratio\": %.4f, \"met\": %s}\n}\n", kGoal,
               largest.bytes, largest.ratio, met ? "true" : "false");
  const bool printed = !std::ferror(f);
  const bool ok = std::fclose(f) == 0 && printed;  // fclose sets text and size
  const std::string json(text ? text : "", size);
  std::free(text);
  if (!ok) TPB_THROW(tpb::Error, "cannot write " << path << ": out of memory");
  tpb::writeFileAtomic(path, json);
}

int run(const Options& o) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::fprintf(stderr, "tpbench_cuda_sum: no GPU visible (%s; CUDA_VISIBLE_DEVICES=%s): nothing to measure\n",
                 err != cudaSuccess ? (std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err)).c_str()
                                    : "cudaGetDeviceCount returned 0",
                 std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "unset");
    return 2;
  }
  if (o.device >= count) usageError("--device " + std::to_string(o.device) + ": only " + std::to_string(count) +
                                    " GPU(s) visible");
  TPB_CUDA_CHECK(cudaSetDevice(o.device));
  cudaDeviceProp prop{};
  TPB_CUDA_CHECK(cudaGetDeviceProperties(&prop, o.device));
  int runtime = 0, driver = 0;
  TPB_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  TPB_CUDA_CHECK(cudaDriverGetVersion(&driver));
  const int cc = prop.major * 10 + prop.minor;
  std::printf("device %d: %s (sm_%d, %d SMs, %.1f GiB), CUDA runtime %d, driver %d\n", o.device, prop.name, cc,
              prop.multiProcessorCount, static_cast<double>(prop.totalGlobalMem) / (1 << 30), runtime, driver);
  std::printf("bytes counted: read + written (copy 2*n*4, sum 3*n*4); %d repeats after %d warm-up launches; "
              "sizes that fit in L2 (%.0f MiB) are cache/launch bound\n",
              o.repeats, o.warmup, static_cast<double>(prop.l2CacheSize) / (1 << 20));

  const std::size_t maxBytes = *std::max_element(o.sizes.begin(), o.sizes.end());
  // Room for the misaligned row, whose dst starts one float into its buffer.
  const std::size_t alloc = maxBytes + 256;
  float *dst = nullptr, *src = nullptr;
  TPB_CUDA_CHECK(cudaMalloc(&dst, alloc));
  TPB_CUDA_CHECK(cudaMalloc(&src, alloc));
  cudaStream_t s = nullptr;
  TPB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t start = nullptr, stop = nullptr;
  TPB_CUDA_CHECK(cudaEventCreate(&start));
  TPB_CUDA_CHECK(cudaEventCreate(&stop));

  std::printf("\n%-10s %6s %11s %5s  %26s  %26s  %6s  %s\n", "", "", "", "", "copy GB/s", "sum GB/s", "sum/", "");
  std::printf("%-10s %6s %11s %5s  %8s %8s %8s  %8s %8s %8s  %6s  %s\n", "case", "size", "floats", "launch", "median",
              "min", "max", "median", "min", "max", "copy", "check");
  std::vector<Row> rows;
  std::size_t largestIdx = 0;
  for (std::size_t bytes : o.sizes) {
    rows.push_back(measure(o, "aligned", dst, src, bytes / sizeof(float), s, start, stop));
    printRow(rows.back());
    if (bytes >= rows[largestIdx].bytes) largestIdx = rows.size() - 1;
  }
  // dst one float in, src at its buffer's start: 4 bytes apart modulo 16, so no float4 path.
  const std::size_t nMis = maxBytes / sizeof(float) - 1;
  if (nMis > 0) {
    rows.push_back(measure(o, "misaligned", dst + 1, src, nMis, s, start, stop));
    printRow(rows.back());
  }

  TPB_CUDA_CHECK(cudaEventDestroy(start));
  TPB_CUDA_CHECK(cudaEventDestroy(stop));
  TPB_CUDA_CHECK(cudaStreamDestroy(s));
  TPB_CUDA_CHECK(cudaFree(dst));
  TPB_CUDA_CHECK(cudaFree(src));

  const Row& largest = rows[largestIdx];
  const bool met = largest.ratio >= kGoal;
  std::size_t wrongRows = 0;
  for (const Row& r : rows) wrongRows += r.wrong ? 1 : 0;
  if (!o.json.empty()) {
    writeJson(o.json, o, prop.name, cc, runtime, driver, rows, largest, met);
    std::printf("\nwrote %s\n", o.json.c_str());
  }
  if (wrongRows) {
    std::printf("\nFAILED: %zu row(s) produced wrong results (see the check column)\n", wrongRows);
    return 1;
  }
  std::printf("\ngoal (sum >= %.0f%% of D2D copy bandwidth at the largest size, %s): %s — sum/copy = %.3f "
              "(sum %.1f GB/s, copy %.1f GB/s, medians)\n",
              kGoal * 100, sizeName(largest.bytes).c_str(), met ? "MET" : "NOT MET", largest.ratio,
              largest.sum.median, largest.copy.median);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parseArgs(argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tpbench_cuda_sum: %s\n", e.what());
    return 1;
  }
}
