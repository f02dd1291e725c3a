# Writes OUTPUT, a C++ file defining kjit::codegen::prelude_entry(name): the text of each entry
# header PRELUDE_DIR/entry/<name>.h with its includes of other prelude headers replaced by their
# text, recursively and once each, as the compiler would read them (every prelude header is
# #pragma once). System includes (<coroutine>) stay as they are.

# Script mode starts with old policies; IN_LIST needs the new ones.
cmake_policy(VERSION 3.22)

# The text of PRELUDE_DIR/|path| with its prelude includes expanded, in |out|; empty when an
# earlier include already brought it in. The paths seen so far are in the global property
# kjit_prelude_seen.
function(expand_prelude_header path out)
  get_property(seen GLOBAL PROPERTY kjit_prelude_seen)
  if(path IN_LIST seen)
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY kjit_prelude_seen "${path}")
  if(NOT EXISTS "${PRELUDE_DIR}/${path}")
    message(FATAL_ERROR "prelude: no header ${path}")
  endif()
  file(READ "${PRELUDE_DIR}/${path}" text)
  # A leading newline lets every directive be found as one that starts a line.
  string(PREPEND text "\n")
  string(REPLACE "\n#pragma once\n" "\n" text "${text}")
  set(expanded "")
  while(TRUE)
    string(FIND "${text}" "\n#include \"" at)
    if(at EQUAL -1)
      break()
    endif()
    math(EXPR line_start "${at} + 1")
    string(SUBSTRING "${text}" 0 ${line_start} before)
    string(APPEND expanded "${before}")
    math(EXPR name_start "${at} + 11")
    string(SUBSTRING "${text}" ${name_start} -1 text)
    string(FIND "${text}" "\"" name_end)
    string(SUBSTRING "${text}" 0 ${name_end} included)
    string(FIND "${text}" "\n" line_end)
    # Keep the newline that ends the include line: the next directive is found after it.
    string(SUBSTRING "${text}" ${line_end} -1 text)
    expand_prelude_header("${included}" included_text)
    string(APPEND expanded "${included_text}")
    # The included text ends its last line; drop the include line's own newline after it.
    string(SUBSTRING "${text}" 1 -1 text)
    string(PREPEND text "\n")
  endwhile()
  string(APPEND expanded "${text}")
  string(SUBSTRING "${expanded}" 1 -1 expanded)
  if(NOT expanded MATCHES "\n$")
    string(APPEND expanded "\n")
  endif()
  set(${out} "${expanded}" PARENT_SCOPE)
endfunction()

file(GLOB ENTRIES "${PRELUDE_DIR}/entry/*.h")
list(SORT ENTRIES)
set(body "// Generated from prelude/entry/*.h and the headers they include. Do not edit.\n")
string(APPEND body "#include <string_view>\n\nnamespace kjit::codegen {\n\n")
string(APPEND body "std::string_view prelude_entry(std::string_view name) {\n")
foreach(entry IN LISTS ENTRIES)
  get_filename_component(name "${entry}" NAME_WE)
  set_property(GLOBAL PROPERTY kjit_prelude_seen "")
  expand_prelude_header("entry/${name}.h" text)
  string(APPEND body "  if (name == \"${name}\") {\n    return R\"kjit_prelude(${text})kjit_prelude\";\n  }\n")
endforeach()
string(APPEND body "  return {};\n}\n\n}  // namespace kjit::codegen\n")
file(WRITE "${OUTPUT}.tmp" "${body}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
