// Warnings from the library (e.g. an unusable cache directory). The Python module routes them to
// Python's warnings module; C++ programs get them on stderr unless they set a handler.
#pragma once

#include <functional>
#include <string>

namespace kjit {

void warn(const std::string& message);
void set_warning_handler(std::function<void(const std::string&)> handler);

}  // namespace kjit
