#pragma once
// Plain C++. A process that writes past its file-size limit (ulimit -f, RLIMIT_FSIZE: a quota a cluster or a
// container sets) is killed by SIGXFSZ in the middle of the write, without a word (`xmc train` exited 153 with
// the epoch's checkpoint half written). With the signal ignored the write fails with EFBIG instead, and the
// error names the file and the cause like any other failed write; the temporary file is removed and the last
// good checkpoint stays.

namespace xmc {

/// Idempotent; call first thing in a process that writes runs, checkpoints or exports.
void report_file_size_limit_as_write_errors();

}  // namespace xmc
