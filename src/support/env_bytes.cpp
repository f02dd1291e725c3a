#include "support/env_bytes.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "support/warning.h"

namespace kjit {

uint64_t bytes_from_env(const char* name, uint64_t fallback, uint64_t minimum) {
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
  warn(std::string(name) + "='" + text + "' is not a number of bytes" +
       (minimum ? " of at least " + std::to_string(minimum) : std::string()) +
       "; using the default (" + std::to_string(fallback) + ")");
  return fallback;
}

}  // namespace kjit
