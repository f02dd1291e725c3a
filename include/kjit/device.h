// Where arrays live and kernels run.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kjit {

enum class DeviceType { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static Device cpu() { return {DeviceType::CPU, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::CUDA, index}; }
  /// Parses "cpu", "cuda" or "cuda:N"; throws kjit::ValueError naming |param| otherwise.
  static Device parse(std::string_view text, std::string_view param = "device");

  std::string str() const;
  bool operator==(const Device&) const = default;
};

/// Devices that can run kernels now (the CPU is always first).
std::vector<Device> devices();

/// The GPU when one works, else the CPU.
Device default_device();

}  // namespace kjit
