#include "engine/core/file_size_limit.h"

#include <csignal>

namespace xmc {

void report_file_size_limit_as_write_errors() {
#ifdef SIGXFSZ
  std::signal(SIGXFSZ, SIG_IGN);
#endif
}

}  // namespace xmc
