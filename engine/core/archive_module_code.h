#pragma once
// The TorchScript code inside a LibTorch archive, checked before LibTorch compiles it (plain C++). An archive
// written by torch::serialize::OutputArchive (checkpoints, saved tensors) holds, per nested archive, a class
// of declarations only:
//
//   class Module(Module):
//     __parameters__ = ["weight", ]
//     __buffers__ = []
//     weight : Tensor
//     encoder : __torch__.___torch_mangle_2.Module
//     __annotations__ = []
//     __annotations__["0x5616d5878690"] = __torch__.___torch_mangle_11.Module   (a name no identifier can be)
//
// LibTorch compiles that code when it loads the archive, and some damage to it crashes LibTorch 1.13's
// importer outright (a misspelt `__buffers__` line: a segmentation fault, no exception). So every code entry
// must be exactly such declarations, every name its lists give declared as a tensor, every class it names
// defined, before the archive is handed to LibTorch.
#include <string>
#include <utility>
#include <vector>

namespace xmc {

/// `code`: (entry name, text) of every "<archive>/code/....py" entry. Throws InputError(file, "is damaged: its
/// module code <entry> line N: ...") at the first line that is not such a declaration, or a list naming what no
/// line declares, a class named but not defined.
void check_archive_module_code(const std::string& file, const std::vector<std::pair<std::string, std::string>>& code);

/// Whether `entry` is one of those code entries ("archive/code/__torch__/___torch_mangle_3.py").
bool is_archive_module_code(const std::string& entry);

}  // namespace xmc
