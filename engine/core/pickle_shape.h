#pragma once
// The shape of a pickle inside a LibTorch archive (data.pkl, constants.pkl, the code's debug tables), checked
// before LibTorch unpickles it (plain C++). LibTorch 1.13's unpickler trusts its input: an opcode that pops more
// than the stack holds (REDUCE on an empty stack) crashes it, a memo id of 2^32 - 1 makes it allocate a table of
// that many values, and a storage record is read as `numel` elements whatever the size of the bytes behind it.
// So the opcodes are run on an abstract stack first: only the opcodes LibTorch's pickler writes, every argument
// inside the bytes, every pop of something there, memo ids in the order they are written and read only once
// stored, one value left at STOP, which ends the bytes; and every storage a persistent id names is reported, for
// the caller to hold against the entry that holds its bytes.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xmc {

/// A storage a pickle's persistent id names: ("storage", torch.<Type>Storage, key, location, numel).
struct PickledStorage {
  std::string key;          ///< its record's name in the folder named as the pickle: data.pkl's "3" is archive/data/3
  std::string type;         ///< "FloatStorage", "LongStorage", ...
  std::uint64_t numel = 0;  ///< elements
  /// Bytes an element of `type` takes (1 for a type this version does not know: a lower bound).
  std::uint64_t element_bytes() const;
};

/// Throws InputError(file, "is damaged: its pickle <entry> at byte N: ...") when `bytes` is not such a pickle;
/// returns the storages its persistent ids name.
std::vector<PickledStorage> check_pickle_shape(const std::string& file, const std::string& entry, std::string_view bytes);

}  // namespace xmc
