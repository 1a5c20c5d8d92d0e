#include "engine/session/local_workers.h"

#include <arpa/inet.h>
#include <csignal>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "engine/core/error.h"

namespace xmc {

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(std::string("distributed training: no socket for a local port: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw Error("distributed training: no free port on 127.0.0.1: " + why);
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::filesystem::path default_worker_binary() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "xmc";
  return self.parent_path() / "xmc";
}

LocalWorkers::LocalWorkers(const std::filesystem::path& binary, const DistributedOptions& options) {
  if (::access(binary.c_str(), X_OK) != 0)
    throw Error("distributed training: cannot start the worker processes: " + binary.string() + " is not an executable xmc");
  const std::string world = std::to_string(options.world_size);
  const std::string master = options.master_host + ":" + std::to_string(options.master_port);
  const std::string local = std::to_string(options.local_world_size);
  const std::string timeout = std::to_string(options.timeout_minutes);
  for (int rank = 1; rank < options.world_size; ++rank) {
    const std::string rank_text = std::to_string(rank);
    std::vector<std::string> args{binary.string(), "train",  "--rank",           rank_text, "--world-size", world,
                                  "--master",      master,   "--local-processes", local,    "--timeout-minutes", timeout};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      terminate();
      throw Error(std::string("distributed training: cannot start worker rank ") + rank_text + ": " + std::strerror(errno));
    }
    if (pid == 0) {
      // The worker: end with rank 0 (even when it is killed -9), and leave Ctrl-C to rank 0, which stops
      // every rank at the same step with a checkpoint.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(1);
      std::signal(SIGINT, SIG_IGN);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    workers_.push_back({.rank = rank, .pid = pid});
  }
}

LocalWorkers::~LocalWorkers() {
  terminate();
}

void LocalWorkers::reap(bool block) {
  for (auto& w : workers_) {
    if (w.ended) continue;
    int status = 0;
    const pid_t done = ::waitpid(w.pid, &status, block ? 0 : WNOHANG);
    if (done == w.pid || (done < 0 && errno == ECHILD)) {
      w.ended = true;
      w.status = done == w.pid ? status : 0;
      // A worker ended by a signal leaves its scratch folder (with a checkpoint copy) behind.
      std::error_code ignored;
      std::filesystem::remove_all(rank_scratch_directory(w.rank, static_cast<long>(w.pid)), ignored);
    }
  }
}

std::string LocalWorkers::failures(std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  std::string text;
  for (;;) {
    reap(false);
    text.clear();
    for (const auto& w : workers_) {
      if (!w.ended) continue;
      std::string how;
      if (WIFSIGNALED(w.status)) how = "was killed by signal " + std::to_string(WTERMSIG(w.status));
      else if (WIFEXITED(w.status) && WEXITSTATUS(w.status) == 127) how = "could not run the xmc binary";
      else if (WIFEXITED(w.status) && WEXITSTATUS(w.status) != 0) how = "exited with status " + std::to_string(WEXITSTATUS(w.status));
      if (!how.empty()) text += (text.empty() ? "" : "; ") + ("rank " + std::to_string(w.rank) + " (pid " + std::to_string(w.pid) + ") " + how);
    }
    if (!text.empty() || std::chrono::steady_clock::now() >= deadline) return text;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string LocalWorkers::wait_all() {
  reap(true);
  return failures();
}

void LocalWorkers::terminate() {
  reap(false);
  for (const auto& w : workers_)
    if (!w.ended) ::kill(w.pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    reap(false);
    bool running = false;
    for (const auto& w : workers_) running = running || !w.ended;
    if (!running) return;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const auto& w : workers_)
    if (!w.ended) ::kill(w.pid, SIGKILL);
  reap(true);
}

}  // namespace xmc
