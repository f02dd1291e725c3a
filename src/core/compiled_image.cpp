#include "core/compiled_image.h"

#include <cctype>
#include <cstdint>
#include <cstring>

namespace kjit {
namespace {

constexpr std::string_view kElfMagic =
    "\x7f"
    "ELF";
constexpr uint32_t kFatbinMagic = 0xba55ed50;  // the first word of a fatbin, little-endian

bool is_ptx_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%';
}

}  // namespace

std::optional<ImageKind> image_kind(std::string_view image) {
  if (image.starts_with(kElfMagic)) return ImageKind::Cubin;
  if (image.size() >= 4) {
    uint32_t word = 0;
    std::memcpy(&word, image.data(), 4);
    if (word == kFatbinMagic) return ImageKind::Fatbin;
  }
  // Text, perhaps NUL-terminated as C strings hold it.
  while (!image.empty() && image.back() == '\0') image.remove_suffix(1);
  if (image.find('\0') != std::string_view::npos) return std::nullopt;
  if (ptx_entries(image).empty()) return std::nullopt;
  return ImageKind::Ptx;
}

std::vector<std::string> ptx_entries(std::string_view ptx) {
  constexpr std::string_view kEntry = ".entry";
  std::vector<std::string> names;
  for (size_t at = ptx.find(kEntry); at != std::string_view::npos; at = ptx.find(kEntry, at + 1)) {
    size_t end = at + kEntry.size();
    const bool word_before = at > 0 && !std::isspace(static_cast<unsigned char>(ptx[at - 1]));
    if (word_before || end >= ptx.size() || !std::isspace(static_cast<unsigned char>(ptx[end]))) {
      continue;  // part of a longer word
    }
    while (end < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[end]))) ++end;
    const size_t start = end;
    while (end < ptx.size() && is_ptx_name_char(ptx[end])) ++end;
    if (end > start) names.emplace_back(ptx.substr(start, end - start));
  }
  return names;
}

}  // namespace kjit
