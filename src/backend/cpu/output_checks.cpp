#include "backend/cpu/output_checks.h"

#include <cstring>

#include "backend/cpu/host_allocator.h"

namespace kjit::cpu {
namespace {

std::string bytes_text(size_t written, size_t guard, const char* where) {
  return (written >= guard ? "at least " : "") + std::to_string(written) + " bytes " + where;
}

struct ByteRange {
  uintptr_t begin, end;
  bool overlaps(const ByteRange& o) const { return begin < o.end && o.begin < end; }
};

// The bytes an array's elements span, whatever the signs of its strides.
ByteRange bytes_of(const ArrayRef& a) {
  const int64_t item = static_cast<int64_t>(itemsize(a.dtype));
  int64_t low = 0, high = item;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.shape[d] == 0) return {0, 0};
    const int64_t reach = (a.shape[d] - 1) * a.strides[d] * item;
    (reach < 0 ? low : high) += reach;
  }
  const auto base = reinterpret_cast<uintptr_t>(a.data);
  return {base + static_cast<uintptr_t>(low), base + static_cast<uintptr_t>(high)};
}

// A copy that no other array of the launch shares memory with.
bool apart(const ByteRange& r, size_t o, std::span<const ArrayRef> inputs,
           std::span<const ArrayRef> outputs) {
  for (const ArrayRef& a : inputs) {
    if (a.data && r.overlaps(bytes_of(a))) return false;
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (k != o && outputs[k].data && r.overlaps(bytes_of(outputs[k]))) return false;
  }
  return true;
}

// The copies of the last launch on this thread, by output, kept for the next launch whose
// output of that place has the same size: a loop of calls into one small array then pays two
// copies and the guard check, not an allocation and a fill of the guards.
constexpr size_t kReusedCopies = 4;
constexpr size_t kMaxReusedCopyBytes = size_t{64} << 10;
struct ReusedCopy {
  std::shared_ptr<void> memory;
  GuardedBlock block;
};
thread_local ReusedCopy reused_copies[kReusedCopies];

}  // namespace

OutputChecks::OutputChecks(std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs)
    : data_(outputs.size()) {
  for (size_t o = 0; o < outputs.size(); ++o) {
    data_[o] = outputs[o].data;
    if (!outputs[o].data) continue;
    if (const std::optional<GuardedBlock> block = find_guarded_block(outputs[o].data)) {
      guarded_.push_back({o, *block, nullptr});
      continue;
    }
    const ByteRange range = bytes_of(outputs[o]);
    const size_t bytes = range.end - range.begin;
    if (bytes == 0 || bytes > kMaxCopiedOutputBytes || !apart(range, o, inputs, outputs)) {
      continue;
    }
    const bool reusable = o < kReusedCopies && bytes <= kMaxReusedCopyBytes;
    GuardedBlock block;
    if (reusable && reused_copies[o].memory && reused_copies[o].block.bytes == bytes) {
      block = reused_copies[o].block;  // its guards were checked and put back after its launch
    } else {
      // Guards as wide as a large block's: a tiny output with a grid rounded up to a large
      // threadgroup is overrun by far more than a quarter of its size.
      std::shared_ptr<void> copy = host_allocate(bytes, /*full_guards=*/true);
      block = *find_guarded_block(copy.get());
      if (reusable) {
        reused_copies[o] = {std::move(copy), block};
      } else {
        copies_.push_back(std::move(copy));
      }
    }
    std::memcpy(block.data, outputs[o].data, bytes);  // the kernel may read what it updates
    guarded_.push_back({o, block, outputs[o].data});
    data_[o] = block.data;
  }
}

OutputChecks::~OutputChecks() {
  if (restored_) return;
  // The launch did not finish (an exception on its way): the outputs still get what the kernel
  // wrote, and the guards are put back for the next launch.
  for (const Guarded& g : guarded_) {
    if (g.copied_from) std::memcpy(g.copied_from, g.block.data, g.block.bytes);
    if (!guards_near_data_intact(g.block)) restore_guards(g.block);
  }
}

std::string OutputChecks::restore(std::span<const std::string> names) {
  restored_ = true;
  std::string report;
  bool past_guard = false;
  for (const Guarded& g : guarded_) {
    if (g.copied_from) std::memcpy(g.copied_from, g.block.data, g.block.bytes);
    if (guards_near_data_intact(g.block)) continue;
    const GuardDamage damage = restore_guards(g.block);
    if (!damage.any()) continue;  // put back as it was (an output given twice)
    past_guard = past_guard || damage.before >= g.block.front || damage.after >= g.block.back;
    report += report.empty() ? "" : "; ";
    report += "outputs[" + std::to_string(g.output) + "] ('" + names[g.output] + "') was written ";
    if (damage.before) report += bytes_text(damage.before, g.block.front, "before its start");
    if (damage.before && damage.after) report += " and ";
    if (damage.after) report += bytes_text(damage.after, g.block.back, "past its end");
  }
  if (report.empty()) return report;
  report +=
      ". The kernel wrote out of its outputs' bounds (a grid rounded up to the threadgroup size "
      "needs a bounds check); kjit put back the guard space it keeps around them";
  if (past_guard) report += ", but memory beyond the guard may be damaged";
  return report;
}

}  // namespace kjit::cpu
