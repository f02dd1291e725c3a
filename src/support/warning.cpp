#include "support/warning.h"

#include <iostream>
#include <mutex>

namespace kjit {
namespace {

std::mutex& handler_mutex() {
  static std::mutex m;
  return m;
}
std::function<void(const std::string&)>& handler() {
  static std::function<void(const std::string&)> h;
  return h;
}

}  // namespace

void warn(const std::string& message) {
  std::function<void(const std::string&)> h;
  {
    std::lock_guard lock(handler_mutex());
    h = handler();
  }
  if (h) {
    h(message);
  } else {
    std::cerr << "kjit warning: " << message << '\n';
  }
}

void set_warning_handler(std::function<void(const std::string&)> h) {
  std::lock_guard lock(handler_mutex());
  handler() = std::move(h);
}

}  // namespace kjit
