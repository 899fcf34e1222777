#pragma once
// Helpers for end-to-end tests: run a command, require a tool, make a temporary directory.

#include <chrono>
#include <functional>
#include <string>

namespace spotshift::testing {

struct CommandResult {
  int status = -1;     // exit status, or -1 when it did not exit normally
  std::string output;  // stdout and stderr together
};

// Runs cmd with /bin/sh, capturing stdout and stderr.
CommandResult run(const std::string& cmd);

// Whether a tool is on PATH.
bool tool_installed(const std::string& name);

// Fails the test loudly when a tool the test needs is not on PATH (Catch tests only:
// support/require_tool.cpp, in catch2_main; everything else here is in test_process).
void require_tool(const std::string& name);

// Single-quotes a string for the shell.
std::string shell_quote(const std::string& s);

// Polls until pred() holds or the timeout passes; returns the last pred() value.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout = std::chrono::seconds(20),
                std::chrono::milliseconds every = std::chrono::milliseconds(50));

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  void write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

}  // namespace spotshift::testing
