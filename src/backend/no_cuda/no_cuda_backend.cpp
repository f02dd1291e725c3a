#include "backend/no_cuda/no_cuda_backend.h"

#include <kjit/errors.h>

namespace kjit::no_cuda {
namespace {

constexpr const char* kReason = "kjit was built without CUDA support (KJIT_WITH_CUDA=OFF)";

class NoCudaBackend final : public Backend {
 public:
  std::string unavailable_reason() const override { return kReason; }
  int device_count() const override { return 0; }
  int max_threads_per_group(int) const override { return 1024; }
  std::vector<StatusEntry> status() const override {
    return {{"driver", std::monostate()},
            {"driver_version", int64_t{0}},
            {"driver_error", kReason},
            {"nvrtc", std::monostate()},
            {"nvrtc_version", std::monostate()},
            {"nvrtc_error", kReason},
            {"devices", StatusEntry::Devices()},
            {"unavailable", kReason},
            {"absent", true}};
  }
  [[noreturn]] static void refuse() { throw ValueError(std::string("CUDA: ") + kReason); }
  std::shared_ptr<const Program> build(std::shared_ptr<const KernelSpec>,
                                       std::shared_ptr<const codegen::GeneratedSource>,
                                       int) const override {
    refuse();
  }
  std::shared_ptr<const Program> load(std::shared_ptr<const KernelSpec>, int) const override {
    refuse();
  }
  void build_for_architecture(const KernelSpec&, const codegen::GeneratedSource&,
                              int) const override {
    refuse();
  }
  std::shared_ptr<void> allocate(int, size_t, uintptr_t) const override { refuse(); }
  MemoryLease lease(int, size_t, uintptr_t) const override { refuse(); }
  void end_lease(void*) const noexcept override {}
  void copy(void*, const void*, size_t, int, uintptr_t, bool, bool) const override { refuse(); }
  void fill(void*, const void*, size_t, size_t, int, uintptr_t) const override { refuse(); }
  void synchronize(int, uintptr_t) const override { refuse(); }
  cache::MemoryUsage memory_usage() const override { return {}; }
  void clear_memory() const override {}
  void add_library_search_dir(const std::string&) const override {}
};

}  // namespace

const Backend& backend() {
  static const NoCudaBackend* b = new NoCudaBackend();
  return *b;
}

}  // namespace kjit::no_cuda
