#pragma once
// Precompiled header of the torch-heavy engine target: parsing torch/torch.h costs ~25 s per file, so it is
// parsed once. Only engine/**/*.cpp (and torch tests) may see it; never include it from a public header.
#include <torch/torch.h>
