#pragma once
// DEXML's registration (plain data, no torch).
#include <vector>

namespace xmc {

struct MethodInfo;
struct EpochMark;
class ComponentConfig;

/// DEXML's name, help and option groups (dexml.head; the held-out queries it shares with NGAME).
MethodInfo dexml_method_info();

/// The refreshes of the hard-negative shortlists (negatives = hard) of the dual-encoder training that DEXML and
/// NGAME's M1 share, within the first `epochs`.
std::vector<EpochMark> hard_negative_shortlist_marks(const ComponentConfig& config);

}  // namespace xmc
