#include "harness/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>

#include <torch/version.h>
#if __has_include(<gloo/config.h>)
#include <gloo/config.h>
#endif

#include "comm/cuda/devices.h"
#include "common/error.h"
#if __has_include("tpb_git_sha.h")
#include "tpb_git_sha.h"  // generated at build time by cmake/git_sha.cmake
#endif

#ifndef TPB_VERSION
#define TPB_VERSION "unknown"
#endif
#ifndef TPB_GIT_SHA
#define TPB_GIT_SHA "unknown"
#endif
#ifndef TPB_BUILD_TYPE
#define TPB_BUILD_TYPE "unknown"
#endif

namespace tpb {
namespace {

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

// The first "model name" line of /proc/cpuinfo (x86; most ARM kernels have none: "unknown").
std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::size_t b = colon + 1;
    while (b < line.size() && (line[b] == ' ' || line[b] == '\t')) ++b;
    if (b < line.size()) return line.substr(b);
  }
  return "unknown";
}

// Gloo has no runtime version query; the headers this was compiled against carry one. Debian's
// LibTorch links the system libgloo built from those headers; a PyTorch-provided LibTorch links
// its own copy, which these headers need not describe — hence the "(headers)" note.
std::string glooVersion() {
#ifdef GLOO_VERSION_MAJOR
  return std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." +
         std::to_string(GLOO_VERSION_PATCH) + " (headers)";
#else
  return "bundled with libtorch (version not exposed)";
#endif
}

std::string errnoText(int err) { return std::strerror(err); }

std::string readWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    TPB_THROW(UsageError, "cannot read results file '" << path << "': " << errnoText(err));
  }
  std::string text;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      TPB_THROW(UsageError, "cannot read results file '" << path << "': " << errnoText(err));
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

std::string parentDir(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

}  // namespace

std::vector<std::string> visibleGpuNames() {
  // [] in a build without CUDA or on a machine without a driver or GPU (comm/cuda/devices.h).
  return cudaDeviceNames();
}

nlohmann::json collectMeta(const std::string& command) {
  nlohmann::json m = nlohmann::json::object();
  m["tpbench_version"] = TPB_VERSION;
  m["git_sha"] = TPB_GIT_SHA;
  m["timestamp_utc"] = utcNow();
  m["host"] = hostName();
  m["cpu_model"] = cpuModel();
  const unsigned cores = std::thread::hardware_concurrency();
  m["cpu_cores"] = cores > 0 ? nlohmann::json(cores) : nlohmann::json(nullptr);
  m["gpus"] = visibleGpuNames();
  auto orNull = [](const std::optional<std::string>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  m["driver"] = orNull(cudaDriverVersion());    // null without an NVIDIA driver
  m["cuda"] = orNull(cudaRuntimeVersion());     // null in a build without CUDA
  m["nccl"] = orNull(ncclLibraryVersion());     // null in a build without NCCL
  m["libtorch"] = TORCH_VERSION;
  m["gloo"] = glooVersion();
  m["build_type"] = TPB_BUILD_TYPE;
  m["command"] = command;
  return m;
}

ResultsFile::ResultsFile(std::string path, nlohmann::json doc)
    : path_(std::move(path)), doc_(std::move(doc)) {}

ResultsFile ResultsFile::create(const std::string& path, nlohmann::json meta) {
  nlohmann::json doc = nlohmann::json::object();
  doc["schema"] = kResultsSchema;
  doc["meta"] = std::move(meta);
  doc["runs"] = nlohmann::json::array();
  doc["allreduce"] = nlohmann::json::array();
  return ResultsFile(path, std::move(doc));
}

ResultsFile ResultsFile::load(const std::string& path) {
  const std::string text = readWholeFile(path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    TPB_THROW(UsageError, "results file '" << path << "' is not JSON: " << e.what());
  }
  if (!doc.is_object()) {
    TPB_THROW(UsageError, "'" << path << "' is not a tpbench results file (top level is "
                              << doc.type_name() << ", not an object)");
  }
  const auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string()) {
    TPB_THROW(UsageError, "'" << path
                              << "' is not a tpbench results file (no \"schema\" string; expected '"
                              << kResultsSchema << "')");
  }
  if (schema->get<std::string>() != kResultsSchema) {
    TPB_THROW(UsageError, "'" << path << "' has schema '" << schema->get<std::string>()
                              << "'; this tpbench reads '" << kResultsSchema << "'");
  }
  const std::pair<const char*, bool> parts[] = {{"meta", false}, {"runs", true}, {"allreduce", true}};
  for (const auto& [key, isArray] : parts) {
    auto it = doc.find(key);
    if (it == doc.end()) {
      doc[key] = isArray ? nlohmann::json::array() : nlohmann::json::object();
    } else if (isArray ? !it->is_array() : !it->is_object()) {
      TPB_THROW(UsageError, "'" << path << "': \"" << key << "\" must be "
                                << (isArray ? "an array" : "an object") << ", found "
                                << it->type_name());
    }
  }
  return ResultsFile(path, std::move(doc));
}

void ResultsFile::addRun(nlohmann::json run) { doc_["runs"].push_back(std::move(run)); }

void ResultsFile::addAllreduce(nlohmann::json rec) {
  doc_["allreduce"].push_back(std::move(rec));
}

void ResultsFile::save() const {
  // Error messages recorded in runs may carry bytes that are not UTF-8: replace, don't throw.
  writeFileAtomic(path_, doc_.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void writeFileAtomic(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    TPB_THROW(Error, "cannot create '" << tmp << "' to write '" << path << "': " << errnoText(err));
  }
  auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    TPB_THROW(Error, "writing '" << path << "' failed at " << what << ": " << errnoText(err));
  };
  struct stat old {};
  if (::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
    if (::fchmod(fd, old.st_mode & 07777) != 0) fail("fchmod");
  }
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("fsync");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    TPB_THROW(Error, "writing '" << path << "' failed at close: " << errnoText(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    TPB_THROW(Error, "cannot rename '" << tmp << "' to '" << path << "': " << errnoText(err));
  }
  // Make the rename itself durable. Best effort: some file systems refuse fsync on directories.
  const int dfd = ::open(parentDir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void checkWritable(const std::string& flag, const std::string& path) {
  auto fail = [&](const std::string& reason) {
    TPB_THROW(UsageError, flag << ": cannot write '" << path << "': " << reason);
  };
  if (path.empty()) fail("the path is empty");
  namespace fs = std::filesystem;
  if (fs::path(path).filename().empty()) fail("the path names a directory");

  const std::string parent = parentDir(path);
  std::error_code ec;
  const fs::file_status st = fs::status(parent, ec);
  if (!fs::exists(st)) {
    ec.clear();
    fs::create_directories(parent, ec);
    if (ec) fail("cannot create directory '" + parent + "': " + ec.message());
  } else if (!fs::is_directory(st)) {
    fail("'" + parent + "' is not a directory");
  }

  struct stat target {};
  if (::stat(path.c_str(), &target) == 0) {
    if (S_ISDIR(target.st_mode)) fail("it is a directory");
    // Saving renames a new file over the target: never do that to a device or a FIFO.
    if (!S_ISREG(target.st_mode)) fail("it is not a regular file");
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) fail(errnoText(errno));
    ::close(fd);
  } else if (errno != ENOENT) {
    fail(errnoText(errno));
  }

  // save() creates path + ".tmp.<pid>" next to the target: try exactly that, then remove it.
  const std::string probe = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create a file in '" + parent + "': " + errnoText(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace tpb
