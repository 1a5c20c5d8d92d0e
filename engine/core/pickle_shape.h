#pragma once
// The shape of a pickle inside a LibTorch archive (data.pkl, constants.pkl, the code's debug tables), checked
// before LibTorch unpickles it (plain C++). LibTorch 1.13's unpickler trusts its input: an opcode that pops more
// than the stack holds (REDUCE on an empty stack) crashes it. So the opcodes are run on an abstract stack first:
// only the opcodes LibTorch's pickler writes, every argument inside the bytes, every pop of something there,
// every memo read of something stored, and one value left at STOP, which ends the bytes.
#include <string>
#include <string_view>

namespace xmc {

/// Throws InputError(file, "is damaged: its pickle <entry> at byte N: ...") when `bytes` is not such a pickle.
void check_pickle_shape(const std::string& file, const std::string& entry, std::string_view bytes);

}  // namespace xmc
