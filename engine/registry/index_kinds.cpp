// The registered index kinds, from XMC_FOR_EACH_INDEX: each index's file defines NAME_index_kind().
#include "engine/index/index_kind.h"
#include "engine/registry/component_list.h"

namespace xmc {

#define XMC_DECLARE_INDEX_KIND(name) IndexKind name##_index_kind();
XMC_FOR_EACH_INDEX(XMC_DECLARE_INDEX_KIND)
#undef XMC_DECLARE_INDEX_KIND

const std::vector<IndexKind>& registered_index_kinds() {
#define XMC_INDEX_KIND(name) name##_index_kind(),
  static const std::vector<IndexKind> kinds{XMC_FOR_EACH_INDEX(XMC_INDEX_KIND)};
#undef XMC_INDEX_KIND
  return kinds;
}

}  // namespace xmc
