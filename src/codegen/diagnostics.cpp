#include "codegen/diagnostics.h"

#include <kjit/errors.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <vector>

#include "codegen/source.h"

namespace kjit::codegen {
namespace {

std::string line_of(std::string_view text, int line) {
  size_t start = 0;
  for (int current = 1; current < line; ++current) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  size_t end = text.find('\n', start);
  return std::string(
      text.substr(start, (end == std::string_view::npos ? text.size() : end) - start));
}

// The line number and message of a diagnostic about |file|, or 0 when |line| is not one.
int parse(const std::string& line, const std::string& file, std::string* message) {
  if (line.rfind(file, 0) != 0) return 0;
  std::string rest = line.substr(file.size());
  size_t after = 0;
  int number = 0;
  if (rest.size() > 1 && rest[0] == ':') {  // GCC: file:line:col: kind: text
    number = std::atoi(rest.c_str() + 1);
    size_t c1 = rest.find(':', 1);
    size_t c2 = c1 == std::string::npos ? c1 : rest.find(':', c1 + 1);
    after = c2 == std::string::npos ? std::string::npos : c2 + 1;
  } else if (rest.size() > 1 && rest[0] == '(') {  // NVRTC: file(line): kind: text
    number = std::atoi(rest.c_str() + 1);
    size_t close = rest.find("):");
    after = close == std::string::npos ? std::string::npos : close + 2;
  }
  if (number <= 0 || after == std::string::npos) return 0;
  *message = rest.substr(after);
  while (!message->empty() && message->front() == ' ') message->erase(0, 1);
  return number;
}

}  // namespace

MappedDiagnostics map_diagnostics(const std::string& log, const KernelSpec& spec) {
  MappedDiagnostics out;
  std::stringstream in(log);
  std::string line;
  auto add = [&](const char* label, int number, std::string_view text, const std::string& what) {
    out.text += std::string(label) + " line " + std::to_string(number) + ": " + what + "\n";
    out.text += "    " + std::to_string(number) + " | " + line_of(text, number) + "\n";
    ++out.count;
  };
  // GCC reports an error inside kjit's own code after the user's lines that led there ("required
  // from here"): those wait for the error, and are reported with it. Clang reports the error
  // first, then the user's lines in notes ("in instantiation of ... requested here"): the error
  // waits for the first of them.
  std::vector<std::tuple<const char*, int, std::string_view>> waiting;
  auto release_held = [&](const std::string& what) {
    for (const auto& [label, number, text] : waiting) add(label, number, text, what);
    waiting.clear();
  };
  std::string kjit_error;  // clang's, until a note names the user's line
  // The prelude's static assertions are written for users (as_type of two sizes, a tile of 3
  // threads); other errors are said to be in kjit's code. Their message alone when no line of
  // the user's led there.
  auto is_assertion = [](const std::string& what) {
    return what.find("static assertion failed") != std::string::npos ||
           what.find("static_assert failed") != std::string::npos;
  };
  auto release_kjit_error = [&] {
    if (is_assertion(kjit_error)) {
      out.text += kjit_error + "\n";
      ++out.count;
    }
    kjit_error.clear();
  };
  while (std::getline(in, line)) {
    const bool users_line = line.rfind(kSourceFile, 0) == 0 || line.rfind(kHeaderFile, 0) == 0;
    if (!users_line) {
      const size_t error = line.find(": error: ");
      if (error == std::string::npos) continue;
      release_kjit_error();
      std::string what = line.substr(error + 2);
      if (!is_assertion(what)) what += " (in kjit's code this line uses)";
      if (waiting.empty()) {
        kjit_error = std::move(what);
      } else {
        release_held(what);
      }
      continue;
    }
    for (auto [file, label, text] :
         {std::tuple{kSourceFile, "source", std::string_view(spec.source)},
          std::tuple{kHeaderFile, "header", std::string_view(spec.header)}}) {
      std::string message;
      int number = parse(line, file, &message);
      if (number == 0) continue;
      if (message.rfind("note", 0) == 0) {
        if (!kjit_error.empty() && message.find("requested here") != std::string::npos) {
          add(label, number, text, kjit_error);
          kjit_error.clear();
        }
        continue;
      }
      if (message.rfind("remark", 0) == 0 || message.rfind("warning", 0) == 0) continue;
      if (message.rfind("required from", 0) == 0) {
        waiting.emplace_back(label, number, text);
        continue;
      }
      release_kjit_error();
      release_held("required from here");  // they led to this error, in the user's own text
      add(label, number, text, message);
    }
  }
  release_kjit_error();
  release_held("required from here");  // no error followed
  return out;
}

void assert_may_compile(const KernelSpec& spec) {
  if (const char* a = std::getenv("KJIT_ASSERT_NO_COMPILE"); a && std::strcmp(a, "1") == 0) {
    throw std::runtime_error("kjit: kernel '" + spec.name +
                             "' needs compiling but KJIT_ASSERT_NO_COMPILE=1");
  }
}

void throw_compile_error(const KernelSpec& spec, const char* target, const std::string& log,
                         const std::string& source) {
  MappedDiagnostics mapped = map_diagnostics(log, spec);
  std::string message = "[kjit." + std::string(spec.api()) + "] kernel '" + spec.name +
                        "' failed to compile for " + target + ":\n";
  message += mapped.count ? mapped.text : log.substr(0, 4000);
  throw CompileError(message, mapped.count ? mapped.text : log, source);
}

}  // namespace kjit::codegen
