# A facade include folder: links to a chosen set of engine headers and to every engine header they include,
# and to nothing else. A target whose only engine include folder is a facade cannot include the rest of
# the engine: `#include "engine/train/trainer.h"` in a widget fails to compile. The links are made again at
# each configure, and a change to any staged header re-runs the configure, so a header that starts to
# include one more is followed at once.
#
#   xmc_stage_facade(<folder> ROOTS <engine/...h>... FORBID <regex>)
#
# ROOTS are paths as written in #include lines ("engine/session/session.h"), looked up in the source tree,
# then in ${PROJECT_BINARY_DIR}/generated. The configure stops when a staged header's path matches FORBID,
# naming the chain of includes that reached it.
function(xmc_stage_facade folder)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "FORBID" "ROOTS")
  file(REMOVE_RECURSE "${folder}")
  set(pending ${arg_ROOTS})
  set(staged "")
  foreach(root IN LISTS arg_ROOTS)
    set("reached_by_${root}" "")
  endforeach()
  while(pending)
    list(POP_FRONT pending header)
    if(header IN_LIST staged)
      continue()
    endif()
    if(arg_FORBID AND header MATCHES "${arg_FORBID}")
      message(FATAL_ERROR "the facade in ${folder} would expose ${header}, reached by: "
                          "${reached_by_${header}}. Keep that include out of the facade's headers.")
    endif()
    if(EXISTS "${PROJECT_SOURCE_DIR}/${header}")
      set(file "${PROJECT_SOURCE_DIR}/${header}")
    elseif(EXISTS "${PROJECT_BINARY_DIR}/generated/${header}")
      set(file "${PROJECT_BINARY_DIR}/generated/${header}")
    else()
      message(FATAL_ERROR "facade header ${header} not found (reached by: ${reached_by_${header}})")
    endif()
    list(APPEND staged "${header}")
    get_filename_component(link_dir "${folder}/${header}" DIRECTORY)
    file(MAKE_DIRECTORY "${link_dir}")
    file(CREATE_LINK "${file}" "${folder}/${header}" SYMBOLIC)
    set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"engine/")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" included "${line}")
      if(NOT included IN_LIST staged)
        list(APPEND pending "${included}")
        if(NOT DEFINED "reached_by_${included}")
          set("reached_by_${included}" "${reached_by_${header}} ${header}")
        endif()
      endif()
    endforeach()
  endwhile()
  list(LENGTH staged count)
  message(STATUS "facade ${folder}: ${count} engine headers")
endfunction()

# A folder holding only a link to <source folder>, so that `#include "widgets/x.h"` resolves without
# putting the whole source tree (and so every engine header) on the include path.
function(xmc_stage_source_folder folder name)
  file(REMOVE_RECURSE "${folder}")
  file(MAKE_DIRECTORY "${folder}")
  file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${name}" "${folder}/${name}" SYMBOLIC)
endfunction()
