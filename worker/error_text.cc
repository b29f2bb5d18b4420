#include "worker/error_text.h"

#include <c10/util/Exception.h>

#include <cstdio>
#include <regex>


namespace tpb {

std::string rankErrorText(const std::string& what) {
  // c10's what() goes on after its message with "Exception raised from" and the frames.
  std::string text = what.substr(0, what.find("\nException raised from"));
  text = text.substr(0, text.find("\nframe #"));
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  // CPU: "DefaultCPUAllocator: not enough memory: you tried to allocate 50331648000 bytes." (or
  // "can't allocate memory: you tried to allocate ...", LibTorch 2.x).
  // CUDA: "CUDA out of memory. Tried to allocate 46.88 GiB ..." (already a size in words).
  static const std::regex cpu(R"(you tried to allocate (\d{1,19}) bytes)");
  std::smatch m;
  if (std::regex_search(text, m, cpu)) {
    const double bytes = std::stod(m[1].str());
    char size[64];
    std::snprintf(size, sizeof size, bytes >= 1073741824.0 ? "%.1f GiB" : "%.1f MiB",
                  bytes / (bytes >= 1073741824.0 ? 1073741824.0 : 1048576.0));
    return std::string("out of memory: LibTorch could not allocate ") + size + " (" + text + ")";
  }
  return text;
}

std::string rankErrorText(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return rankErrorText(c10->what_without_backtrace());
  return rankErrorText(std::string(e.what()));
}

}  // namespace tpb
