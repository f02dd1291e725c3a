#include "support/env_bytes.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "support/warning.h"

namespace kjit {
namespace {

// The value of |name| as a number of |what| (for the warning) of at least |minimum|.
uint64_t number_from_env(const char* name, const char* what, uint64_t fallback, uint64_t minimum) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  // Digits only: strtoull would also take leading spaces and a minus sign (wrapping around).
  if (errno == 0 && end && *end == '\0' && std::isdigit(static_cast<unsigned char>(text[0])) &&
      v >= minimum) {
    return v;
  }
  warn(std::string(name) + "='" + text + "' is not a number of " + what +
       (minimum ? " of at least " + std::to_string(minimum) : std::string()) +
       "; using the default (" + std::to_string(fallback) + ")");
  return fallback;
}

}  // namespace

uint64_t bytes_from_env(const char* name, uint64_t fallback, uint64_t minimum) {
  return number_from_env(name, "bytes", fallback, minimum);
}

uint64_t count_from_env(const char* name, uint64_t fallback, uint64_t minimum) {
  return number_from_env(name, "entries", fallback, minimum);
}

}  // namespace kjit
