#pragma once
// Small helpers shared by the test suites: a temporary folder that cleans itself up, writing fixture
// files, and running the `xmc` binary.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <sys/wait.h>

namespace xmc::test {

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("xmc-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline std::filesystem::path write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  return path;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr together
  std::string last_line() const {
    auto end = output.find_last_not_of('\n');
    if (end == std::string::npos) return {};
    auto start = output.rfind('\n', end);
    return output.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
  }
};

/// Runs a shell command line and captures its output and exit code.
inline CommandResult run_command(const std::string& command_line, bool with_stderr = true) {
  CommandResult result;
  std::FILE* pipe = ::popen((command_line + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// Calls `ready()` every `interval` until it returns true (true) or `timeout` passes (false). An exception
/// counts as not ready: a store another process is writing can be caught half made.
template <typename Ready>
bool poll_until(Ready ready, std::chrono::milliseconds timeout, std::chrono::milliseconds interval) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    try {
      if (ready()) return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(interval);
  }
  return false;
}

}  // namespace xmc::test
