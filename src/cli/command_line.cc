#include "cli/command_line.h"

#include <cstdio>

#include "common/cli11_support.h"

namespace rdmastor::cli {

namespace {

// The help texts. Their Usage blocks (up to the first blank line) are also where a usage error
// takes the one relevant line from (UsageLines).
constexpr const char* kEnvironment = R"(Environment:
  MINIO_ROOT_USER       access key of the root user (default "minioadmin"; change it)
  MINIO_ROOT_PASSWORD   secret key of the root user, at least 8 characters (default "minioadmin")
  MINIO_ROOT_USER_FILE, MINIO_ROOT_PASSWORD_FILE  the same read from a file (Docker/systemd
                        secrets: a bare name is looked up in /run/secrets); the deprecated
                        MINIO_ACCESS_KEY / MINIO_SECRET_KEY are read too, with a warning
  MINIO_VOLUMES         drive directories, used when no DIR is given; URLs
                        (http://node{1...4}:9000/mnt/disk{1...4}) start a multi-node cluster
  MINIO_ADDRESS         listen address when --address is not given
  MINIO_PEER_WAIT       cluster start-up: how long to wait for the other nodes (default 120s)
  MINIO_DOMAIN          domain(s) for virtual-host-style requests (bucket.DOMAIN), comma separated
  MINIO_REGION          region reported to clients (default us-east-1); when set, CreateBucket
                        refuses any other LocationConstraint (unset: any is accepted)
  MINIO_PROMETHEUS_AUTH_TYPE  jwt (default: bearer token) or public, for /minio/v2/metrics/*
  RDMASTOR_LOG_LEVEL    trace|debug|info|warn|error (default info)
  RDMASTOR_LOG_FORMAT   text (default) or json (one JSON object per line)
  RDMASTOR_LOG_REQUESTS on: log one info line per request (default off)

See docs/settings.md for every setting.
)";

constexpr const char* kUsage = R"(rdmastor — S3-compatible object server with an RDMA data path

Usage:
  rdmastor server [--address HOST:PORT] [--certs-dir DIR] DIR...
  rdmastor admin prometheus-token [--json] [--expiry-days N]
  rdmastor admin info [--json] [--endpoint URL] [--certs-dir DIR]
  rdmastor admin heal [--json] [--endpoint URL] [--certs-dir DIR] [BUCKET]
  rdmastor admin user add|remove|list|info|enable|disable [--json] [--endpoint URL] ...
  rdmastor admin policy create|remove|list|info|attach|detach|set [--json] [--endpoint URL] ...
  rdmastor rdma check [--json] [--endpoint URL [--certs-dir DIR]]
  rdmastor rdma devices
  rdmastor --version
  rdmastor --help

Commands:
  server      serve S3 from the given drive directories (or MINIO_VOLUMES when none given)
  admin       operator helpers: prometheus-token prints a metrics bearer token; info shows the
              deployment; heal heals every object (or BUCKET's) on a running erasure-coded
              server; user and policy manage users and their policies (`rdmastor admin --help`)
  rdma        rdma check: is every layer an RDMA deployment needs ready? (exit 0 ready,
              1 a layer failed, e.g. no RDMA device); with --endpoint URL the server running
              there is asked and its answer decides (`rdmastor rdma --help`); rdma devices:
              what libibverbs returns for each device, port and GID, as JSON

`rdmastor COMMAND --help` shows a command's flags and arguments (`rdmastor server --help`: the
server's). Exit status 2 for a usage error or an invalid setting.

)";

constexpr const char* kAdminUsage = R"(Usage:
  rdmastor admin prometheus-token [--json] [--expiry-days N]
  rdmastor admin info [--json] [--endpoint URL] [--certs-dir DIR]
  rdmastor admin heal [--json] [--endpoint URL] [--certs-dir DIR] [BUCKET]
  rdmastor admin user add|remove|list|info|enable|disable [--json] [--endpoint URL] [--certs-dir DIR] [ACCESS_KEY [SECRET_KEY]]
      user add ACCESS_KEY [SECRET_KEY|-]
      user remove|info|enable|disable ACCESS_KEY
      user list
  rdmastor admin policy create|remove|list|info|attach|detach|set [--json] [--endpoint URL] [--certs-dir DIR] ...
      policy create NAME FILE          a custom policy from a JSON file (AWS policy language)
      policy remove NAME
      policy list                      every policy: readwrite, readonly, writeonly and custom
      policy info NAME                 the policy's document
      policy attach POLICY... --user AK    adds policies to a user
      policy detach POLICY... --user AK    removes policies from a user
      policy set POLICY... --user AK       replaces a user's policies

)";

constexpr const char* kInfoHelp = R"(  info: the deployment as the server sees it: version, uptime, each node with its drives (state,
  used and total space, erasure set), the erasure sets and the drives online.
)";

constexpr const char* kIamHelp = R"(  user, policy: manage the users of a running server (MinIO's `mc admin user` / `mc admin
  policy`); users and policies are stored on the drives and every node of a cluster sees them.
  The secret key may be given as "-" to read it from standard input. A disabled user's requests
  are refused (InvalidAccessKeyId) until it is enabled again. Signs with the root credentials as
  heal does. --json (every command that asks a server): one JSON object on standard output,
  {"status": "success", "command": ..., ...} or {"status": "error", ..., "error": ...}. Exit
  status 0 on success, 1 when the server refused, 2 on usage errors.
)";

constexpr const char* kHealHelp = R"(  heal: asks a running erasure-coded server (default endpoint http://127.0.0.1:9000; an
  https:// endpoint is verified against the system CA store plus DIR/CAs/*.crt|*.pem; without
  --certs-dir, the CAs of ~/.rdmastor/certs, MinIO's ~/.minio/certs and mc's ~/.mc/certs) to heal
  every object of BUCKET, or of every bucket: formats replaced drives, verifies every shard of
  every object and rewrites missing, stale and corrupt ones. Prints each object healed,
  progress every 2 s, and the counts at the end (scanned, healed, shards written, failed,
  incomplete) with the drives whose copies could not be rebuilt (offline or failing). Signs
  with the root credentials: MINIO_ROOT_USER/MINIO_ROOT_PASSWORD, else
  AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY. Exit status 0 when every object is sound, 1 when an
  object could not be healed, copies were left missing on an offline drive, or the heal failed,
  2 on usage errors.
)";

constexpr const char* kTokenHelp = R"(  prometheus-token: prints a bearer token for Prometheus to scrape
  /minio/v2/metrics/{cluster,node} when MINIO_PROMETHEUS_AUTH_TYPE is jwt (the default). The
  token is signed with MINIO_ROOT_PASSWORD for MINIO_ROOT_USER (read from the environment, as
  the server does) and expires after N days (default 36500, as `mc admin prometheus
  generate`). Use it in prometheus.yml as `bearer_token: <token>` (or `authorization:
  {credentials: <token>}`).
)";

constexpr const char* kRdmaUsage = R"(Usage:
  rdmastor rdma check [--json] [--endpoint URL [--certs-dir DIR]]
  rdmastor rdma devices

)";

constexpr const char* kCheckHelp = R"(  Walks the layers an RDMA deployment needs and prints each as ok / warning / failed with the
  fix: build flavour, devices and ports (state, link layer, MTU), GID table, locked-memory limit,
  the configured device/port/GID (MINIO_RDMA_DEVICE, MINIO_RDMA_PORT, MINIO_RDMA_GID_INDEX), GPU
  memory registration (nvidia_peermem or dma-buf), inter-node settings, and the fabric
  (MINIO_RDMA_FABRIC). Reads the same environment as the server (/etc/default/rdmastor).

  --endpoint URL asks the server running there which fabric it serves S3 over RDMA on now and
  whether it is ready (layer "server"; its answer decides the exit status, and the layers this
  host checks locally are then only warnings; GET /minio/admin/v3/rdma, signed with the root
  credentials MINIO_ROOT_USER / MINIO_ROOT_PASSWORD, else AWS_ACCESS_KEY_ID /
  AWS_SECRET_ACCESS_KEY, else the server's defaults minioadmin / minioadmin). An https://
  endpoint is verified against the system CA store plus DIR/CAs (default: the CAs of
  ~/.rdmastor/certs, ~/.minio/certs and ~/.mc/certs).

  Exit status: 0 ready (warnings allowed), 1 a layer failed, 2 usage or invalid settings.
)";

constexpr const char* kDevicesHelp = R"(  `rdma devices` prints, as JSON, what libibverbs returns for every device, port and GID in its
  own numbers (port state, link layer, MTU, GID type: the enums of <infiniband/verbs.h>), the
  facts `rdma check` judges; the unit tests keep such output from real devices as fixtures.
  Exit status 0, or 1 when libibverbs cannot list devices (the reason on stderr).
)";

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The words of `app`'s command below `rdmastor`: {"admin", "user", "add"}.
std::vector<std::string> PathOf(const CLI::App* app) {
  std::vector<std::string> path;
  for (; app && app->get_parent(); app = app->get_parent())
    path.insert(path.begin(), app->get_name());
  return path;
}

// The usage lines of `rdmastor <path>`: the lines of the Usage block (up to its first blank line)
// of the text that documents the command which name it, and for a user/policy subcommand only
// the indented lines of that subcommand ("user remove|info|enable|disable ACCESS_KEY" for
// `user info`). No path: the command lines of `rdmastor` itself.
std::string UsageLines(const std::vector<std::string>& path) {
  std::string_view text = kUsage;
  if (!path.empty() && path[0] == "admin" && path.size() > 1) text = kAdminUsage;
  if (!path.empty() && path[0] == "rdma" && path.size() > 1) text = kRdmaUsage;
  std::vector<std::string> command = path;
  std::string sub;
  if (command.size() == 3) {  // admin user add
    sub = command.back();
    command.pop_back();
  }
  const std::string top = "rdmastor" + (command.empty() ? "" : " " + Join(command));
  const std::string sub_prefix = command.size() == 2 ? command.back() + " " : std::string();
  std::string out;
  text = text.substr(text.find("Usage:\n") + 7);
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view l = text.substr(pos, end - pos);
    pos = end + 1;
    if (l.empty()) break;
    const auto first = l.find_first_not_of(' ');
    if (first == std::string_view::npos) continue;
    const std::string_view body = l.substr(first);
    bool wanted = first == 2 && (body == top || body.starts_with(top + " "));
    if (!wanted && first > 2 && !sub_prefix.empty() && body.starts_with(sub_prefix)) {
      // "user remove|info|enable|disable ACCESS_KEY": the alternatives of its second word.
      std::string_view names = body.substr(sub_prefix.size());
      names = names.substr(0, names.find(' '));
      wanted = sub.empty();
      for (size_t at = 0; !wanted && at <= names.size();) {
        const size_t bar = std::min(names.find('|', at), names.size());
        wanted = names.substr(at, bar - at) == sub;
        at = bar + 1;
      }
    }
    if (wanted) out += std::string(l) + "\n";
  }
  return "Usage:\n" + out;
}

void PrintUsageError(const std::vector<std::string>& path, std::string_view why) {
  const std::string name = "rdmastor" + (path.empty() ? "" : " " + Join(path));
  std::fprintf(stderr, "%s: %.*s\n%s(%s --help for more)\n", name.c_str(),
               static_cast<int>(why.size()), why.data(), UsageLines(path).c_str(), name.c_str());
}

// The flags every admin command that asks a server takes.
void AddClientFlags(CLI::App* app, ClientFlags& flags) {
  app->add_option("--endpoint", flags.endpoint, "the server (default http://127.0.0.1:9000)")
      ->type_name("URL");
  app->add_option("-S,--certs-dir", flags.certs_dir,
                  "https:// endpoints: trust DIR/CAs/*.crt|*.pem besides the system CA store")
      ->type_name("DIR");
  app->add_flag("--json", flags.json, "one JSON object on standard output");
}

// Every command and flag of `rdmastor`, bound to `out`.
struct Parser {
  CLI::App app{"", "rdmastor"};
  CommandLine out;
  bool version = false;
  std::vector<std::string> policies;  // read back as the positionals (Parse), like the others

  Parser() {
    app.formatter(std::make_shared<cli11::UsageFirstFormatter>(
        [](const CLI::App* a) { return UsageLines(PathOf(a)); }));
    // A flag given twice: the last one counts (MINIO_OPTS and a unit's own flags may repeat).
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    // One command per level: after it, a word that names another command (a bucket called
    // "info") is an argument, not a second command.
    app.require_subcommand(0, 1);
    app.add_flag("-v,--version", version, "print the version and the build's features");
    app.add_subcommand("help")->group("");
    app.add_subcommand("version")->group("");
    AddServer();
    AddAdmin();
    AddRdma();
  }

  void AddServer() {
    auto& f = out.server;
    auto* s = app.add_subcommand("server", "serve S3 from the drive directories DIR...");
    s->add_option("--address", f.address,
                  "listen address (default MINIO_ADDRESS, else \":9000\": all interfaces); "
                  "HOST:PORT, :PORT or [IPv6]:PORT")
        ->type_name("HOST:PORT");
    s->add_option("-S,--certs-dir", f.certs_dir,
                  "TLS: serve HTTPS only when DIR has public.crt and private.key (default "
                  "~/.rdmastor/certs, else MinIO's ~/.minio/certs when only that exists; the log "
                  "names the one used); a cluster then needs https:// URLs, and peers are "
                  "verified against the system CAs plus DIR/CAs/*.crt|*.pem")
        ->type_name("DIR");
    s->add_option("--console-address")
        ->description("MinIO's web console: accepted and ignored (rdmastor has no console)")
        ->type_name("ADDR");
    s->add_option("DIR", f.drives,
                  "drive directories (MinIO ellipses expand: /mnt/disk{1...8}), or "
                  "http://HOST:PORT/PATH URLs of a cluster; default MINIO_VOLUMES")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    s->footer(kEnvironment);
  }

  void AddAdmin() {
    auto& a = out.admin;
    auto* admin = app.add_subcommand("admin", "operator helpers");
    admin->require_subcommand(1);
    auto* token = admin->add_subcommand("prometheus-token", "a bearer token for Prometheus");
    token->add_flag("--json", a.client.json, "one JSON object on standard output");
    token->add_option("--expiry-days", a.expiry_days, "days until the token expires (1-36500)")
        ->type_name("N")
        ->check(CLI::Range(1L, 36500L));
    token->footer(kTokenHelp);
    auto* info = admin->add_subcommand("info", "the deployment: nodes, drives, erasure sets");
    AddClientFlags(info, a.client);
    info->footer(kInfoHelp);
    auto* heal = admin->add_subcommand("heal", "heal every object (or BUCKET's)");
    AddClientFlags(heal, a.client);
    heal->add_option("BUCKET", "only this bucket");
    heal->footer(kHealHelp);

    // An IAM command group (user, policy); it returns the adder of its subcommands, which take
    // the client flags and share the group's help.
    auto iam_group = [&](const char* group_name, const char* group_what) {
      auto* group = admin->add_subcommand(group_name, group_what);
      group->require_subcommand(1);
      group->footer(kIamHelp);
      return [&a, group](const char* name, const char* what) {
        auto* sub = group->add_subcommand(name, what);
        AddClientFlags(sub, a.client);
        sub->footer(kIamHelp);
        return sub;
      };
    };
    auto add_user_sub = iam_group("user", "manage users");
    auto* add = add_user_sub("add", "add a user (or set its secret key)");
    add->add_option("ACCESS_KEY")->required();
    add->add_option("SECRET_KEY", "the secret key; - or none: read from standard input");
    for (auto [name, what] : {std::pair{"remove", "remove a user"},
                              std::pair{"info", "a user's status and policies"},
                              std::pair{"enable", "enable a user"},
                              std::pair{"disable", "disable a user: its requests are refused"}})
      add_user_sub(name, what)->add_option("ACCESS_KEY")->required();
    add_user_sub("list", "every user with its status and policies");

    auto add_policy_sub = iam_group("policy", "manage policies and who has them");
    auto* create = add_policy_sub("create", "a custom policy from a JSON file");
    create->add_option("NAME")->required();
    create->add_option("FILE", "the policy document (AWS policy language)")->required();
    add_policy_sub("remove", "remove a custom policy")->add_option("NAME")->required();
    add_policy_sub("info", "a policy's document")->add_option("NAME")->required();
    add_policy_sub("list", "every policy: readwrite, readonly, writeonly and custom");
    for (auto [name, what] : {std::pair{"attach", "add policies to a user"},
                              std::pair{"detach", "remove policies from a user"},
                              std::pair{"set", "replace a user's policies"}}) {
      auto* sub = add_policy_sub(name, what);
      sub->add_option("POLICY", policies)->required()->multi_option_policy(
          CLI::MultiOptionPolicy::TakeAll);
      sub->add_option("--user", a.user, "the user's access key")->type_name("AK")->required();
    }
  }

  void AddRdma() {
    auto& r = out.rdma;
    auto* rdma = app.add_subcommand("rdma", "is every layer an RDMA deployment needs ready?");
    rdma->require_subcommand(1);
    auto* check = rdma->add_subcommand("check", "check every layer; exit 0 when ready");
    check->add_flag("--json", r.json, "one JSON document on standard output");
    check->add_option("--endpoint", r.endpoint,
                      "also ask the server running there (its answer decides)")
        ->type_name("URL");
    check->add_option("-S,--certs-dir", r.certs_dir,
                      "https:// endpoints: trust DIR/CAs/*.crt|*.pem besides the system CA store")
        ->type_name("DIR");
    check->footer(kCheckHelp);
    rdma->add_subcommand("devices", "libibverbs' devices, ports and GIDs as JSON")
        ->footer(kDevicesHelp);
  }

  // The words of the command line (argv[1..]); the result, or kExit after help or a usage error.
  CommandLine Parse(const std::vector<std::string>& args) {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
    try {
      app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
      return Help(cli11::Deepest(&app));
    } catch (const CLI::ParseError& e) {
      const CLI::App* at = cli11::Deepest(&app);
      PrintUsageError(PathOf(at), cli11::Explain(e, at));
      out.kind = CommandLine::Kind::kExit;
      out.exit_code = 2;
      return std::move(out);
    }
    const CLI::App* at = cli11::Deepest(&app);
    const auto path = PathOf(at);
    if (version || (!path.empty() && path[0] == "version")) {
      out.kind = CommandLine::Kind::kVersion;
    } else if (!path.empty() && path[0] == "help") {
      return Help(&app);
    } else if (path.empty()) {
      PrintUsageError({}, "which command? (none given)");
      out.exit_code = 2;
    } else if (path[0] == "server") {
      out.kind = CommandLine::Kind::kServer;
      NoteServerFlags();
    } else if (path[0] == "admin") {
      out.kind = CommandLine::Kind::kAdmin;
      out.admin.command = path.at(1);
      if (path.size() > 2) out.admin.sub = path[2];
      for (const CLI::Option* o : at->get_options())  // the positionals, in their order
        if (o->get_positional())
          for (const auto& v : o->results()) out.admin.args.push_back(v);
    } else {
      out.kind = CommandLine::Kind::kRdma;
      out.rdma.command = path.at(1);
    }
    return std::move(out);
  }

  void NoteServerFlags() {
    const CLI::App* s = app.get_subcommand("server");
    out.server.address_given = s->count("--address") > 0;
    out.server.certs_dir_given = s->count("--certs-dir") > 0;
    out.server.console_address = s->count("--console-address") > 0;
  }

  // `--help` of a command: the whole text of rdmastor, admin and rdma (their commands with what
  // each does); any other command's usage lines, arguments and flags (CLI11 lists them).
  CommandLine Help(const CLI::App* at) {
    const auto path = PathOf(at);
    std::string text;
    if (path.empty()) {
      text = std::string(kUsage) + kEnvironment;
    } else if (path == std::vector<std::string>{"admin"}) {
      text = std::string(kAdminUsage) + kInfoHelp + "\n" + kIamHelp + "\n" + kHealHelp + "\n" +
             kTokenHelp;
    } else if (path == std::vector<std::string>{"rdma"}) {
      text = std::string(kRdmaUsage) + kCheckHelp + "\n" + kDevicesHelp;
    } else {
      text = at->help();
    }
    std::fputs(text.c_str(), stdout);
    out.kind = CommandLine::Kind::kExit;
    out.exit_code = 0;
    return std::move(out);
  }
};

}  // namespace

CommandLine ParseCommandLine(const std::vector<std::string>& args) {
  Parser p;
  return p.Parse(args);
}

Result<ServerFlags> ParseServerFlags(const std::vector<std::string>& args) {
  Parser p;
  std::vector<std::string> words{"server"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<std::string> reversed(words.rbegin(), words.rend());
  try {
    p.app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return MakeError(ErrorCode::kInvalidArgument,
                     cli11::Explain(e, cli11::Deepest(&p.app)) + " (see rdmastor server --help)");
  }
  p.NoteServerFlags();
  return p.out.server;
}

int UsageError(std::string_view command, std::string_view why) {
  std::vector<std::string> path;
  for (size_t at = 0; at < command.size();) {
    const size_t space = std::min(command.find(' ', at), command.size());
    path.emplace_back(command.substr(at, space - at));
    at = space + 1;
  }
  PrintUsageError(path, why);
  return 2;
}

}  // namespace rdmastor::cli
