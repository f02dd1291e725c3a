#include "arguments.h"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstring>
#include <vector>

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

std::array<std::string, 4> result_typed_signatures(const char* qualname,
                                                   std::span<const Argument> arguments,
                                                   size_t positional, size_t arrays) {
  // A call given its outputs returns them, whatever the inputs: those take the general one.
  std::vector<Argument> typed(arguments.begin(), arguments.end());
  const auto outputs = std::find_if(typed.begin(), typed.end(), [](const Argument& a) {
    return std::strcmp(a.name, "outputs") == 0;
  });
  if (outputs != typed.end()) outputs->type = "None";
  auto with_arrays = [&](const std::string& type, const char* returns) {
    typed.at(arrays).type = type.c_str();
    return python_signature(qualname, typed, positional, returns);
  };
  const std::string sequence = "collections.abc.Sequence[";
  return {with_arrays(sequence + "float]", kNewArrayResults),
          with_arrays(sequence + kNumPyArray + "]", kNumPyResults),
          with_arrays(sequence + kArrayType + "]", kArrayResults),
          python_signature(qualname, arguments, positional, kAnyResults)};
}

}  // namespace kjit::python
