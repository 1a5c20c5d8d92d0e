# Warnings for project targets only (never for third-party headers, which come in as SYSTEM).
function(xmc_enable_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wconversion -Wno-sign-conversion
                                           # designated initializers may leave defaulted members out
                                           -Wno-missing-field-initializers)
endfunction()
