# Writes OUTPUT from the headers in PRELUDE_DIR: a C++ file defining kjit::codegen::prelude_file(name), which returns the text of
# each prelude header. Lines that include another prelude header are blanked: the library
# concatenates the files itself, in order, and the line count stays the same.
file(GLOB FILES "${PRELUDE_DIR}/*.h")
list(SORT FILES)
set(body "// Generated from prelude/*.h. Do not edit.\n#include <string_view>\n\n")
string(APPEND body "namespace kjit::codegen {\n\nstd::string_view prelude_file(std::string_view name) {\n")
foreach(file IN LISTS FILES)
  file(READ "${file}" text)
  string(REGEX REPLACE "#include \"[a-z_]+\\.h\"" "" text "${text}")
  get_filename_component(name "${file}" NAME)
  string(APPEND body "  if (name == \"${name}\") {\n    return R\"kjit_prelude(${text})kjit_prelude\";\n  }\n")
endforeach()
string(APPEND body "  return {};\n}\n\n}  // namespace kjit::codegen\n")
file(WRITE "${OUTPUT}.tmp" "${body}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
