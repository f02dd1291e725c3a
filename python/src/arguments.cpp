#include "arguments.h"

#include <nanobind/stl/string.h>

#include <cstring>

namespace kjit::python {

PyObject* text(const char* value) { return PyUnicode_InternFromString(value); }

std::string python_signature(const char* qualname, std::span<const Argument> arguments,
                             size_t positional, const char* returns) {
  const char* dot = std::strrchr(qualname, '.');
  std::string out = std::string("def ") + (dot ? dot + 1 : qualname) + "(";
  std::string separator;
  if (dot) {  // a method
    out += "self";
    separator = ", ";
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (i == positional) {  // the rest are keywords only
      out += separator + "*";
      separator = ", ";
    }
    const Argument& a = arguments[i];
    out += separator + a.name + ": " + a.type;
    if (a.default_value) {
      out += " = " + (a.shown_default ? std::string(a.shown_default)
                                      : nb::cast<std::string>(nb::repr(a.default_value)));
    }
    separator = ", ";
  }
  return out + ") -> " + returns;
}

}  // namespace kjit::python
