#include "backend/cuda/library_search.h"

#include <cstdlib>
#include <mutex>

namespace kjit::cuda {
namespace {

std::mutex& mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& added() {
  static std::vector<std::string> dirs;
  return dirs;
}

}  // namespace

void add_library_search_dir(const std::string& dir) {
  std::lock_guard lock(mutex());
  added().push_back(dir);
}

std::vector<std::string> library_search_dirs() {
  std::vector<std::string> dirs;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = std::getenv(var); v && *v) {
      dirs.push_back(std::string(v) + "/lib64");
      dirs.push_back(std::string(v) + "/lib");
    }
  }
  {
    std::lock_guard lock(mutex());
    dirs.insert(dirs.end(), added().begin(), added().end());
  }
  dirs.push_back("/usr/local/cuda/lib64");
  return dirs;
}

}  // namespace kjit::cuda
