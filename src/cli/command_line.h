// The `rdmastor` command line: every command, flag and usage text, parsed with CLI11 in one
// translation unit (command_line.cc; CLI11 costs seconds to compile per file that includes it).
// The commands themselves (main.cc, admin_command.cc, rdma_command.cc) take the parsed values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace rdmastor::cli {

// `rdmastor server [--address HOST:PORT] [--certs-dir DIR] [--console-address ADDR] DIR...`
struct ServerFlags {
  std::string address;  // "" when not given (MINIO_ADDRESS, else ":9000")
  bool address_given = false;
  std::string certs_dir;
  bool certs_dir_given = false;
  bool console_address = false;  // given: accepted and ignored, with a warning
  std::vector<std::string> drives;
};

// The flags of every admin command that asks a running server.
struct ClientFlags {
  std::string endpoint = "http://127.0.0.1:9000";
  std::string certs_dir;
  bool json = false;  // --json: one JSON object on stdout (mc's --json habit)
};

// `rdmastor admin <command> [<sub>] ...`
struct AdminArgs {
  std::string command;  // prometheus-token | info | heal | user | policy
  std::string sub;      // user: add|remove|list|info|enable|disable; policy: create|remove|...
  ClientFlags client;
  std::vector<std::string> args;  // the positionals: heal [BUCKET]; user add AK [SK]; ...
  std::string user;                // policy attach|detach|set --user AK
  long expiry_days = 36500;        // prometheus-token --expiry-days
};

// `rdmastor rdma check|devices ...`
struct RdmaArgs {
  std::string command;  // check | devices
  bool json = false;
  std::string endpoint, certs_dir;
};

struct CommandLine {
  enum class Kind { kExit, kVersion, kServer, kAdmin, kRdma };
  Kind kind = Kind::kExit;
  int exit_code = 0;  // kExit: the help was printed (0) or a usage error (2)
  ServerFlags server;
  AdminArgs admin;
  RdmaArgs rdma;
};

// Parses argv[1..]. Help (`--help` at any level: that command's help on stdout) and usage errors
// (why, and only the usage lines of the command that was wrong, on stderr) are printed here and
// answered as kExit.
CommandLine ParseCommandLine(const std::vector<std::string>& args);

// The words after `rdmastor server`; an error names the flag that was wrong.
Result<ServerFlags> ParseServerFlags(const std::vector<std::string>& args);

// A usage error found after parsing (e.g. no secret on stdin): prints `rdmastor <command>: why`
// and that command's usage lines to stderr; returns the exit status 2.
int UsageError(std::string_view command, std::string_view why);

}  // namespace rdmastor::cli
