#include "engine/core/progress.h"

namespace xmc {

SilentProgress& silent_progress() {
  static SilentProgress instance;
  return instance;
}

}  // namespace xmc
