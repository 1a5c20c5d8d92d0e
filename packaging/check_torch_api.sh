#!/usr/bin/env bash
# Compiles, syntax only, every file of this build that includes torch against another LibTorch's headers
# (say the include folder of a CUDA LibTorch 2.x), with this build's own compile commands: API differences
# between LibTorch versions show up on a machine that has neither that LibTorch's libraries nor a GPU.
# NCCL=1 compiles the communicator a second time with its NCCL group and without Gloo, as a build against
# PyTorch's wheels does; CUDA_INCLUDE is the folder with cuda_runtime.h and nccl.h (default
# /usr/local/cuda/include; without CUDA's headers that variant fails for want of them, not of an API).
# EXTRA_INCLUDE is put before the LibTorch folders (headers that tree lacks). ONLY, a regular expression,
# keeps the files whose path it matches (say after changing a few).
# Prints each file that fails with its first errors; exits non-zero when any does.
# Usage: packaging/check_torch_api.sh LIBTORCH_INCLUDE_DIR [build_dir]
set -euo pipefail
unset CDPATH
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
include=${1:?usage: packaging/check_torch_api.sh LIBTORCH_INCLUDE_DIR [build_dir]}
build=${2:-$here/build}
include=$(cd "$include" && pwd)
version_header="$include/torch/csrc/api/include/torch/version.h"
[ -f "$version_header" ] || { echo "$include has no torch/csrc/api/include/torch/version.h" >&2; exit 1; }
[ -f "$build/compile_commands.json" ] || { echo "no $build/compile_commands.json: configure that build first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One small shell script per compilation, written by Python from the compile commands.
python3 - "$build/compile_commands.json" "$include" "$work" "${NCCL:-0}" "${CUDA_INCLUDE:-/usr/local/cuda/include}" "${EXTRA_INCLUDE:-}" "${ONLY:-}" <<'PY'
import json, re, shlex, sys
commands, include, work, nccl, cuda_include, extra, only = sys.argv[1:8]
torch_flag = re.compile(r'-isystem \S*/torch/csrc/api/include')
ours = (f'-isystem {extra} ' if extra else '') + f'-isystem {include} -isystem {include}/torch/csrc/api/include'
jobs = []
for entry in json.load(open(commands)):
    command = entry['command']
    if not torch_flag.search(command) or (only and not re.search(only, entry['file'])):
        continue
    # The precompiled header was made from the other LibTorch: each file parses its own includes.
    command = torch_flag.sub(lambda m: ours, command, count=1)
    command = re.sub(r'-include \S+cmake_pch\.hxx', '', command).replace('-Winvalid-pch', '')
    command = re.sub(r'-Xclang -include-pch -Xclang \S+', '', command)  # clang's form of the same
    command = re.sub(r'-o \S+', '-fsyntax-only', command).replace('-O3', '-O0')
    jobs.append((entry['directory'], command, entry['file']))
    if nccl == '1' and entry['file'].endswith('distributed/communicator.cpp'):
        jobs.append((entry['directory'], command.replace('-DXMC_HAVE_GLOO', '').replace(
            ' -c ', f' -DUSE_C10D_NCCL -DXMC_HAVE_NCCL -isystem {cuda_include} -c '), entry['file'] + ' (NCCL, no Gloo)'))
for n, (directory, command, name) in enumerate(jobs):
    with open(f'{work}/job{n}.sh', 'w') as job:
        job.write(f'cd {shlex.quote(directory)}\n'
                  f'if ! {command} >{work}/job{n}.log 2>&1; then\n'
                  f'  {{ echo "FAILED {name}"; grep -m 5 error {work}/job{n}.log | sed "s/^/    /"; }} >{work}/job{n}.failed\n'
                  f'fi\n')
PY

total=$(find "$work" -name 'job*.sh' | wc -l)
[ "$total" -gt 0 ] || { echo "no compile command of $build includes LibTorch through -isystem .../torch/csrc/api/include" >&2; exit 1; }
version=$(sed -n 's/^#define TORCH_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' "$version_header" | paste -sd.)
echo "checking $total compilations against LibTorch $version's headers ($include)"
find "$work" -name 'job*.sh' -print0 | xargs -0 -P "${XMC_JOBS:-2}" -n 1 bash
if compgen -G "$work/*.failed" >/dev/null; then
  cat "$work"/*.failed
  exit 1
fi
echo "all $total compile"
