// tests/file_util.h — small helpers several test files share: whole-file text I/O, and the
// message of an expected tpb::UsageError.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace tpb::test {

inline std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void writeText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Runs f, expects tpb::UsageError and returns its message (a test failure, and "", otherwise).
template <typename F>
std::string usageErrorOf(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected tpb::UsageError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected tpb::UsageError, nothing was thrown";
  return "";
}

// Expects f to throw tpb::UsageError whose message contains every one of `needles`.
template <typename F>
void expectUsageError(F&& f, const std::vector<std::string>& needles) {
  const std::string msg = usageErrorOf(std::forward<F>(f));
  for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
}

}  // namespace tpb::test
