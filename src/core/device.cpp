#include <kjit/device.h>
#include <kjit/errors.h>

#include <charconv>
#include <string>

#include "core/backend.h"

namespace kjit {

Device Device::parse(std::string_view text, std::string_view param) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.substr(0, 5) == "cuda:") {
    std::string_view digits = text.substr(5);
    int index = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0) {
      return cuda(index);
    }
  }
  throw ValueError(std::string(param) + ": expected 'cpu', 'cuda' or 'cuda:N', got '" +
                   std::string(text) + "'");
}

std::string Device::str() const {
  return type == DeviceType::CPU ? "cpu" : "cuda:" + std::to_string(index);
}

std::vector<Device> devices() {
  std::vector<Device> out = {Device::cpu()};
  const int gpus = backend_for(DeviceType::CUDA).device_count();
  for (int i = 0; i < gpus; ++i) out.push_back(Device::cuda(i));
  return out;
}

Device default_device() {
  return backend_for(DeviceType::CUDA).device_count() > 0 ? Device::cuda(0) : Device::cpu();
}

}  // namespace kjit
