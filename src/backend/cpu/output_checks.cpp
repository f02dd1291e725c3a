#include "backend/cpu/output_checks.h"

namespace kjit::cpu {
namespace {

std::string bytes_text(size_t written, size_t guard, const char* where) {
  return (written >= guard ? "at least " : "") + std::to_string(written) + " bytes " + where;
}

}  // namespace

OutputChecks::OutputChecks(std::span<const ArrayRef> outputs) {
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!outputs[o].data) continue;
    if (const std::optional<GuardedBlock> block = find_guarded_block(outputs[o].data)) {
      guarded_.push_back({o, *block});
    }
  }
}

std::string OutputChecks::restore(std::span<const std::string> names) {
  std::string report;
  bool past_guard = false;
  for (const Guarded& g : guarded_) {
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
