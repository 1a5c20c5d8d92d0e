#pragma once
// What the CLI validates and the GUI shows of one configurable key. Plain data: no torch, no JSON.
#include <string>
#include <vector>

namespace xmc {

/// One configurable key.
struct ConfigKeyInfo {
  std::string key;                  ///< dotted key, e.g. "sampler.cluster_size"
  std::string type;                 ///< string | path | int | uint | float | int_list
  std::string default_value;        ///< as JSON text
  std::vector<std::string> choices; ///< allowed values for strings with a fixed set
  std::string description;          ///< one line for --help and tooltips
  std::string group;                ///< the component's option group ("Encoder", "NGAME", ...): --list-keys and the
                                    ///< launch form show keys by group, in registration order
  std::string applies_when;         ///< "" = always; else "key=value[|value...]" conditions joined by ';' (all must
                                    ///< hold): the key matters only for that choice of method, encoder, sampler,
                                    ///< negatives or loss ("encoder.type=bert", "negatives=hard;method=dexml|ngame")
  bool fixed_on_resume = false;     ///< shapes the model or the data: a resumed run cannot change it
  std::vector<std::string> former_keys;  ///< names it had before (older stores' configs, old scripts): still read, with a notice
};

/// One condition of ConfigKeyInfo::applies_when: `key` holds one of `values`.
struct KeyCondition {
  std::string key;
  std::vector<std::string> values;
};
std::vector<KeyCondition> key_conditions(const ConfigKeyInfo& info);

/// `a` and `b` joined as both must hold ("" holds always).
std::string both_conditions(const std::string& a, const std::string& b);

}  // namespace xmc
