// The name a conversion's errors give the argument they are about.
#pragma once

#include <kjit/kjit.h>

#include <string>

namespace kjit::python {

/// Names the parameter a conversion is about, e.g. "[kjit.metal_kernel] kernel 'k': inputs[0]
/// ('x')". The text is made only when an error is raised, so a call that goes well builds no
/// strings. A Param refers to its parent and labels: it lives no longer than they do.
class Param {
 public:
  Param(const char* text) : text_(text) {}           // NOLINT: a literal name converts implicitly
  Param(const std::string& text) : owned_(&text) {}  // NOLINT
  /// The prefix of every message about a kernel's call.
  static Param of_kernel(const Kernel& kernel) {
    Param p("");
    p.kernel_ = &kernel;
    return p;
  }
  /// |name| inside this one ("inputs" after the kernel's prefix).
  Param operator/(const char* name) const {
    Param p(name);
    p.parent_ = this;
    return p;
  }
  /// Element |i|, optionally labelled: "inputs[0] ('x')".
  Param at(size_t i, const std::string* label = nullptr) const {
    Param p("");
    p.parent_ = this;
    p.index_ = static_cast<long>(i);
    p.label_ = label;
    return p;
  }
  std::string str() const;

 private:
  const Param* parent_ = nullptr;
  const Kernel* kernel_ = nullptr;
  const char* text_ = "";
  const std::string* owned_ = nullptr;
  long index_ = -1;
  const std::string* label_ = nullptr;
};

}  // namespace kjit::python
