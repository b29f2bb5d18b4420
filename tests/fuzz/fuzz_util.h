// tests/fuzz/fuzz_util.h — what every libFuzzer target of tpbench's readers shares.
//
// A target feeds one input to a reader the way the command line does (most readers take a path,
// so the bytes are written to a file first), lets tpb::UsageError pass — the expected refusal of
// bad input — and lets everything else escape: an uncaught exception, a crash or a sanitizer
// report is a finding. A refusal must also say what the user has to fix: checkRefusal() turns a
// UsageError that does not name the file (or flag, or variable) into a finding too.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace tpb::fuzz {

// A private directory for this fuzzing process, removed at exit (libFuzzer's -max_total_time
// and -runs end through exit()). A crash leaves it behind in TMPDIR: one small directory.
inline const std::filesystem::path& scratchDir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tpb-fuzz-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
      std::perror("tpb fuzz: mkdtemp");
      std::abort();
    }
    std::atexit([] { std::filesystem::remove_all(scratchDir()); });
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

// Writes `bytes` to scratchDir()/name (replacing what the previous input left) and returns its path.
inline std::string writeInput(const std::string& name, std::string_view bytes) {
  const std::string path = (scratchDir() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "tpb fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

// The parts of an input that holds several files, split at "\n----\n". No JSON document holds
// that text (a raw newline cannot stand inside a JSON string), so the seeds stay valid files.
inline std::vector<std::string_view> splitParts(const std::uint8_t* data, std::size_t size, std::size_t maxParts) {
  constexpr std::string_view kSeparator = "\n----\n";
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < maxParts) {
    const auto at = rest.find(kSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(rest.substr(0, at));
    rest.remove_prefix(at + kSeparator.size());
  }
  parts.push_back(rest);
  return parts;
}

// A refusal says what to fix: one that contains none of `names` (a file's path, a flag, a
// variable's name) is a finding. Control characters quoted from the input are not: every sink
// that prints a refusal shows them as escapes (tpb::printable, common/text_escape.h; main's
// error line, rank and launcher lines), which scripts/fuzz-cli-check.sh checks on the real CLI.
inline void checkRefusal(const char* message, const std::vector<std::string>& names) {
  const std::string_view text(message);
  for (const auto& n : names)
    if (!n.empty() && text.find(n) != std::string_view::npos) return;
  std::fprintf(stderr, "tpb fuzz: a refusal names none of the inputs:\n  %s\n", message);
  std::abort();
}

}  // namespace tpb::fuzz
