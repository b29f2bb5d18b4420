// Errors for every layer: exceptions that carry "[file:line]", and the checks that throw them.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tpb {

// Any failure at run time. The message starts with "[file:line]" of the check that fired.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the user (a flag, a range, a file name). main() maps it to exit code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// A blocking communication call waited longer than its timeout.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename E>
[[noreturn]] inline void throwAt(const char* file, int line, const std::string& msg) {
  const char* base = file;
  for (const char* p = file; *p; ++p) {
    if (*p == '/') base = p + 1;
  }
  throw E("[" + std::string(base) + ":" + std::to_string(line) + "] " + msg);
}
}  // namespace detail

}  // namespace tpb

// TPB_THROW(tpb::Error, "x is " << x): builds the message with a stream.
#define TPB_THROW(Type, msg_expr)                                     \
  do {                                                                \
    std::ostringstream tpb_oss_;                                      \
    tpb_oss_ << msg_expr;                                             \
    ::tpb::detail::throwAt<Type>(__FILE__, __LINE__, tpb_oss_.str()); \
  } while (0)

#define TPB_CHECK(cond, msg_expr)                                          \
  do {                                                                     \
    if (!(cond)) TPB_THROW(::tpb::Error, "check failed: " #cond ": " << msg_expr); \
  } while (0)

// Checks a POSIX call that returns -1 and sets errno.
#define TPB_CHECK_ERRNO(expr, what)                                            \
  do {                                                                         \
    if ((expr) == -1) {                                                        \
      int tpb_errno_ = errno;                                                  \
      TPB_THROW(::tpb::Error, what << ": " << std::strerror(tpb_errno_));      \
    }                                                                          \
  } while (0)
