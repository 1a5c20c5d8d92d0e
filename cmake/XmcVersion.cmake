# The code version recorded with every run: `git describe`, or the project version outside a checkout.
find_package(Git QUIET)
set(XMC_CODE_VERSION "${PROJECT_VERSION}")
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" describe --always --dirty --tags
                  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
                  OUTPUT_VARIABLE _xmc_git_describe OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _xmc_git_rc ERROR_QUIET)
  if(_xmc_git_rc EQUAL 0 AND _xmc_git_describe)
    set(XMC_CODE_VERSION "${PROJECT_VERSION}+${_xmc_git_describe}")
  endif()
endif()
configure_file("${PROJECT_SOURCE_DIR}/engine/core/version.h.in" "${PROJECT_BINARY_DIR}/generated/engine/core/version.h" @ONLY)
