// Where to look for CUDA libraries that are not on the loader's path: CUDA_HOME, CUDA_PATH, the
// NVIDIA wheels' directories (added by the Python package) and /usr/local/cuda.
#pragma once

#include <string>
#include <vector>

namespace kjit::cuda {

/// Adds a directory to search (before /usr/local/cuda and the loader's defaults).
void add_library_search_dir(const std::string& dir);

/// The directories to search, in order.
std::vector<std::string> library_search_dirs();

}  // namespace kjit::cuda
