// worker/error_text.h — what a rank says of the exception that ended it: one line. LibTorch's
// errors (c10::Error) carry a C++ stack dump in what(); a user gets the message without it, and an
// allocation LibTorch could not make is said as such, with its size.
#pragma once

#include <exception>
#include <string>

namespace tpb {

// The exception's message on one line (line breaks become spaces): a c10::Error's without its
// backtrace ("Exception raised from ...", "frame #0: ..."); an allocation LibTorch could not make
// as "out of memory: LibTorch could not allocate 46.9 GiB (<its message>)".
std::string rankErrorText(const std::exception& e);

// The same for a message already taken from an exception.
std::string rankErrorText(const std::string& what);

}  // namespace tpb
