# The workbench and the executables reach the engine only through its facade (DESIGN §1): every engine
# header included under widgets/ and app/ must be engine/session/* or a plain data header; the CLI's
# headers are for the executables alone. Needs no build.
# Run: cmake -DSOURCE_DIR=<repo> -P facade_includes.cmake (the ctest facade_includes).
set(allowed_everywhere
  "^engine/session/[^/]+\\.h$"
  "^engine/records/[^/]+\\.h$"
  "^engine/config/train_config\\.h$"
  "^engine/config/config_key\\.h$"
  "^engine/config/component_options\\.h$"
  "^engine/config/component_info\\.h$"
  "^engine/config/option_group\\.h$"
  "^engine/config/sweep_grid\\.h$"
  "^engine/core/progress\\.h$"
  "^engine/core/error\\.h$"
  "^engine/core/version\\.h$"
  "^engine/data/dataset_summary\\.h$"
  "^engine/eval/metric_key\\.h$"
  "^engine/eval/metrics\\.h$")
# Header -> the only files (relative to SOURCE_DIR) that may include it.
set(allowed_in_engine/cli/xmc_cli.h "^app/xmc_main\\.cpp$")
set(allowed_in_engine/core/file_size_limit.h "^app/workbench_main\\.cpp$")  # process set-up, first thing in main
set(allowed_in_engine/core/write_failure.h "^widgets/runs/report_export\\.cpp$")  # why an export could not be written
set(allowed_in_engine/core/memory_budget.h "^widgets/live/launch_form\\.cpp$")  # what memory_mb 0 stands for on this machine
set(allowed_in_engine/cli/command_context.h "^app/[^/]+$")  # `xmc report` registers itself with the CLI

file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}"
  "${SOURCE_DIR}/widgets/*.h" "${SOURCE_DIR}/widgets/*.cpp" "${SOURCE_DIR}/app/*.h" "${SOURCE_DIR}/app/*.cpp")
if(NOT sources)
  message(FATAL_ERROR "no sources under ${SOURCE_DIR}/widgets or ${SOURCE_DIR}/app: wrong SOURCE_DIR?")
endif()
set(include_line "^[ \t]*#[ \t]*include[ \t]*[\"<]engine/")
set(violations "")
foreach(source IN LISTS sources)
  file(STRINGS "${SOURCE_DIR}/${source}" lines REGEX "${include_line}")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">].*$" "\\1" header "${line}")
    set(ok FALSE)
    foreach(pattern IN LISTS allowed_everywhere)
      if(header MATCHES "${pattern}")
        set(ok TRUE)
      endif()
    endforeach()
    if(DEFINED "allowed_in_${header}" AND source MATCHES "${allowed_in_${header}}")
      set(ok TRUE)
    endif()
    if(NOT ok)
      string(APPEND violations "\n  ${source}: ${header}")
    endif()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "widgets/ and app/ must use the engine through engine/session/* and plain data headers "
                      "(tests/layout/facade_includes.cmake lists them); these include more:${violations}")
endif()
list(LENGTH sources count)
message(STATUS "facade includes: ${count} files checked, all through the Session and plain data headers")
