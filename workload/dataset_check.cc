#include "workload/dataset_check.h"

#include <unistd.h>

#include "common/error.h"

namespace tpb {

void checkDatasetSpec(const std::string& flag, const std::string& spec) {
  if (spec == "synthetic") return;
  if (spec.rfind("mnist:", 0) != 0)
    TPB_THROW(UsageError, flag << ": unknown dataset '" << spec << "' (use synthetic or mnist:DIR)");
  const std::string dir = spec.substr(6);
  if (dir.empty()) TPB_THROW(UsageError, flag << ": mnist:DIR needs a directory");
  for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                        "t10k-labels-idx1-ubyte"}) {
    const std::string plain = dir + "/" + f;
    if (access(plain.c_str(), R_OK) != 0 && access((plain + ".gz").c_str(), R_OK) != 0)
      TPB_THROW(UsageError, flag << ": " << plain << " (or .gz) is missing or unreadable");
  }
}

}  // namespace tpb
